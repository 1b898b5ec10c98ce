#include "textflag.h"

// iota16 is the lane numbers 0..15: added to a node's feature offset, they address
// each lane's own row in a vector's keys.
DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// STEP takes one level down the tree at R14 for the vector of rows with positions j
// and keys at kp: f and thr are the feature offsets and thresholds of the lanes' nodes
// (VPERMI2D over the level's two 16-entry halves: low in Z9 and Z10, high in memory),
// key the lanes' keys; j = 2j + (key >= thr).
#define STEP(j, f, key, thr, k, kp) \
	VMOVDQA32 j, f; \
	VPERMI2D 64(R14), Z9, f; \
	VPADDD Z31, f, f; \
	KXNORW K0, K0, k; \
	VPXORD key, key, key; \
	VPGATHERDD (kp)(f*4), k, key; \
	VMOVDQA32 j, thr; \
	VPERMI2D 192(R14), Z10, thr; \
	VPCMPUD $5, thr, key, k; \
	VPADDD j, j, j; \
	VPADDD Z30, j, k, j

// LEAF adds the leaf values at positions j (leaves 0..15 in Z9, 32..47 in Z10, the
// rest in memory at R14) to the margins at acc.
#define LEAF(j, a, b, k, acc) \
	VMOVDQA32 j, a; \
	VPERMI2PS 64(R14), Z9, a; \
	VMOVDQA32 j, b; \
	VPERMI2PS 192(R14), Z10, b; \
	VPTESTMD Z29, j, k; \
	VMOVUPS b, k, a; \
	VADDPS acc, a, a; \
	VMOVUPS a, acc

// func wideWalk(tables *uint32, trees *wideTree, ntrees int, keys *uint32, keyStride int, acc *float32)
//
// Walks each tree for four vectors of 16 rows in lockstep (keys at keys + v*keyStride),
// adding each row's leaf value to acc[group][v][lane]. j, the node's position in its
// level, starts at 0. A gather waits some 25 cycles for its keys; four independent
// walks keep the gather unit busy meanwhile, which the core's reordering alone did not.
TEXT ·wideWalk(SB), NOSPLIT, $0-48
	MOVQ tables+0(FP), DI
	MOVQ trees+8(FP), SI
	MOVQ ntrees+16(FP), CX
	MOVQ keys+24(FP), R8
	MOVQ keyStride+32(FP), AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ acc+40(FP), R12
	VMOVDQU32 iota16<>(SB), Z31
	MOVL $1, AX
	VPBROADCASTD AX, Z30
	MOVL $32, AX
	VPBROADCASTD AX, Z29
	TESTQ CX, CX
	JEQ done

tree:
	MOVL 0(SI), AX
	LEAQ (DI)(AX*4), R14   // the tree's first level
	MOVL 4(SI), BX
	SHLQ $8, BX
	ADDQ R14, BX           // its leaves: depth levels of 256 bytes on
	MOVL 8(SI), DX
	SHLQ $8, DX            // group * 4 vectors * 16 lanes * 4 bytes
	ADDQ R12, DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	CMPQ R14, BX
	JEQ leaf

level:
	VMOVDQU32 0(R14), Z9
	VMOVDQU32 128(R14), Z10
	STEP(Z0, Z4, Z16, Z20, K1, R8)
	STEP(Z1, Z5, Z17, Z21, K2, R9)
	STEP(Z2, Z6, Z18, Z22, K3, R10)
	STEP(Z3, Z7, Z19, Z23, K4, R11)
	ADDQ $256, R14
	CMPQ R14, BX
	JNE level

leaf:
	VMOVUPS 0(R14), Z9
	VMOVUPS 128(R14), Z10
	LEAF(Z0, Z4, Z20, K1, 0(DX))
	LEAF(Z1, Z5, Z21, K2, 64(DX))
	LEAF(Z2, Z6, Z22, K3, 128(DX))
	LEAF(Z3, Z7, Z23, K4, 192(DX))
	ADDQ $16, SI
	DECQ CX
	JNE tree

done:
	VZEROUPPER
	RET
