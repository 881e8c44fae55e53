//go:build !purego

#include "textflag.h"

// The AVX-512 kernels of NT. Each computes, for one chunk of the inner
// dimension, a strip of rows of C against every group of 8 packed rows of
// B: eight lane sums per element (one zmm accumulator), then a transposing
// tree reduction that turns the 8 accumulators of a row and column group
// into one vector of 8 results, in exactly the order of kernGo.

// FMA8 multiplies the A vector a by the 8 packed B vectors at AX and adds
// into accumulators z0..z7.
#define FMA8(a, z0, z1, z2, z3, z4, z5, z6, z7) \
	VMOVUPD 0(AX), Z27; VFMADD231PD Z27, a, z0; \
	VMOVUPD 64(AX), Z28; VFMADD231PD Z28, a, z1; \
	VMOVUPD 128(AX), Z29; VFMADD231PD Z29, a, z2; \
	VMOVUPD 192(AX), Z30; VFMADD231PD Z30, a, z3; \
	VMOVUPD 256(AX), Z27; VFMADD231PD Z27, a, z4; \
	VMOVUPD 320(AX), Z28; VFMADD231PD Z28, a, z5; \
	VMOVUPD 384(AX), Z29; VFMADD231PD Z29, a, z6; \
	VMOVUPD 448(AX), Z30; VFMADD231PD Z30, a, z7

// FMA8x3 is FMA8 for three A vectors (Z24, Z25, Z26) and accumulators
// Z0-Z7, Z8-Z15, Z16-Z23, loading each B vector once.
#define FMA1x3(off, b, j0, j1, j2) \
	VMOVUPD off(AX), b; \
	VFMADD231PD b, Z24, j0; \
	VFMADD231PD b, Z25, j1; \
	VFMADD231PD b, Z26, j2

#define FMA8x3 \
	FMA1x3(0, Z27, Z0, Z8, Z16); \
	FMA1x3(64, Z28, Z1, Z9, Z17); \
	FMA1x3(128, Z29, Z2, Z10, Z18); \
	FMA1x3(192, Z30, Z3, Z11, Z19); \
	FMA1x3(256, Z27, Z4, Z12, Z20); \
	FMA1x3(320, Z28, Z5, Z13, Z21); \
	FMA1x3(384, Z29, Z6, Z14, Z22); \
	FMA1x3(448, Z30, Z7, Z15, Z23)

#define FMA8x3o(o) \
	FMA1x3(o+0, Z27, Z0, Z8, Z16); \
	FMA1x3(o+64, Z28, Z1, Z9, Z17); \
	FMA1x3(o+128, Z29, Z2, Z10, Z18); \
	FMA1x3(o+192, Z30, Z3, Z11, Z19); \
	FMA1x3(o+256, Z27, Z4, Z12, Z20); \
	FMA1x3(o+320, Z28, Z5, Z13, Z21); \
	FMA1x3(o+384, Z29, Z6, Z14, Z22); \
	FMA1x3(o+448, Z30, Z7, Z15, Z23)

// REDUCE8 reduces accumulators z0..z7 (columns 0..7) into z0, lane j
// holding ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)) of column j. Clobbers Z24,
// Z25.
#define PAIR(x, y) \
	VUNPCKLPD y, x, Z24; VUNPCKHPD y, x, Z25; VADDPD Z25, Z24, x

#define HALVES(x, y) \
	VSHUFF64X2 $0x88, y, x, Z24; VSHUFF64X2 $0xDD, y, x, Z25; VADDPD Z25, Z24, x

#define REDUCE8(z0, z1, z2, z3, z4, z5, z6, z7) \
	PAIR(z0, z1); PAIR(z2, z3); PAIR(z4, z5); PAIR(z6, z7); \
	HALVES(z0, z2); HALVES(z4, z6); \
	HALVES(z0, z4)

// STORE writes z to the 8 columns at ptr under mask K2, adding what is
// there first when add (R9 != 0... see callers) is set via flag in BX.
#define STORE(z, ptr) \
	TESTQ BX, BX; JZ 3(PC); \
	VMOVUPD.Z ptr, K2, Z24; VADDPD Z24, z, z; \
	VMOVUPD z, K2, ptr

// CLEANHI zeroes Z16-Z31 before returning, so that the AVX-512 state of
// the upper registers is back in its initial state for the rest of the
// program (signal delivery and context switches then skip it).
#define CLEANHI \
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23); \
	ZERO8(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)

#define ZERO8(z0, z1, z2, z3, z4, z5, z6, z7) \
	VPXORQ z0, z0, z0; VPXORQ z1, z1, z1; VPXORQ z2, z2, z2; VPXORQ z3, z3, z3; \
	VPXORQ z4, z4, z4; VPXORQ z5, z5, z5; VPXORQ z6, z6, z6; VPXORQ z7, z7, z7

// func kern3AVX512(ap *float64, bp *float64, steps int, c *float64, ldc, strips, mask, add int)
// computes strips consecutive strips of 3 rows of C against one packed
// group of 8 rows of B (columns under mask), for A packed by packA3: each
// strip's steps vectors of 8 per row, the 3 rows' vectors of a step next
// to each other, the strips one after another. The chunk's padding is
// zero in both A and B.
TEXT ·kern3AVX512(SB), NOSPLIT, $0-64
	MOVQ ap+0(FP), SI
	MOVQ bp+8(FP), DX
	MOVQ steps+16(FP), R10
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), R11
	SHLQ $3, R11
	MOVQ strips+40(FP), R12
	MOVQ mask+48(FP), AX
	KMOVW AX, K2
	LEAQ (R11)(R11*2), R14 // 3 rows of C

strip3:
	// The next strip's rows of C, to the cache while this one runs.
	LEAQ (DI)(R14*1), BX
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R11*1)
	PREFETCHT0 (BX)(R11*2)
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	MOVQ DX, AX
	MOVQ R10, CX
	SHRQ $1, CX
	JZ odd3

loop3:
	VMOVUPD 0(SI), Z24
	VMOVUPD 64(SI), Z25
	VMOVUPD 128(SI), Z26
	FMA8x3
	VMOVUPD 192(SI), Z24
	VMOVUPD 256(SI), Z25
	VMOVUPD 320(SI), Z26
	FMA8x3o(512)
	ADDQ $384, SI
	ADDQ $1024, AX
	DECQ CX
	JNZ loop3

odd3:
	MOVQ R10, CX
	ANDQ $1, CX
	JZ red3
one3:
	VMOVUPD 0(SI), Z24
	VMOVUPD 64(SI), Z25
	VMOVUPD 128(SI), Z26
	FMA8x3
	ADDQ $192, SI
	ADDQ $512, AX
	DECQ CX
	JNZ one3

red3:
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	REDUCE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	REDUCE8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	MOVQ add+56(FP), BX
	STORE(Z0, (DI))
	LEAQ (DI)(R11*1), AX
	STORE(Z8, (AX))
	ADDQ R11, AX
	STORE(Z16, (AX))
	ADDQ R14, DI
	DECQ R12
	JNZ strip3
	CLEANHI
	VZEROUPPER
	RET

// func kern3PackAVX512(a *float64, lda, aks, kc int, ap, bp *float64, c *float64, ldc, strips, mask, add int)
// is kern3AVX512 for A read in place (rows lda values apart, their
// vectors of 8 aks bytes apart) that also writes A's vectors, zero-padded,
// to ap in the packed layout unless ap is nil: the first group of B packs
// the block of A while it computes.
TEXT ·kern3PackAVX512(SB), NOSPLIT, $0-88
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R9
	SHLQ $3, R9          // lda bytes
	LEAQ (SI)(R9*1), R8  // row 1
	LEAQ (R8)(R9*1), R13 // row 2
	LEAQ (R9)(R9*2), R9  // 3 rows of A, in bytes
	MOVQ kc+24(FP), R10
	MOVQ ap+32(FP), R14
	MOVQ bp+40(FP), DX
	MOVQ c+48(FP), DI
	MOVQ ldc+56(FP), R11
	SHLQ $3, R11
	MOVQ strips+64(FP), R12
	// K1: the lanes of the last, partial vector of the chunk; K2 the
	// columns.
	MOVQ R10, CX
	ANDQ $7, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	MOVQ mask+72(FP), AX
	KMOVW AX, K2

stripP:
	// The next strip's rows of C, to the cache while this one runs.
	LEAQ (DI)(R11*2), BX
	ADDQ R11, BX
	PREFETCHT0 (BX)
	PREFETCHT0 (BX)(R11*1)
	PREFETCHT0 (BX)(R11*2)
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	MOVQ DX, AX
	XORQ BX, BX
	MOVQ R10, CX
	SHRQ $3, CX
	JZ tailP

loopP:
	VMOVUPD (SI)(BX*1), Z24
	VMOVUPD (R8)(BX*1), Z25
	VMOVUPD (R13)(BX*1), Z26
	TESTQ R14, R14
	JZ 4(PC)
	VMOVUPD Z24, 0(R14)
	VMOVUPD Z25, 64(R14)
	VMOVUPD Z26, 128(R14)
	FMA8x3
	ADDQ aks+16(FP), BX
	ADDQ $512, AX
	TESTQ R14, R14
	JZ 2(PC)
	ADDQ $192, R14
	DECQ CX
	JNZ loopP

tailP:
	TESTQ $7, R10
	JZ reduceP
	VMOVUPD.Z (SI)(BX*1), K1, Z24
	VMOVUPD.Z (R8)(BX*1), K1, Z25
	VMOVUPD.Z (R13)(BX*1), K1, Z26
	TESTQ R14, R14
	JZ 4(PC)
	VMOVUPD Z24, 0(R14)
	VMOVUPD Z25, 64(R14)
	VMOVUPD Z26, 128(R14)
	FMA8x3
	TESTQ R14, R14
	JZ 2(PC)
	ADDQ $192, R14

reduceP:
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	REDUCE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	REDUCE8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	MOVQ add+80(FP), BX
	STORE(Z0, (DI))
	LEAQ (DI)(R11*1), AX
	STORE(Z8, (AX))
	ADDQ R11, AX
	STORE(Z16, (AX))
	ADDQ R11, AX
	MOVQ AX, DI
	ADDQ R9, SI
	ADDQ R9, R8
	ADDQ R9, R13
	DECQ R12
	JNZ stripP
	CLEANHI
	VZEROUPPER
	RET

// func kern1AVX512(a *float64, bp *float64, kcPad, kc int, c *float64, groups, mask, add, aks, cgs int)
// computes one row of C against every packed group of B; A's vectors of 8
// follow each other aks bytes apart, C's groups of 8 columns cgs bytes.
TEXT ·kern1AVX512(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ bp+8(FP), DX
	MOVQ kcPad+16(FP), R9
	SHLQ $6, R9
	MOVQ kc+24(FP), R10
	MOVQ c+32(FP), DI
	MOVQ groups+40(FP), R12
	MOVQ R10, CX
	ANDQ $7, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1

group1:
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	MOVQ DX, AX
	XORQ BX, BX
	MOVQ R10, CX
	SHRQ $3, CX
	JZ tail1

loop1:
	VMOVUPD (SI)(BX*1), Z24
	FMA8(Z24, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ADDQ aks+64(FP), BX
	ADDQ $512, AX
	DECQ CX
	JNZ loop1

tail1:
	TESTQ $7, R10
	JZ reduce1
	VMOVUPD.Z (SI)(BX*1), K1, Z24
	FMA8(Z24, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

reduce1:
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	MOVQ $0xff, AX
	CMPQ R12, $1
	JNE 2(PC)
	MOVQ mask+48(FP), AX
	KMOVW AX, K2
	MOVQ add+56(FP), BX
	STORE(Z0, (DI))
	ADDQ cgs+72(FP), DI
	ADDQ R9, DX
	DECQ R12
	JNZ group1
	CLEANHI
	VZEROUPPER
	RET

// func fmaPeakAVX512(n int)
// n iterations of 12 independent 8-wide fused multiply-adds: the CPU's
// peak float64 rate, for comparison in benchmarks.
TEXT ·fmaPeakAVX512(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	TESTQ CX, CX
	JZ done
peak:
	VFMADD231PD Z30, Z31, Z0
	VFMADD231PD Z30, Z31, Z1
	VFMADD231PD Z30, Z31, Z2
	VFMADD231PD Z30, Z31, Z3
	VFMADD231PD Z30, Z31, Z4
	VFMADD231PD Z30, Z31, Z5
	VFMADD231PD Z30, Z31, Z6
	VFMADD231PD Z30, Z31, Z7
	VFMADD231PD Z30, Z31, Z8
	VFMADD231PD Z30, Z31, Z9
	VFMADD231PD Z30, Z31, Z10
	VFMADD231PD Z30, Z31, Z11
	DECQ CX
	JNZ peak
done:
	CLEANHI
	VZEROUPPER
	RET
