//go:build !purego

#include "textflag.h"

// The AVX2 kernels of NT. The eight lane sums of an element are two ymm
// accumulators, lanes 0-3 and lanes 4-7, computed one after the other
// (independent chains: the same bits as one 8-wide accumulator): a strip
// of 3 rows of C against a quad of 4 packed rows of B is 12 accumulators
// for lanes 0-3 over the whole chunk, reduced to (s0+s1)+(s2+s3) per
// element and set aside, then 12 for lanes 4-7, reduced to (s4+s5)+(s6+s7)
// and added to the first: exactly the order of kernGo. Each step loads 3
// vectors of A and 4 of B for 12 multiply-adds. The reductions use 128-bit
// halves (VEXTRACTF128) rather than lane-crossing shuffles, which are slow
// on AMD's Zen 1.

// maskTab: 8 lanes on, then 8 off. The 8 quadwords from index 8-r have
// their first r lanes on.
DATA maskTab<>+0(SB)/8, $-1
DATA maskTab<>+8(SB)/8, $-1
DATA maskTab<>+16(SB)/8, $-1
DATA maskTab<>+24(SB)/8, $-1
DATA maskTab<>+32(SB)/8, $-1
DATA maskTab<>+40(SB)/8, $-1
DATA maskTab<>+48(SB)/8, $-1
DATA maskTab<>+56(SB)/8, $-1
DATA maskTab<>+64(SB)/8, $0
DATA maskTab<>+72(SB)/8, $0
DATA maskTab<>+80(SB)/8, $0
DATA maskTab<>+88(SB)/8, $0
DATA maskTab<>+96(SB)/8, $0
DATA maskTab<>+104(SB)/8, $0
DATA maskTab<>+112(SB)/8, $0
DATA maskTab<>+120(SB)/8, $0
GLOBL maskTab<>(SB), RODATA|NOPTR, $128

#define ZERO12 \
	VXORPD Y0, Y0, Y0; VXORPD Y1, Y1, Y1; VXORPD Y2, Y2, Y2; VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; VXORPD Y5, Y5, Y5; VXORPD Y6, Y6, Y6; VXORPD Y7, Y7, Y7; \
	VXORPD Y8, Y8, Y8; VXORPD Y9, Y9, Y9; VXORPD Y10, Y10, Y10; VXORPD Y11, Y11, Y11

// COL3 multiplies B's column vector at boff(AX) into the three rows' A
// vectors Y12-Y14, into accumulators r0, r1, r2.
#define COL3(boff, r0, r1, r2) \
	VMOVUPD boff(AX), Y15; \
	VFMADD231PD Y15, Y12, r0; \
	VFMADD231PD Y15, Y13, r1; \
	VFMADD231PD Y15, Y14, r2

// STEP3 is one step of a pass: the half vectors at off of the three rows
// of A against the 4 packed half vectors of B at AX.
#define STEP3(off) \
	VMOVUPD off(SI)(BX*1), Y12; \
	VMOVUPD off(R8)(BX*1), Y13; \
	VMOVUPD off(R13)(BX*1), Y14; \
	COL3(0, Y0, Y4, Y8); \
	COL3(32, Y1, Y5, Y9); \
	COL3(64, Y2, Y6, Y10); \
	COL3(96, Y3, Y7, Y11)

// TAIL3 is STEP3 for the last, partial vector of A: lanes off under the
// mask in Y15 read as zeros (B's packing is zero there too).
#define TAIL3(off) \
	VMASKMOVPD off(SI)(BX*1), Y15, Y12; \
	VMASKMOVPD off(R8)(BX*1), Y15, Y13; \
	VMASKMOVPD off(R13)(BX*1), Y15, Y14; \
	VFMADD231PD 0(AX), Y12, Y0; VFMADD231PD 0(AX), Y13, Y4; VFMADD231PD 0(AX), Y14, Y8; \
	VFMADD231PD 32(AX), Y12, Y1; VFMADD231PD 32(AX), Y13, Y5; VFMADD231PD 32(AX), Y14, Y9; \
	VFMADD231PD 64(AX), Y12, Y2; VFMADD231PD 64(AX), Y13, Y6; VFMADD231PD 64(AX), Y14, Y10; \
	VFMADD231PD 96(AX), Y12, Y3; VFMADD231PD 96(AX), Y13, Y7; VFMADD231PD 96(AX), Y14, Y11

// HALF2 reduces the 4-lane accumulators yx0, yx1 of two columns to
// xd = [(x0[0]+x0[1]) + (x0[2]+x0[3]), the same for x1] (yd, xd: one
// register; xt a scratch).
#define HALF2(yx0, yx1, yd, xd, yt, xt) \
	VHADDPD yx1, yx0, yd; \
	VEXTRACTF128 $1, yd, xt; \
	VADDPD xt, xd, xd

// ROWLO reduces a row's accumulators of lanes 0-3 and stores the 4 sums
// at o(SP).
#define ROWLO(y0, y1, y2, y3, o) \
	HALF2(y0, y1, Y12, X12, Y14, X14); \
	HALF2(y2, y3, Y13, X13, Y15, X15); \
	VMOVUPD X12, o(SP); \
	VMOVUPD X13, o+16(SP)

// ROWHI reduces a row's accumulators of lanes 4-7 and adds them to the
// sums of lanes 0-3 at o(SP): the row's 4 results, in xa (columns 0, 1)
// and xb (columns 2, 3).
#define ROWHI(y0, y1, y2, y3, o, ya, xa, yb, xb) \
	HALF2(y0, y1, Y12, X12, Y14, X14); \
	HALF2(y2, y3, Y13, X13, Y15, X15); \
	VMOVUPD o(SP), xa; \
	VADDPD X12, xa, xa; \
	VMOVUPD o+16(SP), xb; \
	VADDPD X13, xb, xb

// func kern3x4AVX2(a *float64, lda int, bp *float64, kc int, c *float64, ldc, strips, cols, add, aks int)
// computes strips consecutive strips of 3 rows of C against one packed
// quad of B (its first cols columns); A's vectors of 8 follow each other
// aks bytes apart. Frame: the sums of lanes 0-3 at 0-95, the masks of the
// partial vector's lanes 0-3 and 4-7 at 96 and 128, of the columns at 160.
TEXT ·kern3x4AVX2(SB), NOSPLIT, $192-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R9
	SHLQ $3, R9
	LEAQ (SI)(R9*1), R8
	LEAQ (R8)(R9*1), R13
	LEAQ (R9)(R9*2), R9   // 3 rows of A, in bytes
	MOVQ bp+16(FP), DX
	MOVQ kc+24(FP), R10
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R11
	SHLQ $3, R11
	LEAQ (R11)(R11*2), R14 // 3 rows of C
	MOVQ strips+48(FP), R12
	LEAQ maskTab<>(SB), AX
	MOVQ R10, CX
	ANDQ $7, CX
	NEGQ CX
	ADDQ $8, CX
	VMOVUPD (AX)(CX*8), Y0
	VMOVUPD Y0, 96(SP)
	VMOVUPD 32(AX)(CX*8), Y0
	VMOVUPD Y0, 128(SP)
	MOVQ cols+56(FP), CX
	NEGQ CX
	ADDQ $8, CX
	VMOVUPD (AX)(CX*8), Y0
	VMOVUPD Y0, 160(SP)

strip:
	// The strip's rows of C, written at its end, on their way to the
	// cache while it runs.
	PREFETCHT0 (DI)
	PREFETCHT0 (DI)(R11*1)
	PREFETCHT0 (DI)(R11*2)
	// Lanes 0-3.
	ZERO12
	MOVQ DX, AX
	XORQ BX, BX
	MOVQ R10, CX
	SHRQ $3, CX
	JZ tailLo

loopLo:
	STEP3(0)
	ADDQ aks+72(FP), BX
	ADDQ $128, AX
	DECQ CX
	JNZ loopLo

tailLo:
	TESTQ $7, R10
	JZ hi
	VMOVUPD 96(SP), Y15
	TAIL3(0)
	ADDQ $128, AX

hi:
	ROWLO(Y0, Y1, Y2, Y3, 0)
	ROWLO(Y4, Y5, Y6, Y7, 32)
	ROWLO(Y8, Y9, Y10, Y11, 64)
	// Lanes 4-7: AX is at the quad's second half.
	ZERO12
	XORQ BX, BX
	MOVQ R10, CX
	SHRQ $3, CX
	JZ tailHi

loopHi:
	STEP3(32)
	ADDQ aks+72(FP), BX
	ADDQ $128, AX
	DECQ CX
	JNZ loopHi

tailHi:
	TESTQ $7, R10
	JZ reduce
	VMOVUPD 128(SP), Y15
	TAIL3(32)

reduce:
	// Row r's results: columns 0-1 in X(4r), 2-3 in X(4r+1).
	ROWHI(Y0, Y1, Y2, Y3, 0, Y0, X0, Y1, X1)
	ROWHI(Y4, Y5, Y6, Y7, 32, Y4, X4, Y5, X5)
	ROWHI(Y8, Y9, Y10, Y11, 64, Y8, X8, Y9, X9)

	LEAQ (DI)(R11*1), AX  // row 1 of C
	MOVQ add+64(FP), BX
	CMPQ cols+56(FP), $4
	JNE partial
	TESTQ BX, BX
	JZ storeFull
	VADDPD (DI), X0, X0
	VADDPD 16(DI), X1, X1
	VADDPD (AX), X4, X4
	VADDPD 16(AX), X5, X5
	VADDPD (AX)(R11*1), X8, X8
	VADDPD 16(AX)(R11*1), X9, X9

storeFull:
	VMOVUPD X0, (DI)
	VMOVUPD X1, 16(DI)
	VMOVUPD X4, (AX)
	VMOVUPD X5, 16(AX)
	VMOVUPD X8, (AX)(R11*1)
	VMOVUPD X9, 16(AX)(R11*1)
	JMP next

partial:
	VMOVUPD 160(SP), X14
	VMOVUPD 176(SP), X15
	TESTQ BX, BX
	JZ storePartial
	VMASKMOVPD (DI), X14, X12
	VADDPD X12, X0, X0
	VMASKMOVPD 16(DI), X15, X12
	VADDPD X12, X1, X1
	VMASKMOVPD (AX), X14, X12
	VADDPD X12, X4, X4
	VMASKMOVPD 16(AX), X15, X12
	VADDPD X12, X5, X5
	VMASKMOVPD (AX)(R11*1), X14, X12
	VADDPD X12, X8, X8
	VMASKMOVPD 16(AX)(R11*1), X15, X12
	VADDPD X12, X9, X9

storePartial:
	VMASKMOVPD X0, X14, (DI)
	VMASKMOVPD X1, X15, 16(DI)
	VMASKMOVPD X4, X14, (AX)
	VMASKMOVPD X5, X15, 16(AX)
	VMASKMOVPD X8, X14, (AX)(R11*1)
	VMASKMOVPD X9, X15, 16(AX)(R11*1)

next:
	ADDQ R9, SI
	ADDQ R9, R8
	ADDQ R9, R13
	ADDQ R14, DI
	DECQ R12
	JNZ strip
	VZEROUPPER
	RET

// func kern1x4AVX2(a *float64, bp *float64, kc int, c *float64, cols, add, aks int)
// computes one row of C against one packed quad of B (its first cols
// columns), lanes 0-3 and 4-7 side by side (8 accumulators).
TEXT ·kern1x4AVX2(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ bp+8(FP), AX
	MOVQ kc+16(FP), R10
	MOVQ c+24(FP), DI
	// DX: the quad's second half, (kc+7)/8 steps of 128 bytes on.
	LEAQ 7(R10), DX
	SHRQ $3, DX
	SHLQ $7, DX
	ADDQ AX, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ BX, BX
	MOVQ R10, CX
	SHRQ $3, CX
	JZ tail1

loop1:
	VMOVUPD (SI)(BX*1), Y12
	VMOVUPD 32(SI)(BX*1), Y13
	VFMADD231PD 0(AX), Y12, Y0
	VFMADD231PD 32(AX), Y12, Y1
	VFMADD231PD 64(AX), Y12, Y2
	VFMADD231PD 96(AX), Y12, Y3
	VFMADD231PD 0(DX), Y13, Y4
	VFMADD231PD 32(DX), Y13, Y5
	VFMADD231PD 64(DX), Y13, Y6
	VFMADD231PD 96(DX), Y13, Y7
	ADDQ aks+48(FP), BX
	ADDQ $128, AX
	ADDQ $128, DX
	DECQ CX
	JNZ loop1

tail1:
	LEAQ maskTab<>(SB), R8
	TESTQ $7, R10
	JZ reduce1
	MOVQ R10, CX
	ANDQ $7, CX
	NEGQ CX
	ADDQ $8, CX
	VMOVUPD (R8)(CX*8), Y14
	VMOVUPD 32(R8)(CX*8), Y15
	VMASKMOVPD (SI)(BX*1), Y14, Y12
	VMASKMOVPD 32(SI)(BX*1), Y15, Y13
	VFMADD231PD 0(AX), Y12, Y0
	VFMADD231PD 32(AX), Y12, Y1
	VFMADD231PD 64(AX), Y12, Y2
	VFMADD231PD 96(AX), Y12, Y3
	VFMADD231PD 0(DX), Y13, Y4
	VFMADD231PD 32(DX), Y13, Y5
	VFMADD231PD 64(DX), Y13, Y6
	VFMADD231PD 96(DX), Y13, Y7

reduce1:
	// Lanes 0-3 in X8 (columns 0, 1) and X9 (2, 3), lanes 4-7 in X10,
	// X11; the results in X8, X9.
	HALF2(Y0, Y1, Y8, X8, Y12, X12)
	HALF2(Y2, Y3, Y9, X9, Y13, X13)
	HALF2(Y4, Y5, Y10, X10, Y12, X12)
	HALF2(Y6, Y7, Y11, X11, Y13, X13)
	VADDPD X10, X8, X8
	VADDPD X11, X9, X9
	MOVQ cols+32(FP), CX
	NEGQ CX
	ADDQ $8, CX
	VMOVUPD (R8)(CX*8), X14
	VMOVUPD 16(R8)(CX*8), X15
	MOVQ add+40(FP), BX
	TESTQ BX, BX
	JZ store1
	VMASKMOVPD (DI), X14, X12
	VADDPD X12, X8, X8
	VMASKMOVPD 16(DI), X15, X12
	VADDPD X12, X9, X9

store1:
	VMASKMOVPD X8, X14, (DI)
	VMASKMOVPD X9, X15, 16(DI)
	VZEROUPPER
	RET

// func fmaPeakAVX2(n int)
// n iterations of 12 independent 4-wide fused multiply-adds: the CPU's
// peak float64 rate with AVX2, for comparison in benchmarks.
TEXT ·fmaPeakAVX2(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	ZERO12
	TESTQ CX, CX
	JZ done2
peak2:
	VFMADD231PD Y14, Y15, Y0
	VFMADD231PD Y14, Y15, Y1
	VFMADD231PD Y14, Y15, Y2
	VFMADD231PD Y14, Y15, Y3
	VFMADD231PD Y14, Y15, Y4
	VFMADD231PD Y14, Y15, Y5
	VFMADD231PD Y14, Y15, Y6
	VFMADD231PD Y14, Y15, Y7
	VFMADD231PD Y14, Y15, Y8
	VFMADD231PD Y14, Y15, Y9
	VFMADD231PD Y14, Y15, Y10
	VFMADD231PD Y14, Y15, Y11
	DECQ CX
	JNZ peak2
done2:
	VZEROUPPER
	RET
