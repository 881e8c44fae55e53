//go:build !purego

#include "textflag.h"

// AVX2 + FMA versions of the batch normal kernels of fastnorm.go, four
// particles per vector. Every macro mirrors one Go function operation for
// operation, as the AVX-512 kernels of fastnorm_amd64.s do, so the results
// are bit-identical on every path. What AVX2 lacks is emulated exactly:
// VSCALEFPD by scale2's two products, VGETEXPPD and VGETMANTPD by
// expMant's bit operations, the masks by blends (a masked lane of the
// AVX-512 kernels is computed here and then discarded by a blend, or
// stored and overwritten by the Go wrapper), VPERMPD's table look-up by
// loading each particle's row of coefficients (tailRows) and transposing.
// The kernels take a multiple of 4 particles (8 for tailWeightsAVX2 and
// expSumsAVX2); the Go wrappers do the rest.

// The constants of kv (fastnorm_amd64.go), 32 bytes apart.
#define C(off) ·kv+off(SB)
#define ONE 0
#define FOUR 32
#define HALF 64
#define MHALF 96
#define K40 128
#define KM746 160
#define LOG2E 192
#define LN2HI 224
#define LN2LO 256
#define V0 288
#define SCALE 320
#define SEVEN 352
#define TWO52 384
#define SQRT2 416
#define TWO 448
#define TAILMAX 480
#define C0180625 512
#define M0425 544
#define K16 576
#define FIVE 608
#define ZERO 640
#define NEGINF 672
#define TINY 704
#define ABS 736
#define SIGN 768
#define MANT 800
#define EXPBIAS 832
#define MINNORM 864
#define TWO64 896
#define SIXTYFOUR 928
#define M1022 960
#define TWOM64 992
#define ROWBYTES 1024
#define EXPPOLY 1056
#define LOGPOLY 1440
#define CNUM 1728
#define CDEN 1984
#define NNUM 2240
#define NDEN 2496
#define FNUM 2752
#define FDEN 3008

// Comparison predicates (quiet).
#define LT 0x11
#define LE 0x12
#define GT 0x1E
#define GE 0x1D

// EXPK: out = expK(x) for x <= 0 (x is clamped in place, then x, k and r
// are clobbered). The scaling by 2^k is scale2's: k1 = k, or k + 64 below
// -1022, is made into 2^k1 by adding 2^52 + 1023 and shifting the low bits
// into the exponent; the product by 2^k1 is exact but for a subnormal
// result, where it rounds once, and the product by 1 or 2^-64 rounds once.
#define EXPK(x, k, r, out) \
	VMAXPD C(KM746), x, x; \
	VMULPD C(LOG2E), x, k; \
	VROUNDPD $8, k, k; \
	VMOVAPD x, r; \
	VFNMADD231PD C(LN2HI), k, r; \
	VFNMADD231PD C(LN2LO), k, r; \
	VMOVUPD C(EXPPOLY), out; \
	VFMADD213PD C(EXPPOLY+32), r, out; \
	VFMADD213PD C(EXPPOLY+64), r, out; \
	VFMADD213PD C(EXPPOLY+96), r, out; \
	VFMADD213PD C(EXPPOLY+128), r, out; \
	VFMADD213PD C(EXPPOLY+160), r, out; \
	VFMADD213PD C(EXPPOLY+192), r, out; \
	VFMADD213PD C(EXPPOLY+224), r, out; \
	VFMADD213PD C(EXPPOLY+256), r, out; \
	VFMADD213PD C(EXPPOLY+288), r, out; \
	VFMADD213PD C(EXPPOLY+320), r, out; \
	VFMADD213PD C(EXPPOLY+352), r, out; \
	VCMPPD $LT, C(M1022), k, x; \
	VANDPD C(SIXTYFOUR), x, r; \
	VADDPD r, k, k; \
	VADDPD C(EXPBIAS), k, k; \
	VPSLLQ $52, k, k; \
	VMULPD k, out, out; \
	VMOVUPD C(ONE), r; \
	VBLENDVPD x, C(TWOM64), r, r; \
	VMULPD r, out, out

// LOGK: out = logK(x) for positive finite x (e, m, s, z, q, t clobbered).
// expMant: a subnormal x is scaled by 2^64 first; e is the exponent field,
// made a float64 by or-ing it into 2^52, less 1023 (and 64); m is the
// mantissa with the exponent of 1.
#define LOGK(x, e, m, s, z, q, t, out) \
	VCMPPD $LT, C(MINNORM), x, t; \
	VMULPD C(TWO64), x, m; \
	VBLENDVPD t, m, x, m; \
	VPSRLQ $52, m, e; \
	VPOR C(TWO52), e, e; \
	VSUBPD C(EXPBIAS), e, e; \
	VANDPD C(SIXTYFOUR), t, t; \
	VSUBPD t, e, e; \
	VANDPD C(MANT), m, m; \
	VORPD C(ONE), m, m; \
	VCMPPD $GT, C(SQRT2), m, t; \
	VMULPD C(HALF), m, s; \
	VBLENDVPD t, s, m, m; \
	VADDPD C(ONE), e, s; \
	VBLENDVPD t, s, e, e; \
	VSUBPD C(ONE), m, m; \
	VADDPD C(TWO), m, out; \
	VDIVPD out, m, s; \
	VMULPD s, s, z; \
	VMOVUPD C(LOGPOLY), q; \
	VFMADD213PD C(LOGPOLY+32), z, q; \
	VFMADD213PD C(LOGPOLY+64), z, q; \
	VFMADD213PD C(LOGPOLY+96), z, q; \
	VFMADD213PD C(LOGPOLY+128), z, q; \
	VFMADD213PD C(LOGPOLY+160), z, q; \
	VFMADD213PD C(LOGPOLY+192), z, q; \
	VFMADD213PD C(LOGPOLY+224), z, q; \
	VFMADD213PD C(LOGPOLY+256), z, q; \
	VMULPD q, z, q; \
	VMULPD C(HALF), m, out; \
	VMULPD m, out, out; \
	VADDPD out, q, q; \
	VMULPD s, q, q; \
	VFMADD231PD C(LN2LO), e, q; \
	VSUBPD q, out, out; \
	VSUBPD m, out, out; \
	VFMSUB231PD C(LN2HI), e, out

// ROWS loads coefficients j and j+1 of the four particles' rows (byte
// offsets R8, R9, R12, R13 from R10) into a (particles 0 and 2) and b
// (particles 1 and 3).
#define ROWS(j, a, ax, b, bx) \
	VMOVUPD 8*j(R10)(R8*1), ax; \
	VINSERTF128 $1, 8*j(R10)(R12*1), a, a; \
	VMOVUPD 8*j(R10)(R9*1), bx; \
	VINSERTF128 $1, 8*j(R10)(R13*1), b, b

// TAILR: out = tailR(t) (v, w, kf, s, a, b clobbered; R8, R9, R12, R13
// too). Each particle's piece k selects its row of tailRows (R10); the
// rows' coefficients are transposed into vectors by pairs (VUNPCKLPD,
// VUNPCKHPD).
#define TAILR(t, v, w, kf, kfx, s, a, ax, b, bx, out) \
	VADDPD C(FOUR), t, v; \
	VMOVUPD C(FOUR), w; \
	VDIVPD v, w, v; \
	VSUBPD C(V0), v, w; \
	VMULPD C(SCALE), w, w; \
	VROUNDPD $9, w, kf; \
	VMAXPD C(ZERO), kf, kf; \
	VMINPD C(SEVEN), kf, kf; \
	VSUBPD kf, w, s; \
	VADDPD s, s, s; \
	VSUBPD C(ONE), s, s; \
	VMULPD C(ROWBYTES), kf, kf; \
	VADDPD C(TWO52), kf, kf; \
	VANDPD C(MANT), kf, kf; \
	VMOVQ kfx, R8; \
	VPEXTRQ $1, kfx, R9; \
	VEXTRACTF128 $1, kf, kfx; \
	VMOVQ kfx, R12; \
	VPEXTRQ $1, kfx, R13; \
	ROWS(0, a, ax, b, bx); \
	VUNPCKLPD b, a, out; \
	VUNPCKHPD b, a, v; \
	VFMADD213PD v, s, out; \
	ROWS(2, a, ax, b, bx); \
	VUNPCKLPD b, a, v; \
	VUNPCKHPD b, a, w; \
	VFMADD213PD v, s, out; \
	VFMADD213PD w, s, out; \
	ROWS(4, a, ax, b, bx); \
	VUNPCKLPD b, a, v; \
	VUNPCKHPD b, a, w; \
	VFMADD213PD v, s, out; \
	VFMADD213PD w, s, out; \
	ROWS(6, a, ax, b, bx); \
	VUNPCKLPD b, a, v; \
	VUNPCKHPD b, a, w; \
	VFMADD213PD v, s, out; \
	VFMADD213PD w, s, out; \
	ROWS(8, a, ax, b, bx); \
	VUNPCKLPD b, a, v; \
	VUNPCKHPD b, a, w; \
	VFMADD213PD v, s, out; \
	VFMADD213PD w, s, out; \
	ROWS(10, a, ax, b, bx); \
	VUNPCKLPD b, a, v; \
	VFMADD213PD v, s, out

// TAILSMALL: Y14 = tailSmall(x); t = min(|x|, 40) is left in Y1.
// Clobbers Y1-Y13 and R8, R9, R12, R13; R10 holds tailRows.
#define TAILSMALL(x) \
	VANDPD C(ABS), x, Y1; \
	VMINPD C(K40), Y1, Y1; \
	VMULPD Y1, Y1, Y2; \
	VMOVAPD Y2, Y3; \
	VFMSUB231PD Y1, Y1, Y3; \
	VMULPD C(MHALF), Y2, Y4; \
	EXPK(Y4, Y6, Y7, Y5); \
	VMULPD C(MHALF), Y3, Y3; \
	VFMADD231PD Y3, Y5, Y5; \
	TAILR(Y1, Y8, Y9, Y10, X10, Y11, Y12, X12, Y13, X13, Y14); \
	VMULPD Y14, Y5, Y14

// COEFS stores coefficients j and j+1 of the four rows, as two vectors, at
// off+32j(SP) and off+32j+32(SP) (Y1-Y4 clobbered).
#define COEFS(j, off) \
	ROWS(j, Y1, X1, Y2, X2); \
	VUNPCKLPD Y2, Y1, Y3; \
	VUNPCKHPD Y2, Y1, Y4; \
	VMOVUPD Y3, off+32*j(SP); \
	VMOVUPD Y4, off+32*j+32(SP)

// PREP is the first stage of tailSmall(x) for a vector x (Y0): it stores
// t = min(|x|, 40) at toff(SP), tailR's s at soff(SP) and the 11
// coefficients of tailR's pieces, as vectors, from coff(SP) on: each
// particle's piece k selects its row of tailRows (R10), and the rows are
// transposed by pairs (VUNPCKLPD, VUNPCKHPD). Clobbers Y1-Y5 and R8, R9,
// R12, R13.
#define PREP(toff, soff, coff) \
	VANDPD C(ABS), Y0, Y1; \
	VMINPD C(K40), Y1, Y1; \
	VMOVUPD Y1, toff(SP); \
	VADDPD C(FOUR), Y1, Y2; \
	VMOVUPD C(FOUR), Y3; \
	VDIVPD Y2, Y3, Y2; \
	VSUBPD C(V0), Y2, Y3; \
	VMULPD C(SCALE), Y3, Y3; \
	VROUNDPD $9, Y3, Y4; \
	VMAXPD C(ZERO), Y4, Y4; \
	VMINPD C(SEVEN), Y4, Y4; \
	VSUBPD Y4, Y3, Y5; \
	VADDPD Y5, Y5, Y5; \
	VSUBPD C(ONE), Y5, Y5; \
	VMOVUPD Y5, soff(SP); \
	VMULPD C(ROWBYTES), Y4, Y4; \
	VADDPD C(TWO52), Y4, Y4; \
	VANDPD C(MANT), Y4, Y4; \
	VMOVQ X4, R8; \
	VPEXTRQ $1, X4, R9; \
	VEXTRACTF128 $1, Y4, X4; \
	VMOVQ X4, R12; \
	VPEXTRQ $1, X4, R13; \
	COEFS(0, coff); \
	COEFS(2, coff); \
	COEFS(4, coff); \
	COEFS(6, coff); \
	COEFS(8, coff); \
	ROWS(10, Y1, X1, Y2, X2); \
	VUNPCKLPD Y2, Y1, Y3; \
	VMOVUPD Y3, coff+320(SP)

// SMALL is the second stage: R = tailSmall(x) = exp(-t^2/2) tailR(t) from
// PREP's t, s and coefficients, t^2 split exactly into h + l (h, ml, k,
// r, e, s clobbered).
#define SMALL(toff, soff, coff, h, ml, k, r, e, s, R) \
	VMOVUPD toff(SP), ml; \
	VMULPD ml, ml, h; \
	VMOVAPD h, r; \
	VFMSUB231PD ml, ml, r; \
	VMULPD C(MHALF), h, h; \
	VMULPD C(MHALF), r, ml; \
	EXPK(h, k, r, e); \
	VFMADD231PD ml, e, e; \
	VMOVUPD soff(SP), s; \
	VMOVUPD coff(SP), R; \
	VFMADD213PD coff+32(SP), s, R; \
	VFMADD213PD coff+64(SP), s, R; \
	VFMADD213PD coff+96(SP), s, R; \
	VFMADD213PD coff+128(SP), s, R; \
	VFMADD213PD coff+160(SP), s, R; \
	VFMADD213PD coff+192(SP), s, R; \
	VFMADD213PD coff+224(SP), s, R; \
	VFMADD213PD coff+256(SP), s, R; \
	VFMADD213PD coff+288(SP), s, R; \
	VFMADD213PD coff+320(SP), s, R; \
	VMULPD R, e, R

// HORNER8: acc = hornerK(tab, x), tab the offset of its coefficients.
#define HORNER8(tab, x, acc) \
	VMOVUPD C(tab), acc; \
	VFMADD213PD C(tab+32), x, acc; \
	VFMADD213PD C(tab+64), x, acc; \
	VFMADD213PD C(tab+96), x, acc; \
	VFMADD213PD C(tab+128), x, acc; \
	VFMADD213PD C(tab+160), x, acc; \
	VFMADD213PD C(tab+192), x, acc; \
	VFMADD213PD C(tab+224), x, acc

// COUNTSPECIAL adds the lanes of lo not <= tailMax (mask ok) to R14
// (clobbers AX).
#define COUNTSPECIAL(ok) \
	VMOVMSKPD ok, AX; \
	XORL $15, AX; \
	POPCNTL AX, AX; \
	ADDQ AX, R14

// tailWeightsAVX2 takes 8 particles (two vectors, A and B) per iteration,
// in stages whose intermediate vectors go through the stack frame, so that
// the two vectors' long dependency chains (the polynomials' Horner steps,
// the divisions) fit in the 16 registers together and overlap: 14 % less
// time than one vector at a time (TAILSMALL and LOGK in registers), while
// the draws and Phi lose as much this way.

// Frame of tailWeightsAVX2: t, s and the
// coefficients of A and B (t's slots hold tailWeights' corrections later).
#define F_TA 0
#define F_TB 32
#define F_SA 64
#define F_SB 96
#define F_CA 128
#define F_CB 480

// WEIGHT starts the weight of a vector (lo at off(SI)) from its small in
// R: big = 1 - small; T and C are stored (DI, DX), the correction of log
// T where lo < 0, ((1-big)-small)/big, at corr(SP); then out = logK(T).
#define WEIGHT(off, corr, big, ge, tv, cv, q, t, R) \
	VMOVUPD C(ONE), big; \
	VSUBPD R, big, big; \
	VMOVUPD off(SI), ge; \
	VCMPPD $GE, C(ZERO), ge, ge; \
	VBLENDVPD ge, R, big, tv; \
	VBLENDVPD ge, big, R, cv; \
	VMOVUPD tv, off(DI); \
	VMOVUPD cv, off(DX); \
	VMOVUPD C(ONE), q; \
	VSUBPD big, q, q; \
	VSUBPD R, q, q; \
	VDIVPD big, q, q; \
	VMOVUPD q, corr(SP); \
	LOGK(tv, big, ge, tv, cv, q, t, R)

// LOGW ends the weight of a vector from its log T in lgT: lg (stored at
// off(BX)), logw += lg where lo <= tailMax (R11), and the largest in Y15.
#define LOGW(off, corr, lgT, a, b, c, d) \
	VADDPD corr(SP), lgT, a; \
	VMOVUPD off(SI), b; \
	VCMPPD $GE, C(ZERO), b, c; \
	VBLENDVPD c, lgT, a, lgT; \
	VMOVUPD lgT, off(BX); \
	VCMPPD $LE, C(TAILMAX), b, c; \
	VMOVUPD off(R11), a; \
	VADDPD lgT, a, d; \
	VBLENDVPD c, d, a, d; \
	VMOVUPD d, off(R11); \
	VMOVUPD C(NEGINF), a; \
	VBLENDVPD c, d, a, a; \
	VMAXPD a, Y15, Y15

// func tailWeightsAVX2(lo, t, c, lg, logw *float64, n int) (mx float64, special int)
TEXT ·tailWeightsAVX2(SB), 0, $832-64
	MOVQ lo+0(FP), SI
	MOVQ t+8(FP), DI
	MOVQ c+16(FP), DX
	MOVQ lg+24(FP), BX
	MOVQ logw+32(FP), R11
	MOVQ n+40(FP), CX
	XORQ R14, R14
	LEAQ ·tailRows(SB), R10
	VMOVUPD C(NEGINF), Y15
	TESTQ CX, CX
	JLE tw_done

tw_loop:
	// x = lo where lo <= tailMax, else 0.
	VMOVUPD (SI), Y1
	VCMPPD $LE, C(TAILMAX), Y1, Y2
	COUNTSPECIAL(Y2)
	VANDPD Y1, Y2, Y0
	PREP(F_TA, F_SA, F_CA)
	VMOVUPD 32(SI), Y1
	VCMPPD $LE, C(TAILMAX), Y1, Y2
	COUNTSPECIAL(Y2)
	VANDPD Y1, Y2, Y0
	PREP(F_TB, F_SB, F_CB)
	SMALL(F_TA, F_SA, F_CA, Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	SMALL(F_TB, F_SB, F_CB, Y7, Y8, Y9, Y10, Y11, Y12, Y13)
	WEIGHT(0, F_TA, Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	WEIGHT(32, F_TB, Y7, Y8, Y9, Y10, Y11, Y12, Y13)
	LOGW(0, F_TA, Y6, Y0, Y1, Y2, Y3)
	LOGW(32, F_TB, Y13, Y7, Y8, Y9, Y10)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	ADDQ $64, BX
	ADDQ $64, R11
	SUBQ $8, CX
	JG tw_loop

tw_done:
	// The largest lane.
	VEXTRACTF128 $1, Y15, X1
	VMAXPD X1, X15, X0
	VPERMILPD $1, X0, X1
	VMAXPD X1, X0, X0
	VMOVSD X0, mx+48(FP)
	MOVQ R14, special+56(FP)
	VZEROUPPER
	RET

// func tailDrawsAVX2(z, lo, t, c, u *float64, n int) (special int)
TEXT ·tailDrawsAVX2(SB), NOSPLIT, $0-56
	MOVQ z+0(FP), DI
	MOVQ lo+8(FP), SI
	MOVQ t+16(FP), DX
	MOVQ c+24(FP), BX
	MOVQ u+32(FP), R11
	MOVQ n+40(FP), CX
	XORQ R14, R14
	TESTQ CX, CX
	JLE td_done

td_loop:
	VMOVUPD (SI), Y0
	VCMPPD $LE, C(TAILMAX), Y0, Y14
	COUNTSPECIAL(Y14)
	VMOVUPD (DX), Y1
	VMOVUPD (BX), Y2
	VMOVUPD (R11), Y3
	// tau = (1-u) T; kappa = fma(u, T, C); p = tau <= 1/2 ? tau : kappa.
	VMOVUPD C(ONE), Y4
	VSUBPD Y3, Y4, Y4
	VMULPD Y1, Y4, Y4
	VMAXPD C(TINY), Y4, Y4
	VCMPPD $LE, C(HALF), Y4, Y5
	VMOVAPD Y2, Y6
	VFMADD231PD Y1, Y3, Y6
	VBLENDVPD Y5, Y4, Y6, Y7
	// q = p - 1/2; Y9: the lanes of the central branch. A branch that
	// no lane with lo <= tailMax (Y14) takes is skipped.
	VSUBPD C(HALF), Y7, Y8
	VCMPPD $GE, C(M0425), Y8, Y9
	VANDPD Y14, Y9, Y10
	VMOVMSKPD Y10, AX
	TESTL AX, AX
	JZ td_nocentral
	VMOVUPD C(C0180625), Y10
	VFNMADD231PD Y8, Y8, Y10
	HORNER8(CNUM, Y10, Y11)
	HORNER8(CDEN, Y10, Y12)
	VMULPD Y11, Y8, Y11
	VDIVPD Y12, Y11, Y13

td_nocentral:
	VANDNPD Y14, Y9, Y10
	VMOVMSKPD Y10, AX
	TESTL AX, AX
	JZ td_tailsdone
	// The tails: r = sqrt(-log p); Y11: r <= 5 (AS 241's near tail).
	LOGK(Y7, Y1, Y2, Y3, Y4, Y6, Y8, Y10)
	VXORPD C(SIGN), Y10, Y10
	VSQRTPD Y10, Y10
	VSUBPD C(K16), Y10, Y11
	HORNER8(NNUM, Y11, Y12)
	HORNER8(NDEN, Y11, Y15)
	VXORPD C(SIGN), Y12, Y12
	VDIVPD Y15, Y12, Y12
	VCMPPD $LE, C(FIVE), Y10, Y11
	VANDNPD Y14, Y9, Y1
	VANDNPD Y1, Y11, Y1
	VMOVMSKPD Y1, AX
	TESTL AX, AX
	JZ td_nofar
	VSUBPD C(FIVE), Y10, Y2
	HORNER8(FNUM, Y2, Y3)
	HORNER8(FDEN, Y2, Y4)
	VXORPD C(SIGN), Y3, Y3
	VDIVPD Y4, Y3, Y3
	VBLENDVPD Y11, Y12, Y3, Y12

td_nofar:
	VBLENDVPD Y9, Y13, Y12, Y13

td_tailsdone:
	// z = tau <= 1/2 ? -x : x, then z < lo ? lo : z.
	VANDPD C(SIGN), Y5, Y1
	VXORPD Y1, Y13, Y13
	VMAXPD Y13, Y0, Y13
	VMOVUPD Y13, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $32, R11
	SUBQ $4, CX
	JG td_loop

td_done:
	MOVQ R14, special+48(FP)
	VZEROUPPER
	RET

// func expSumsAVX2(x *float64, n int, mx float64, a, b *[8]float64)
TEXT ·expSumsAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD mx+16(FP), Y15
	MOVQ a+24(FP), DI
	MOVQ b+32(FP), DX
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VXORPD Y14, Y14, Y14
	TESTQ CX, CX
	JLE es_done

es_loop:
	// Lanes 0-3 in Y11 and Y13, lanes 4-7 in Y12 and Y14.
	VMOVUPD (SI), Y0
	VSUBPD Y15, Y0, Y0
	VMOVUPD 32(SI), Y4
	VSUBPD Y15, Y4, Y4
	EXPK(Y0, Y1, Y2, Y3)
	EXPK(Y4, Y5, Y6, Y7)
	VADDPD Y3, Y11, Y11
	VFMADD231PD Y3, Y3, Y13
	VADDPD Y7, Y12, Y12
	VFMADD231PD Y7, Y7, Y14
	ADDQ $64, SI
	SUBQ $8, CX
	JG es_loop

es_done:
	VMOVUPD Y11, (DI)
	VMOVUPD Y12, 32(DI)
	VMOVUPD Y13, (DX)
	VMOVUPD Y14, 32(DX)
	VZEROUPPER
	RET

// func phiAccumulateAVX2(acc, mu, isig *float64, n int, w float64)
TEXT ·phiAccumulateAVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ mu+8(FP), SI
	MOVQ isig+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD w+32(FP), Y15
	LEAQ ·tailRows(SB), R10
	TESTQ CX, CX
	JLE pa_done

pa_loop:
	VMOVUPD (SI), Y0
	VMULPD (DX), Y0, Y0
	TAILSMALL(Y0)
	// Phi = x < 0 ? small : 1 - small.
	VMOVUPD C(ONE), Y13
	VSUBPD Y14, Y13, Y13
	VCMPPD $LT, C(ZERO), Y0, Y12
	VBLENDVPD Y12, Y14, Y13, Y13
	VMOVUPD (DI), Y12
	VFMADD231PD Y13, Y15, Y12
	VMOVUPD Y12, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JG pa_loop

pa_done:
	VZEROUPPER
	RET
