//go:build !purego

#include "textflag.h"

// AVX-512 and AVX2 versions of axpy2 (share.go): each element's fused
// multiply-adds, the Go code's operations, so the same bits.

// AXK1 = the active lanes of a block of min(n, 8) elements, n in CX
// (clobbers AX).
#define AXK1 \
	MOVQ $0xff, AX; \
	CMPQ CX, $8; \
	JGE 4(PC); \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K1

// func axpy2AVX512(y, z, x *float64, n int, a, b float64)
TEXT ·axpy2AVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSD a+32(FP), Z14
	VBROADCASTSD b+40(FP), Z15

ax2_loop:
	AXK1
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD.Z (DI), K1, Z1
	VMOVUPD.Z (DX), K1, Z2
	VFMADD231PD Z0, Z14, Z1
	VFMADD231PD Z0, Z15, Z2
	VMOVUPD Z1, K1, (DI)
	VMOVUPD Z2, K1, (DX)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $8, CX
	JG ax2_loop
	VZEROUPPER
	RET

// func axpyAVX512(y, x *float64, n int, a float64)
TEXT ·axpyAVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Z14

ax1_loop:
	AXK1
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD.Z (DI), K1, Z1
	VFMADD231PD Z0, Z14, Z1
	VMOVUPD Z1, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JG ax1_loop
	VZEROUPPER
	RET

// func axpy2AVX2(y, z, x *float64, n int, a, b float64), n a multiple of 4
TEXT ·axpy2AVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSD a+32(FP), Y14
	VBROADCASTSD b+40(FP), Y15

ax2v_loop:
	VMOVUPD (SI), Y0
	VMOVUPD (DI), Y1
	VMOVUPD (DX), Y2
	VFMADD231PD Y0, Y14, Y1
	VFMADD231PD Y0, Y15, Y2
	VMOVUPD Y1, (DI)
	VMOVUPD Y2, (DX)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $4, CX
	JG ax2v_loop
	VZEROUPPER
	RET

// func axpyAVX2(y, x *float64, n int, a float64), n a multiple of 4
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Y14

ax1v_loop:
	VMOVUPD (SI), Y0
	VMOVUPD (DI), Y1
	VFMADD231PD Y0, Y14, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JG ax1v_loop
	VZEROUPPER
	RET

// func combineAVX512(y, x *float64, off *int64, a *float64, nj, n int)
// y[i] = fma(a[nj-1], x[off[nj-1]+i], ... fma(a[0], x[off[0]+i], y[i])) for
// i < n, 32 at a time (four independent chains, so that the additions'
// latency overlaps: a dense block's factorisation, whose targets are long
// rows, at N = 10^6), then eight at a time.
TEXT ·combineAVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ a+24(FP), R9
	MOVQ nj+32(FP), R10
	MOVQ n+40(FP), CX
	XORQ R12, R12 // byte offset of the chunk

	// Four vectors of y at a time while 32 or more elements are left:
	// four chains of fused multiply-adds side by side, each element's in
	// the order of the rows, as below.
c4_chunk:
	CMPQ CX, $32
	JLT c1_chunk
	VMOVUPD (DI)(R12*1), Z0
	VMOVUPD 64(DI)(R12*1), Z1
	VMOVUPD 128(DI)(R12*1), Z3
	VMOVUPD 192(DI)(R12*1), Z4
	XORQ R11, R11 // j

c4_j:
	CMPQ R11, R10
	JGE c4_store
	MOVQ (R8)(R11*8), R13
	SHLQ $3, R13
	ADDQ SI, R13
	ADDQ R12, R13
	VBROADCASTSD (R9)(R11*8), Z5
	VFMADD231PD (R13), Z5, Z0
	VFMADD231PD 64(R13), Z5, Z1
	VFMADD231PD 128(R13), Z5, Z3
	VFMADD231PD 192(R13), Z5, Z4
	INCQ R11
	JMP c4_j

c4_store:
	VMOVUPD Z0, (DI)(R12*1)
	VMOVUPD Z1, 64(DI)(R12*1)
	VMOVUPD Z3, 128(DI)(R12*1)
	VMOVUPD Z4, 192(DI)(R12*1)
	ADDQ $256, R12
	SUBQ $32, CX
	JMP c4_chunk

c1_chunk:
	CMPQ CX, $0
	JLE c1_done
	AXK1
	VMOVUPD.Z (DI)(R12*1), K1, Z0
	XORQ R11, R11 // j

c1_j:
	CMPQ R11, R10
	JGE c1_store
	MOVQ (R8)(R11*8), R13
	SHLQ $3, R13
	ADDQ SI, R13
	VMOVUPD.Z (R13)(R12*1), K1, Z2
	VFMADD231PD.BCST (R9)(R11*8), Z2, Z0
	INCQ R11
	JMP c1_j

c1_store:
	VMOVUPD Z0, K1, (DI)(R12*1)
	ADDQ $64, R12
	SUBQ $8, CX
	JG c1_chunk

c1_done:
	VZEROUPPER
	RET

// func combine2AVX512(y, z, x *float64, off *int64, a, b *float64, nj, n int)
// combineAVX512 of a into y and of b into z, reading x once.
TEXT ·combine2AVX512(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ off+24(FP), R8
	MOVQ a+32(FP), R9
	MOVQ b+40(FP), R14
	MOVQ nj+48(FP), R10
	MOVQ n+56(FP), CX
	XORQ R12, R12

c2_chunk:
	AXK1
	VMOVUPD.Z (DI)(R12*1), K1, Z0
	VMOVUPD.Z (DX)(R12*1), K1, Z1
	XORQ R11, R11

c2_j:
	CMPQ R11, R10
	JGE c2_store
	MOVQ (R8)(R11*8), R13
	SHLQ $3, R13
	ADDQ SI, R13
	VMOVUPD.Z (R13)(R12*1), K1, Z2
	VFMADD231PD.BCST (R9)(R11*8), Z2, Z0
	VFMADD231PD.BCST (R14)(R11*8), Z2, Z1
	INCQ R11
	JMP c2_j

c2_store:
	VMOVUPD Z0, K1, (DI)(R12*1)
	VMOVUPD Z1, K1, (DX)(R12*1)
	ADDQ $64, R12
	SUBQ $8, CX
	JG c2_chunk
	VZEROUPPER
	RET

// func spreadAVX512(x, v *float64, off *int64, a *float64, nj, n int)
// x[off[j]+i] = fma(-a[j], v[i], x[off[j]+i]) for j < nj in order and
// i < n, eight at a time (VFNMADD231PD: -(a v) + x, the fma of -a).
TEXT ·spreadAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ a+24(FP), R9
	MOVQ nj+32(FP), R10
	MOVQ n+40(FP), R11

sp_row:
	MOVQ (R8), BX
	SHLQ $3, BX
	ADDQ DI, BX // the row's first value
	VBROADCASTSD (R9), Z14
	MOVQ SI, DX
	MOVQ R11, CX

sp_chunk:
	AXK1
	VMOVUPD.Z (DX), K1, Z0
	VMOVUPD.Z (BX), K1, Z1
	VFNMADD231PD Z0, Z14, Z1
	VMOVUPD Z1, K1, (BX)
	ADDQ $64, DX
	ADDQ $64, BX
	SUBQ $8, CX
	JG sp_chunk

	ADDQ $8, R8
	ADDQ $8, R9
	DECQ R10
	JG sp_row
	VZEROUPPER
	RET
