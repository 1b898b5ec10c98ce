// Keys of sixteen values at once (kernel.go's rowKeys), for the AVX-512 kernels.

// KEY_CONSTANTS loads what KEYS16 reads: Z3 1<<31, Z4 0x7fffffff, Z5 +Inf's bits (larger
// magnitudes are NaN), Z6 all ones. Clobbers AX.
#define KEY_CONSTANTS \
	MOVL $0x80000000, AX; \
	VPBROADCASTD AX, Z3; \
	MOVL $0x7fffffff, AX; \
	VPBROADCASTD AX, Z4; \
	MOVL $0x7f800000, AX; \
	VPBROADCASTD AX, Z5; \
	VPTERNLOGD $0xff, Z6, Z6, Z6

// KEYS16 turns the sixteen float32 values in Z10 into their keys: Z14 the first copy (a
// missing value 0), Z15 the second (a missing value 0xFFFFFFFF). bitsKey is
// (b ^ (neg | 1<<31)) - neg, neg the sign spread over the word. Clobbers Z11-Z13, K2.
#define KEYS16 \
	VPSRAD $31, Z10, Z11; \
	VPORD Z3, Z11, Z12; \
	VPXORD Z10, Z12, Z12; \
	VPSUBD Z11, Z12, Z12; \
	VPANDD Z4, Z10, Z13; \
	VPCMPUD $2, Z5, Z13, K2; \
	VMOVDQA32.Z Z12, K2, Z14; \
	VMOVDQA32 Z6, Z15; \
	VMOVDQA32 Z12, K2, Z15
