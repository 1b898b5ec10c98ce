#include "textflag.h"
#include "kernel_keys_amd64.h"

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

// ROOT takes level 0 (at R14) for the vector of rows with keys at kp. Every lane is
// at node 0, so the lanes' keys of its feature are the 16 consecutive keys at the
// node's offset (AX, loaded by the caller): one load instead of a gather, and a
// broadcast threshold. k, the lanes that went right, is j after the level and is kept
// for LEVEL1; j itself is not formed.
#define ROOT(key, k, kp) \
	VMOVDQU32 (kp)(AX*4), key; \
	VPCMPUD.BCST $5, 128(R14), key, k

// LEVEL1 takes level 1 (at R14) for the vector of rows whose level-0 directions are in
// k: with two nodes, the lanes' keys are node 0's keys (offset AX) overwritten in the
// lanes of k by node 1's (offset R13), and likewise the thresholds; two loads and two
// broadcasts instead of a gather and two permutes. j = 2*k + (key >= thr).
#define LEVEL1(j, key, thr, k, kp) \
	VMOVDQU32 (kp)(AX*4), key; \
	VMOVDQU32 (kp)(R13*4), k, key; \
	VPBROADCASTD 128(R14), thr; \
	VPBROADCASTD 132(R14), k, thr; \
	VPXORD j, j, j; \
	VMOVDQA32 Z28, k, j; \
	VPCMPUD $5, thr, key, k; \
	VPADDD Z30, j, k, j

// LEVEL2 takes level 2 (at R14) with four loads instead of a gather: node n's keys
// for all the vectors' lanes are loaded at once (offset in AX, loaded by LEVEL2), node
// 1's over node 0's in the lanes with j odd (K1..K4), node 3's over node 2's likewise,
// then the second pair over the first where j >= 2 (K5). The thresholds come from one
// permute of the level's first 16.
#define LEVEL2 \
	VPTESTMD Z30, Z0, K1; \
	VPTESTMD Z30, Z1, K2; \
	VPTESTMD Z30, Z2, K3; \
	VPTESTMD Z30, Z3, K4; \
	MOVL 0(R14), AX; \
	VMOVDQU32 (R8)(AX*4), Z16; \
	VMOVDQU32 (R9)(AX*4), Z17; \
	VMOVDQU32 (R10)(AX*4), Z18; \
	VMOVDQU32 (R11)(AX*4), Z19; \
	MOVL 4(R14), AX; \
	VMOVDQU32 (R8)(AX*4), K1, Z16; \
	VMOVDQU32 (R9)(AX*4), K2, Z17; \
	VMOVDQU32 (R10)(AX*4), K3, Z18; \
	VMOVDQU32 (R11)(AX*4), K4, Z19; \
	MOVL 8(R14), AX; \
	VMOVDQU32 (R8)(AX*4), Z24; \
	VMOVDQU32 (R9)(AX*4), Z25; \
	VMOVDQU32 (R10)(AX*4), Z26; \
	VMOVDQU32 (R11)(AX*4), Z27; \
	MOVL 12(R14), AX; \
	VMOVDQU32 (R8)(AX*4), K1, Z24; \
	VMOVDQU32 (R9)(AX*4), K2, Z25; \
	VMOVDQU32 (R10)(AX*4), K3, Z26; \
	VMOVDQU32 (R11)(AX*4), K4, Z27; \
	VMOVDQU32 128(R14), Z10; \
	PAIR(Z0, Z16, Z24, Z20, K1); \
	PAIR(Z1, Z17, Z25, Z21, K2); \
	PAIR(Z2, Z18, Z26, Z22, K3); \
	PAIR(Z3, Z19, Z27, Z23, K4)

// PAIR finishes LEVEL2 for one vector: key = the second pair's keys where j >= 2,
// thr = the lanes' thresholds, j = 2j + (key >= thr).
#define PAIR(j, key, hi, thr, k) \
	VPTESTMD Z28, j, K5; \
	VMOVDQA32 hi, K5, key; \
	VPERMD Z10, j, thr; \
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
	MOVL $2, AX
	VPBROADCASTD AX, Z28
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

	// Levels 0 and 1 without gathers (see ROOT and LEVEL1); a tree of depth 1 has
	// only level 0, its j the mask of the lanes that went right.
	MOVL 0(R14), AX
	ROOT(Z16, K1, R8)
	ROOT(Z17, K2, R9)
	ROOT(Z18, K3, R10)
	ROOT(Z19, K4, R11)
	ADDQ $256, R14
	CMPQ R14, BX
	JNE level1
	VMOVDQA32 Z30, K1, Z0
	VMOVDQA32 Z30, K2, Z1
	VMOVDQA32 Z30, K3, Z2
	VMOVDQA32 Z30, K4, Z3
	JMP leaf

level1:
	MOVL 0(R14), AX
	MOVL 4(R14), R13
	LEVEL1(Z0, Z16, Z20, K1, R8)
	LEVEL1(Z1, Z17, Z21, K2, R9)
	LEVEL1(Z2, Z18, Z22, K3, R10)
	LEVEL1(Z3, Z19, Z23, K4, R11)
	ADDQ $256, R14
	CMPQ R14, BX
	JEQ leaf

	LEVEL2
	ADDQ $256, R14
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

// func wideKeys(rows *float32, nrows int, nf int, keys *uint32, keyStride int)
//
// Writes the keys (kernel.go's rowKeys) of a block of nrows rows, 1 to 64, into the
// keys of four vectors (at keys + v*keyStride): row v*16+lane in lane lane, lanes past
// the last row a copy of the last row (walked, not read). rowKeys stores one key at a
// time, 16 lanes apart; here a gather reads a feature of 16 rows (nf apart) and the
// keys of both copies are formed and stored 16 at a time, the row-to-lane transpose
// costing 4*nf gathers a block against the walks' thousands.
TEXT ·wideKeys(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), SI
	MOVQ nrows+8(FP), AX
	MOVQ nf+16(FP), CX
	MOVQ keys+24(FP), DI
	MOVQ keyStride+32(FP), DX
	DECQ AX
	VPBROADCASTD AX, Z1    // the last row
	VPBROADCASTD CX, Z2    // nf
	KEY_CONSTANTS
	VMOVDQU32 iota16<>(SB), Z7
	MOVL $16, AX
	VPBROADCASTD AX, Z8
	MOVQ CX, R9
	SHLQ $6, R9            // nf*16 keys: the second copy's offset in bytes
	MOVQ $4, R10
	TESTQ CX, CX
	JEQ keysdone

keysvec:
	VPMINUD Z1, Z7, Z9
	VPMULLD Z2, Z9, Z9     // each lane's row's first value, in values from rows
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ CX, BX

keysfeat:
	KXNORW K0, K0, K1
	VPXORD Z10, Z10, Z10
	VPGATHERDD (R11)(Z9*4), K1, Z10
	KEYS16
	VMOVDQU32 Z14, (R12)
	VMOVDQU32 Z15, (R12)(R9*1)
	ADDQ $4, R11
	ADDQ $64, R12
	DECQ BX
	JNE keysfeat

	VPADDD Z8, Z7, Z7
	ADDQ DX, DI
	DECQ R10
	JNE keysvec

keysdone:
	VZEROUPPER
	RET
