#include "textflag.h"
#include "kernel_keys_amd64.h"

// The row kernel (kernel_row.go) for amd64: the walks of twelve trees of a group, one
// step each a level, and the keys of one row with AVX-512.
//
// A walk's register holds r, its node's breadth-first number in its tree (root 1,
// children 2r and 2r+1); tree k of a group of depth D starts k strides (12*2^D bytes)
// after the group's start, so each walk's stride is a constant displacement of a code
// path written out for each depth. Node r's word is at byte 8r of its tree, leaf r's
// value at byte 4*2^D + 4r (after the 2^D words of the nodes). A word's low half is
// 2^32 - threshold, its high half the key's byte offset: adding the low half to the
// key carries exactly when key >= threshold, and ADC folds the carry into the child:
// r = 2r + (key >= threshold).

// STEP takes tree k's walk in r one level down, d = k strides.
#define STEP(r, d) \
	MOVL (d+4)(DI)(r*8), AX; \
	MOVL (SI)(AX*1), AX; \
	ADDL (d)(DI)(r*8), AX; \
	ADCQ r, r

// LEVEL takes the twelve walks of a group of stride s one level down.
#define LEVEL(s) \
	STEP(R8, 0); \
	STEP(R9, 1*s); \
	STEP(R10, 2*s); \
	STEP(R11, 3*s); \
	STEP(R12, 4*s); \
	STEP(R13, 5*s); \
	STEP(R14, 6*s); \
	STEP(R15, 7*s); \
	STEP(BX, 8*s); \
	STEP(CX, 9*s); \
	STEP(DX, 10*s); \
	STEP(BP, 11*s)

// LEAVES adds the twelve trees' leaf values to X0 in tree order; l is the leaves'
// offset, 4*2^D.
#define LEAVES(s, l) \
	ADDSS (0*s+l)(DI)(R8*4), X0; \
	ADDSS (1*s+l)(DI)(R9*4), X0; \
	ADDSS (2*s+l)(DI)(R10*4), X0; \
	ADDSS (3*s+l)(DI)(R11*4), X0; \
	ADDSS (4*s+l)(DI)(R12*4), X0; \
	ADDSS (5*s+l)(DI)(R13*4), X0; \
	ADDSS (6*s+l)(DI)(R14*4), X0; \
	ADDSS (7*s+l)(DI)(R15*4), X0; \
	ADDSS (8*s+l)(DI)(BX*4), X0; \
	ADDSS (9*s+l)(DI)(CX*4), X0; \
	ADDSS (10*s+l)(DI)(DX*4), X0; \
	ADDSS (11*s+l)(DI)(BP*4), X0

// func rowSum(words *uint32, groups *rowGroup, ngroups int, keys *uint32, acc float32) float32
//
// Adds to acc the leaf values of every tree of ngroups groups, in tree order.
TEXT ·rowSum(SB), NOSPLIT, $8-44
	// Twelve walks take every general register but AX, SI and DI (BP too: the frame
	// saves it); the groups' cursor and end stay in the argument slots.
	MOVQ  groups+8(FP), DX
	MOVQ  ngroups+16(FP), CX
	MOVQ  keys+24(FP), SI
	MOVSS acc+32(FP), X0
	SHLQ  $3, CX // 8 bytes a group
	ADDQ  DX, CX
	MOVQ  CX, ngroups+16(FP) // from here: the end of the groups
	CMPQ  DX, CX
	JEQ   done

group:
	MOVQ  groups+8(FP), DX
	MOVL  0(DX), DI // the group's first word
	SHLQ  $2, DI
	ADDQ  words+0(FP), DI
	MOVL  4(DX), AX // depth
	MOVQ  $1, R8
	MOVQ  $1, R9
	MOVQ  $1, R10
	MOVQ  $1, R11
	MOVQ  $1, R12
	MOVQ  $1, R13
	MOVQ  $1, R14
	MOVQ  $1, R15
	MOVQ  $1, BX
	MOVQ  $1, CX
	MOVQ  $1, DX
	MOVQ  $1, BP
	CMPL  AX, $0
	JEQ   depth0
	CMPL  AX, $1
	JEQ   depth1
	CMPL  AX, $2
	JEQ   depth2
	CMPL  AX, $3
	JEQ   depth3
	CMPL  AX, $4
	JEQ   depth4
	CMPL  AX, $5
	JEQ   depth5
	CMPL  AX, $6
	JEQ   depth6
	CMPL  AX, $7
	JEQ   depth7
	CMPL  AX, $8
	JEQ   depth8
	JMP   next // buildRow allows no deeper group

depth8:
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEVEL(3072)
	LEAVES(3072, 1024)
	JMP   next

depth7:
	LEVEL(1536)
	LEVEL(1536)
	LEVEL(1536)
	LEVEL(1536)
	LEVEL(1536)
	LEVEL(1536)
	LEVEL(1536)
	LEAVES(1536, 512)
	JMP   next

depth6:
	LEVEL(768)
	LEVEL(768)
	LEVEL(768)
	LEVEL(768)
	LEVEL(768)
	LEVEL(768)
	LEAVES(768, 256)
	JMP   next

depth5:
	LEVEL(384)
	LEVEL(384)
	LEVEL(384)
	LEVEL(384)
	LEVEL(384)
	LEAVES(384, 128)
	JMP   next

depth4:
	LEVEL(192)
	LEVEL(192)
	LEVEL(192)
	LEVEL(192)
	LEAVES(192, 64)
	JMP   next

depth3:
	LEVEL(96)
	LEVEL(96)
	LEVEL(96)
	LEAVES(96, 32)
	JMP   next

depth2:
	LEVEL(48)
	LEVEL(48)
	LEAVES(48, 16)
	JMP   next

depth1:
	LEVEL(24)
	LEAVES(24, 8)
	JMP   next

depth0:
	LEAVES(12, 4)
	JMP   next

next:
	MOVQ  groups+8(FP), DX
	ADDQ  $8, DX
	MOVQ  DX, groups+8(FP)
	CMPQ  DX, ngroups+16(FP)
	JNE   group

done:
	MOVSS X0, ret+40(FP)
	RET

// func rowKeys1(row *float32, nf int, keys *uint32)
//
// Writes the keys of one row for one lane (rowKeys with n = 1): keys[f] with missing
// values 0, keys[nf+f] with missing values 0xFFFFFFFF; sixteen values a step, the
// last step masked.
TEXT ·rowKeys1(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), SI
	MOVQ nf+8(FP), CX
	MOVQ keys+16(FP), DI
	LEAQ (DI)(CX*4), DX // the second copy
	KEY_CONSTANTS

chunk:
	TESTQ CX, CX
	JEQ   keysdone
	MOVL  $0xffff, AX
	CMPQ  CX, $16
	JAE   full
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
full:
	KMOVW AX, K1
	VMOVDQU32.Z (SI), K1, Z10
	KEYS16
	VMOVDQU32 Z14, K1, (DI)
	VMOVDQU32 Z15, K1, (DX)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $16, CX
	JG   chunk

keysdone:
	VZEROUPPER
	RET
