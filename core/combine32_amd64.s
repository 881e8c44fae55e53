//go:build !purego

#include "textflag.h"

// AVX-512 versions of CombineF32 and Combine2F32 (combine32.go): eight
// particles per vector, each row's eight float32 values converted to
// float64 (VCVTPS2PD, exact) and multiply-added in the order of the rows,
// the Go code's operations: the same bits. Each pass through the rows
// takes a block of four vectors, 32 particles: its four (or eight, in
// Combine2F32) sums are independent chains of multiply-adds, so that one
// waits for its previous result while the others run, and each row's
// block of 128 bytes is two cache lines read at once. The chunks past the
// last particle are masked off (the masked loads do not fault; the masked
// stores write nothing).

// F32MASK(first, k) = the active lanes of the chunk of the block that
// starts at particle first (0, 8, 16 or 24) of the CX left: min(max(CX -
// first, 0), 8) lanes, from the table ·f32Lanes (BX and AX clobbered).
#define F32MASK(first, k) \
	MOVQ CX, BX; \
	SUBQ $first, BX; \
	XORQ AX, AX; \
	CMPQ BX, AX; \
	CMOVQLT AX, BX; \
	MOVQ $8, AX; \
	CMPQ BX, AX; \
	CMOVQGT AX, BX; \
	LEAQ ·f32Lanes(SB), AX; \
	MOVBQZX (AX)(BX*1), AX; \
	KMOVW AX, k

// F32MASKS sets K1..K4, the block's chunks' lanes.
#define F32MASKS \
	F32MASK(0, K1); \
	F32MASK(8, K2); \
	F32MASK(16, K3); \
	F32MASK(24, K4)

// func combineF32AVX512(y *float64, x *float32, off *int64, a *float64, nj, n int)
TEXT ·combineF32AVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ a+24(FP), R9
	MOVQ nj+32(FP), R10
	MOVQ n+40(FP), CX
	XORQ R12, R12 // the block's byte offset in a row of x; y's is twice it

f1_block:
	F32MASKS
	VMOVUPD.Z 0(DI)(R12*2), K1, Z0
	VMOVUPD.Z 64(DI)(R12*2), K2, Z1
	VMOVUPD.Z 128(DI)(R12*2), K3, Z2
	VMOVUPD.Z 192(DI)(R12*2), K4, Z3
	XORQ R11, R11 // j

f1_j:
	CMPQ R11, R10
	JGE f1_store
	MOVQ (R8)(R11*8), R13
	SHLQ $2, R13
	ADDQ SI, R13
	ADDQ R12, R13
	VBROADCASTSD (R9)(R11*8), Z30
	VCVTPS2PD.Z 0(R13), K1, Z4
	VCVTPS2PD.Z 32(R13), K2, Z5
	VCVTPS2PD.Z 64(R13), K3, Z6
	VCVTPS2PD.Z 96(R13), K4, Z7
	VFMADD231PD Z30, Z4, Z0
	VFMADD231PD Z30, Z5, Z1
	VFMADD231PD Z30, Z6, Z2
	VFMADD231PD Z30, Z7, Z3
	INCQ R11
	JMP f1_j

f1_store:
	VMOVUPD Z0, K1, 0(DI)(R12*2)
	VMOVUPD Z1, K2, 64(DI)(R12*2)
	VMOVUPD Z2, K3, 128(DI)(R12*2)
	VMOVUPD Z3, K4, 192(DI)(R12*2)
	ADDQ $128, R12
	SUBQ $32, CX
	JG f1_block
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

f2_block:
	F32MASKS
	VMOVUPD.Z 0(DI)(R12*2), K1, Z0
	VMOVUPD.Z 64(DI)(R12*2), K2, Z1
	VMOVUPD.Z 128(DI)(R12*2), K3, Z2
	VMOVUPD.Z 192(DI)(R12*2), K4, Z3
	VMOVUPD.Z 0(DX)(R12*2), K1, Z8
	VMOVUPD.Z 64(DX)(R12*2), K2, Z9
	VMOVUPD.Z 128(DX)(R12*2), K3, Z10
	VMOVUPD.Z 192(DX)(R12*2), K4, Z11
	XORQ R11, R11

f2_j:
	CMPQ R11, R10
	JGE f2_store
	MOVQ (R8)(R11*8), R13
	SHLQ $2, R13
	ADDQ SI, R13
	ADDQ R12, R13
	VBROADCASTSD (R9)(R11*8), Z30
	VBROADCASTSD (R14)(R11*8), Z31
	VCVTPS2PD.Z 0(R13), K1, Z4
	VCVTPS2PD.Z 32(R13), K2, Z5
	VCVTPS2PD.Z 64(R13), K3, Z6
	VCVTPS2PD.Z 96(R13), K4, Z7
	VFMADD231PD Z30, Z4, Z0
	VFMADD231PD Z30, Z5, Z1
	VFMADD231PD Z30, Z6, Z2
	VFMADD231PD Z30, Z7, Z3
	VFMADD231PD Z31, Z4, Z8
	VFMADD231PD Z31, Z5, Z9
	VFMADD231PD Z31, Z6, Z10
	VFMADD231PD Z31, Z7, Z11
	INCQ R11
	JMP f2_j

f2_store:
	VMOVUPD Z0, K1, 0(DI)(R12*2)
	VMOVUPD Z1, K2, 64(DI)(R12*2)
	VMOVUPD Z2, K3, 128(DI)(R12*2)
	VMOVUPD Z3, K4, 192(DI)(R12*2)
	VMOVUPD Z8, K1, 0(DX)(R12*2)
	VMOVUPD Z9, K2, 64(DX)(R12*2)
	VMOVUPD Z10, K3, 128(DX)(R12*2)
	VMOVUPD Z11, K4, 192(DX)(R12*2)
	ADDQ $128, R12
	SUBQ $32, CX
	JG f2_block
	VZEROUPPER
	RET

// func spreadF32AVX512(x *float32, v *float64, off *int64, a *float64, nj, n int)
// SpreadF32: for j < nj in order and i < n, eight at a time, x[off[j]+i]
// = float32(fma(-a[j], v[i], float64(x[off[j]+i]))): the row's float32
// values widened (VCVTPS2PD, exact), the fma of -a (VFNMADD231PD: -(a v)
// + x) and the result rounded to float32 (VCVTPD2PS, to nearest: Go's
// conversion). The last chunk's lanes past n are masked off (f32Lanes).
TEXT ·spreadF32AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ a+24(FP), R9
	MOVQ nj+32(FP), R10
	MOVQ n+40(FP), R11

s32_row:
	MOVQ (R8), BX
	SHLQ $2, BX
	ADDQ DI, BX // the row's first value
	VBROADCASTSD (R9), Z14
	MOVQ SI, DX
	MOVQ R11, CX

s32_chunk:
	MOVQ CX, AX
	CMPQ AX, $8
	JLE 2(PC)
	MOVQ $8, AX
	LEAQ ·f32Lanes(SB), R12
	MOVBQZX (R12)(AX*1), AX
	KMOVW AX, K1
	VMOVUPD.Z (DX), K1, Z0
	VCVTPS2PD.Z (BX), K1, Z1
	VFNMADD231PD Z0, Z14, Z1
	VCVTPD2PS Z1, Y2
	VMOVUPS Y2, K1, (BX)
	ADDQ $64, DX
	ADDQ $32, BX
	SUBQ $8, CX
	JG s32_chunk

	ADDQ $8, R8
	ADDQ $8, R9
	DECQ R10
	JG s32_row
	VZEROUPPER
	RET

// func prefetchSpan(p unsafe.Pointer, n int)
// Every 64-byte line that holds one of the n bytes from p (the last
// byte's included), into the caches (PREFETCHT0).
TEXT ·prefetchSpan(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -1(SI)(CX*1), DX // the last byte
	ANDQ $-64, SI

ps_line:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, DX
	JLE ps_line
	RET

// func prefetchRowSpans(x unsafe.Pointer, nx int, off *int64, nr, lo, hi int)
// For each of the nr rows at the float32 offsets off from x that lie
// within its nx values to their value hi (off[j] >= 0 and off[j] + hi <=
// nx), every 64-byte line that starts within values lo to hi (exclusive)
// of the row, and for a span from the row's start (lo 0) the line that
// holds its first byte (PREFETCHT0): the spans of a row's consecutive
// parts hint each of its lines once.
TEXT ·prefetchRowSpans(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ nx+8(FP), R11
	MOVQ off+16(FP), R8
	MOVQ nr+24(FP), R9
	MOVQ lo+32(FP), R10
	MOVQ hi+40(FP), CX
	SUBQ CX, R11 // the largest offset of a row within x
	SHLQ $2, R10 // the span's bytes
	SHLQ $2, CX
	SUBQ R10, CX
	TESTQ R9, R9
	JLE prs_done
	TESTQ CX, CX
	JLE prs_done

prs_row:
	MOVQ (R8), SI
	TESTQ SI, SI
	JLT prs_next
	CMPQ SI, R11
	JGT prs_next
	LEAQ (DI)(SI*4), SI   // the row
	ADDQ R10, SI          // the span's first byte
	LEAQ -1(SI)(CX*1), DX // its last
	TESTQ R10, R10
	JZ prs_first
	ADDQ $63, SI // the first line that starts within the span

prs_first:
	ANDQ $-64, SI
	CMPQ SI, DX
	JGT prs_next

prs_line:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, DX
	JLE prs_line

prs_next:
	ADDQ $8, R8
	DECQ R9
	JNZ prs_row

prs_done:
	RET
