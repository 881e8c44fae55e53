//go:build !purego

#include "textflag.h"

// AVX-512 versions of CombineF32 and Combine2F32 (combine32.go): eight
// particles per vector, each row's eight float32 values converted to
// float64 (VCVTPS2PD, exact) and multiply-added in the order of the rows,
// the Go code's operations: the same bits.

// F32K1 = the active lanes of a chunk of min(n, 8) elements, n in CX
// (clobbers AX).
#define F32K1 \
	MOVQ $0xff, AX; \
	CMPQ CX, $8; \
	JGE 4(PC); \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K1

// func combineF32AVX512(y *float64, x *float32, off *int64, a *float64, nj, n int)
TEXT ·combineF32AVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ a+24(FP), R9
	MOVQ nj+32(FP), R10
	MOVQ n+40(FP), CX
	XORQ R12, R12 // the chunk's byte offset in a row of x; y's is twice it

f1_chunk:
	F32K1
	VMOVUPD.Z (DI)(R12*2), K1, Z0
	XORQ R11, R11 // j

f1_j:
	CMPQ R11, R10
	JGE f1_store
	MOVQ (R8)(R11*8), R13
	SHLQ $2, R13
	ADDQ SI, R13
	VCVTPS2PD.Z (R13)(R12*1), K1, Z2
	VFMADD231PD.BCST (R9)(R11*8), Z2, Z0
	INCQ R11
	JMP f1_j

f1_store:
	VMOVUPD Z0, K1, (DI)(R12*2)
	ADDQ $32, R12
	SUBQ $8, CX
	JG f1_chunk
	VZEROUPPER
	RET

// func combine2F32AVX512(y, z *float64, x *float32, off *int64, a, b *float64, nj, n int)
TEXT ·combine2F32AVX512(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ off+24(FP), R8
	MOVQ a+32(FP), R9
	MOVQ b+40(FP), R14
	MOVQ nj+48(FP), R10
	MOVQ n+56(FP), CX
	XORQ R12, R12

f2_chunk:
	F32K1
	VMOVUPD.Z (DI)(R12*2), K1, Z0
	VMOVUPD.Z (DX)(R12*2), K1, Z1
	XORQ R11, R11

f2_j:
	CMPQ R11, R10
	JGE f2_store
	MOVQ (R8)(R11*8), R13
	SHLQ $2, R13
	ADDQ SI, R13
	VCVTPS2PD.Z (R13)(R12*1), K1, Z2
	VFMADD231PD.BCST (R9)(R11*8), Z2, Z0
	VFMADD231PD.BCST (R14)(R11*8), Z2, Z1
	INCQ R11
	JMP f2_j

f2_store:
	VMOVUPD Z0, K1, (DI)(R12*2)
	VMOVUPD Z1, K1, (DX)(R12*2)
	ADDQ $32, R12
	SUBQ $8, CX
	JG f2_chunk
	VZEROUPPER
	RET
