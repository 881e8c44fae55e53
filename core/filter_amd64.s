//go:build !purego

#include "textflag.h"

// AVX2 + FMA versions of the filter's per-particle loops (ep.go: epBounds,
// epStore), four particles per vector, the Go code's operations on each
// particle in the same order: the same bits.

// The frame of epBoundsAVX2: epConsts' fields and the lrow[j], each
// repeated in the four lanes of a vector.
#define IL2 0
#define KAPPA 32
#define ILAM 64
#define LA 96
#define LB 128
#define IS 160
#define IL 192
#define BASE 224
#define HL 256
#define LROW 288

// LROWS broadcasts lrow[j] (from AX) into the frame at LROW + 32j for
// j < kk (R9, at most 7; R11 and R12 clobbered); l and done are labels.
#define LROWS(l, done) \
	LEAQ LROW(SP), R12; \
	MOVQ R9, R11; \
	TESTQ R11, R11; \
	JZ done; \
l: \
	VBROADCASTSD (AX), Y0; \
	VMOVUPD Y0, (R12); \
	ADDQ $8, AX; \
	ADDQ $32, R12; \
	DECQ R11; \
	JNZ l; \
done:

// CONDMEAN: Y0 = mu = fma(lrow[j], zt[j*m+p], mu) for j < kk (R9), from
// pt (SI), with zt at R8 and m*8 in R13 (R10, R11, R12 clobbered); l and
// done are labels.
#define CONDMEAN(l, done) \
	VMOVUPD (SI), Y0; \
	MOVQ R8, R10; \
	LEAQ LROW(SP), R12; \
	MOVQ R9, R11; \
	TESTQ R11, R11; \
	JZ done; \
l: \
	VMOVUPD (R10), Y1; \
	VFMADD231PD (R12), Y1, Y0; \
	ADDQ R13, R10; \
	ADDQ $32, R12; \
	DECQ R11; \
	JNZ l; \
done:

// func epBoundsAVX2(ec *epConsts, pt, zt *float64, m int, lrow *float64, kk int, lo, hi, off, logw *float64, n int)
TEXT ·epBoundsAVX2(SB), 0, $512-88
	MOVQ ec+0(FP), AX
	VBROADCASTSD 0(AX), Y0
	VMOVUPD Y0, IL2(SP)
	VBROADCASTSD 8(AX), Y0
	VMOVUPD Y0, KAPPA(SP)
	VBROADCASTSD 16(AX), Y0
	VMOVUPD Y0, ILAM(SP)
	VBROADCASTSD 24(AX), Y0
	VMOVUPD Y0, LA(SP)
	VBROADCASTSD 32(AX), Y0
	VMOVUPD Y0, LB(SP)
	VBROADCASTSD 40(AX), Y0
	VMOVUPD Y0, IS(SP)
	VBROADCASTSD 48(AX), Y0
	VMOVUPD Y0, IL(SP)
	VBROADCASTSD 56(AX), Y0
	VMOVUPD Y0, BASE(SP)
	VBROADCASTSD 64(AX), Y0
	VMOVUPD Y0, HL(SP)
	MOVQ lrow+32(FP), AX
	MOVQ kk+40(FP), R9
	LROWS(eb_lrow, eb_lrowdone)
	MOVQ pt+8(FP), SI
	MOVQ zt+16(FP), R8
	MOVQ m+24(FP), R13
	SHLQ $3, R13
	MOVQ lo+48(FP), DI
	MOVQ hi+56(FP), DX
	MOVQ off+64(FP), BX
	MOVQ logw+72(FP), R14
	MOVQ n+80(FP), CX
	TESTQ CX, CX
	JLE eb_done

eb_loop:
	CONDMEAN(eb_mu, eb_mudone)
	// c = (mu/l^2 - kappa)/lambda; lo, hi = (A-c)/s, (B-c)/s; off = (c-mu)/l.
	VMULPD IL2(SP), Y0, Y1
	VSUBPD KAPPA(SP), Y1, Y1
	VMULPD ILAM(SP), Y1, Y1
	VMOVUPD LA(SP), Y2
	VSUBPD Y1, Y2, Y2
	VMULPD IS(SP), Y2, Y2
	VMOVUPD Y2, (DI)
	VMOVUPD LB(SP), Y2
	VSUBPD Y1, Y2, Y2
	VMULPD IS(SP), Y2, Y2
	VMOVUPD Y2, (DX)
	VSUBPD Y0, Y1, Y2
	VMULPD IL(SP), Y2, Y2
	VMOVUPD Y2, (BX)
	// logw += base + lambda/2 c c - 1/2 mu mu / l^2.
	VMULPD HL(SP), Y1, Y3
	VMULPD Y1, Y3, Y3
	VADDPD BASE(SP), Y3, Y3
	VMULPD ·kv+64(SB), Y0, Y4
	VMULPD Y0, Y4, Y4
	VMULPD IL2(SP), Y4, Y4
	VSUBPD Y4, Y3, Y3
	VMOVUPD (R14), Y5
	VADDPD Y3, Y5, Y5
	VMOVUPD Y5, (R14)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, R14
	SUBQ $4, CX
	JG eb_loop

eb_done:
	VZEROUPPER
	RET

// func epStoreAVX2(zt, off, z, logw *float64, sl, inc float64, n int)
TEXT ·epStoreAVX2(SB), NOSPLIT, $0-56
	MOVQ zt+0(FP), DI
	MOVQ off+8(FP), SI
	MOVQ z+16(FP), DX
	MOVQ logw+24(FP), BX
	VBROADCASTSD sl+32(FP), Y14
	VBROADCASTSD inc+40(FP), Y15
	MOVQ n+48(FP), CX
	TESTQ CX, CX
	JLE es2_done

es2_loop:
	VMULPD (DX), Y14, Y0
	VADDPD (SI), Y0, Y0
	VMOVUPD Y0, (DI)
	VMOVUPD (BX), Y1
	VSUBPD Y15, Y1, Y1
	VMOVUPD Y1, (BX)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $4, CX
	JG es2_loop

es2_done:
	VZEROUPPER
	RET

// The rows of an 8 x m array from DI, m*8 bytes apart (R8): DI, DX, BX,
// R9, R10, R11, R12, R13, indexed by the byte offset AX.
#define ROWPTRS \
	LEAQ (DI)(R8*1), DX; \
	LEAQ (DX)(R8*1), BX; \
	LEAQ (BX)(R8*1), R9; \
	LEAQ (R9)(R8*1), R10; \
	LEAQ (R10)(R8*1), R11; \
	LEAQ (R11)(R8*1), R12; \
	LEAQ (R12)(R8*1), R13

// GATHERCOLS stores columns c and c+1 of four particles' rows of 8 (from
// SI, 64 bytes apart) in rows rc and rc1 at AX: a 4 x 2 block transposed
// by pairs.
#define GATHERCOLS(c, rc, rc1) \
	VMOVUPD 8*c(SI), X0; \
	VINSERTF128 $1, 128+8*c(SI), Y0, Y0; \
	VMOVUPD 64+8*c(SI), X1; \
	VINSERTF128 $1, 192+8*c(SI), Y1, Y1; \
	VUNPCKLPD Y1, Y0, Y2; \
	VUNPCKHPD Y1, Y0, Y3; \
	VMOVUPD Y2, (rc)(AX*1); \
	VMOVUPD Y3, (rc1)(AX*1)

// func subLoadAVX2(pt, part *float64, m, n int)
TEXT ·subLoadAVX2(SB), NOSPLIT, $0-32
	MOVQ pt+0(FP), DI
	MOVQ part+8(FP), SI
	MOVQ m+16(FP), R8
	SHLQ $3, R8
	MOVQ n+24(FP), CX
	ROWPTRS
	XORQ AX, AX
	TESTQ CX, CX
	JLE sl_done

sl_loop:
	GATHERCOLS(0, DI, DX)
	GATHERCOLS(2, BX, R9)
	GATHERCOLS(4, R10, R11)
	GATHERCOLS(6, R12, R13)
	ADDQ $256, SI
	ADDQ $32, AX
	SUBQ $4, CX
	JG sl_loop

sl_done:
	VZEROUPPER
	RET

// SCATTERCOLS stores rows rc and rc1 at AX (columns c and c+1 of four
// particles) into the four particles' rows of 8 (from SI, 64 bytes apart).
#define SCATTERCOLS(c, rc, rc1) \
	VMOVUPD (rc)(AX*1), Y0; \
	VMOVUPD (rc1)(AX*1), Y1; \
	VUNPCKLPD Y1, Y0, Y2; \
	VUNPCKHPD Y1, Y0, Y3; \
	VMOVUPD X2, 8*c(SI); \
	VEXTRACTF128 $1, Y2, 128+8*c(SI); \
	VMOVUPD X3, 64+8*c(SI); \
	VEXTRACTF128 $1, Y3, 192+8*c(SI)

// func subStoreAVX2(zb, zt *float64, m, n int)
TEXT ·subStoreAVX2(SB), NOSPLIT, $0-32
	MOVQ zb+0(FP), SI
	MOVQ zt+8(FP), DI
	MOVQ m+16(FP), R8
	SHLQ $3, R8
	MOVQ n+24(FP), CX
	ROWPTRS
	XORQ AX, AX
	TESTQ CX, CX
	JLE ss_done

ss_loop:
	SCATTERCOLS(0, DI, DX)
	SCATTERCOLS(2, BX, R9)
	SCATTERCOLS(4, R10, R11)
	SCATTERCOLS(6, R12, R13)
	ADDQ $256, SI
	ADDQ $32, AX
	SUBQ $4, CX
	JG ss_loop

ss_done:
	VZEROUPPER
	RET

// The frame of conditionAVX2: A, B, 1/L[i][i], the shift and the lrow[j],
// each repeated in the four lanes of a vector (LROW as epBoundsAVX2's).
#define CA 0
#define CB 32
#define CINV 64
#define CSHIFT 96

// func conditionAVX2(c *[4]float64, pt, zt *float64, m int, lrow *float64, kk int, lo, hi *float64, n int)
TEXT ·conditionAVX2(SB), 0, $512-72
	MOVQ c+0(FP), AX
	VBROADCASTSD 0(AX), Y0
	VMOVUPD Y0, CA(SP)
	VBROADCASTSD 8(AX), Y0
	VMOVUPD Y0, CB(SP)
	VBROADCASTSD 16(AX), Y0
	VMOVUPD Y0, CINV(SP)
	VBROADCASTSD 24(AX), Y0
	VMOVUPD Y0, CSHIFT(SP)
	MOVQ lrow+32(FP), AX
	MOVQ kk+40(FP), R9
	LROWS(co_lrow, co_lrowdone)
	MOVQ pt+8(FP), SI
	MOVQ zt+16(FP), R8
	MOVQ m+24(FP), R13
	SHLQ $3, R13
	MOVQ lo+48(FP), DI
	MOVQ hi+56(FP), DX
	MOVQ n+64(FP), CX
	TESTQ CX, CX
	JLE co_done

co_loop:
	CONDMEAN(co_mu, co_mudone)
	// lo, hi = (A - mu)/L[i][i] - shift, (B - mu)/L[i][i] - shift.
	VMOVUPD CA(SP), Y2
	VSUBPD Y0, Y2, Y2
	VMULPD CINV(SP), Y2, Y2
	VSUBPD CSHIFT(SP), Y2, Y2
	VMOVUPD Y2, (DI)
	VMOVUPD CB(SP), Y2
	VSUBPD Y0, Y2, Y2
	VMULPD CINV(SP), Y2, Y2
	VSUBPD CSHIFT(SP), Y2, Y2
	VMOVUPD Y2, (DX)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $4, CX
	JG co_loop

co_done:
	VZEROUPPER
	RET

// func smcStoreAVX2(zt, zk, logw *float64, mu, inc float64, n int)
TEXT ·smcStoreAVX2(SB), NOSPLIT, $0-48
	MOVQ zt+0(FP), DI
	MOVQ zk+8(FP), SI
	MOVQ logw+16(FP), BX
	VBROADCASTSD mu+24(FP), Y14
	VBROADCASTSD inc+32(FP), Y15
	MOVQ n+40(FP), CX
	// Without a tilt, logw -= inc only.
	MOVQ mu+24(FP), AX
	SHLQ $1, AX
	TESTQ CX, CX
	JLE ss2_done

ss2_loop:
	VMOVUPD (SI), Y0
	VADDPD Y14, Y0, Y0
	VMOVUPD Y0, (DI)
	VMOVUPD (BX), Y1
	VSUBPD Y15, Y1, Y1
	TESTQ AX, AX
	JZ ss2_notilt
	VMULPD Y0, Y14, Y2
	VSUBPD Y2, Y1, Y1

ss2_notilt:
	VMOVUPD Y1, (BX)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, BX
	SUBQ $4, CX
	JG ss2_loop

ss2_done:
	VZEROUPPER
	RET
