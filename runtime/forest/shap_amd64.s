#include "textflag.h"

// The leaf loop of path TreeSHAP (shap.go, addScaledLeaves) with AVX-512F, one leaf of
// at most eight path features at a time, lane j for the leaf's feature j:
//
//	phi[feats[j]] += coef[2j + (u>>j & 1)] * H[u &^ (1<<j)]
//
// H's entries by a gather, the coefficient picked from the leaf's pairs by a permute.
// Leaves with the same features follow each other; their products are added up in Z9,
// then to phi's entries by a gather and a scatter. A leaf's features are distinct, so
// lanes never collide; every operation is the Go loop's, in its order, so phi is the
// same to the bit.

// Lane j: 1<<j, a dword.
DATA shapBit<>+0(SB)/4, $1
DATA shapBit<>+4(SB)/4, $2
DATA shapBit<>+8(SB)/4, $4
DATA shapBit<>+12(SB)/4, $8
DATA shapBit<>+16(SB)/4, $16
DATA shapBit<>+20(SB)/4, $32
DATA shapBit<>+24(SB)/4, $64
DATA shapBit<>+28(SB)/4, $128
GLOBL shapBit<>(SB), RODATA|NOPTR, $32

// Lane j: j, a qword.
DATA shapLane<>+0(SB)/8, $0
DATA shapLane<>+8(SB)/8, $1
DATA shapLane<>+16(SB)/8, $2
DATA shapLane<>+24(SB)/8, $3
DATA shapLane<>+32(SB)/8, $4
DATA shapLane<>+40(SB)/8, $5
DATA shapLane<>+48(SB)/8, $6
DATA shapLane<>+56(SB)/8, $7
GLOBL shapLane<>(SB), RODATA|NOPTR, $64

// func shapLeaves8(phi *float64, leaves *pathLeaf, nleaves int, cold *uint32, table *float32, coef *float64, feats *int32)
TEXT ·shapLeaves8(SB), NOSPLIT, $0-56
	MOVQ phi+0(FP), DI
	MOVQ leaves+8(FP), SI
	MOVQ nleaves+16(FP), CX
	MOVQ cold+24(FP), R8
	MOVQ table+32(FP), R9
	MOVQ coef+40(FP), R10
	MOVQ feats+48(FP), R11
	TESTQ CX, CX
	JLE done
	VPXORD Z20, Z20, Z20
	VMOVDQU32 shapBit<>(SB), Y20        // 1<<j per dword lane, 0 above lane 7
	VMOVDQU64 shapLane<>(SB), Z21       // j per qword lane
	MOVQ $1, AX
	VPBROADCASTQ AX, Z23
	VPADDQ Z21, Z21, Z22                // 2j
	VPXORD Z9, Z9, Z9

leaf:
	// pathLeaf: v +0, node +8, n +12, off +16, tab +20, feat +24; 32 bytes.
	MOVL 12(SI), AX
	MOVL $-1, DX
	BZHIL AX, DX, DX                    // (1<<n) - 1: the leaf's lanes
	MOVL 8(SI), BX
	MOVL (R8)(BX*4), BX                 // the features the row leaves
	ANDNL DX, BX, BX                    // u
	KMOVW DX, K1

	// H[u &^ (1<<j)], float32 to float64.
	VPBROADCASTD BX, Z1
	VPANDND Z1, Z20, Z2
	MOVL 20(SI), R12
	LEAQ (R9)(R12*4), R12
	KMOVW K1, K2
	VPXORD Z3, Z3, Z3
	VGATHERDPS (R12)(Z2*4), K2, Z3
	VCVTPS2PD Y3, Z3

	// coef[2j + (u>>j & 1)] from the leaf's 2n coefficients, in two masked halves.
	ADDL AX, AX
	MOVL $-1, R13
	BZHIL AX, R13, R13
	KMOVW R13, K3
	SHRL $8, R13
	KMOVW R13, K4
	MOVL 16(SI), R12                    // off
	MOVQ R12, R14
	SHLQ $4, R14
	ADDQ R10, R14
	VMOVUPD.Z (R14), K3, Z4
	VMOVUPD.Z 64(R14), K4, Z5
	VPBROADCASTQ BX, Z6
	VPSRLVQ Z21, Z6, Z6
	VPANDQ Z23, Z6, Z6
	VPORQ Z22, Z6, Z6
	VPERMI2PD Z5, Z4, Z6
	VMULPD Z3, Z6, Z6

	VADDPD Z6, Z9, Z9

	// The next leaf has the same features: keep adding.
	MOVL 24(SI), R12
	ADDQ $32, SI
	DECQ CX
	JZ flush
	CMPL 24(SI), R12
	JEQ leaf

flush:
	// phi[feats[j]] += the sum.
	VMOVDQU32.Z (R11)(R12*4), K1, Z7
	KMOVW K1, K2
	VGATHERDPD (DI)(Y7*8), K2, Z8
	VADDPD Z9, Z8, Z8
	KMOVW K1, K2
	VSCATTERDPD Z8, K2, (DI)(Y7*8)
	VPXORD Z9, Z9, Z9
	TESTQ CX, CX
	JNZ leaf
	VZEROUPPER

done:
	RET
