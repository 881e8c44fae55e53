//go:build !purego

#include "textflag.h"

// AVX-512 versions of the batch normal kernels of fastnorm.go, eight
// particles per vector. Every macro mirrors one Go function operation for
// operation (see the comments there), so the results are bit-identical.

#define KONE ·kc+0(SB)
#define KFOUR ·kc+8(SB)
#define KHALF ·kc+16(SB)
#define KMHALF ·kc+24(SB)
#define K40 ·kc+32(SB)
#define KM746 ·kc+40(SB)
#define KLOG2E ·kc+48(SB)
#define KLN2HI ·kc+56(SB)
#define KLN2LO ·kc+64(SB)
#define KV0 ·kc+72(SB)
#define KSCALE ·kc+80(SB)
#define KSEVEN ·kc+88(SB)
#define KTWO52 ·kc+96(SB)
#define KSQRT2 ·kc+104(SB)
#define KTWO ·kc+112(SB)
#define KTAILMAX ·kc+120(SB)
#define KC0180625 ·kc+128(SB)
#define KM0425 ·kc+136(SB)
#define K16 ·kc+144(SB)
#define KFIVE ·kc+152(SB)
#define KZERO ·kc+160(SB)
#define KNEGINF ·kc+168(SB)
#define KTINY ·kc+176(SB)
#define KABS ·kbits+0(SB)
#define KSIGN ·kbits+8(SB)

// Comparison predicates (quiet).
#define LT 0x11
#define LE 0x12
#define GT 0x1E
#define GE 0x1D

// K1 = the active lanes of a block of min(n, 8) elements, n in CX
// (clobbers AX).
#define ACTIVE \
	MOVQ $0xff, AX; \
	CMPQ CX, $8; \
	JGE 4(PC); \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K1

// EXPK: out = expK(x) for x <= 0 (x is clamped in place; k, r clobbered).
#define EXPK(x, k, r, out) \
	VMAXPD.BCST KM746, x, x; \
	VMULPD.BCST KLOG2E, x, k; \
	VRNDSCALEPD $8, k, k; \
	VMOVAPD x, r; \
	VFNMADD231PD.BCST KLN2HI, k, r; \
	VFNMADD231PD.BCST KLN2LO, k, r; \
	VBROADCASTSD ·expPoly+0(SB), out; \
	VFMADD213PD.BCST ·expPoly+8(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+16(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+24(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+32(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+40(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+48(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+56(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+64(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+72(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+80(SB), r, out; \
	VFMADD213PD.BCST ·expPoly+88(SB), r, out; \
	VSCALEFPD k, out, out

// LOGK: out = logK(x) for positive x (e, m, s, z, q clobbered; uses K7).
#define LOGK(x, e, m, s, z, q, out) \
	VGETEXPPD x, e; \
	VGETMANTPD $0, x, m; \
	VCMPPD.BCST $GT, KSQRT2, m, K7; \
	VMULPD.BCST KHALF, m, K7, m; \
	VADDPD.BCST KONE, e, K7, e; \
	VSUBPD.BCST KONE, m, m; \
	VADDPD.BCST KTWO, m, out; \
	VDIVPD out, m, s; \
	VMULPD s, s, z; \
	VBROADCASTSD ·logPoly+0(SB), q; \
	VFMADD213PD.BCST ·logPoly+8(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+16(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+24(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+32(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+40(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+48(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+56(SB), z, q; \
	VFMADD213PD.BCST ·logPoly+64(SB), z, q; \
	VMULPD q, z, q; \
	VMULPD.BCST KHALF, m, out; \
	VMULPD m, out, out; \
	VADDPD q, out, q; \
	VMULPD q, s, q; \
	VFMADD231PD.BCST KLN2LO, e, q; \
	VSUBPD q, out, out; \
	VSUBPD m, out, out; \
	VFMSUB231PD.BCST KLN2HI, e, out

// TAILCOEF: out = fma(out, s, tailPoly[j][idx]).
#define TAILCOEF(off, idx, s, c, out) \
	VPERMPD ·tailPoly+off(SB), idx, c; \
	VFMADD213PD c, s, out

// TAILR: out = tailR(t) (v, w, kf, s, c clobbered).
#define TAILR(t, v, w, kf, s, c, out) \
	VADDPD.BCST KFOUR, t, v; \
	VBROADCASTSD KFOUR, w; \
	VDIVPD v, w, v; \
	VSUBPD.BCST KV0, v, w; \
	VMULPD.BCST KSCALE, w, w; \
	VRNDSCALEPD $9, w, kf; \
	VMAXPD.BCST KZERO, kf, kf; \
	VMINPD.BCST KSEVEN, kf, kf; \
	VSUBPD kf, w, s; \
	VADDPD s, s, s; \
	VSUBPD.BCST KONE, s, s; \
	VADDPD.BCST KTWO52, kf, kf; \
	VPERMPD ·tailPoly+0(SB), kf, out; \
	TAILCOEF(64, kf, s, c, out); \
	TAILCOEF(128, kf, s, c, out); \
	TAILCOEF(192, kf, s, c, out); \
	TAILCOEF(256, kf, s, c, out); \
	TAILCOEF(320, kf, s, c, out); \
	TAILCOEF(384, kf, s, c, out); \
	TAILCOEF(448, kf, s, c, out); \
	TAILCOEF(512, kf, s, c, out); \
	TAILCOEF(576, kf, s, c, out); \
	TAILCOEF(640, kf, s, c, out)

// TAILSMALL: Z14 = tailSmall(x); t = min(|x|, 40) is left in Z1.
// Clobbers Z1-Z13.
#define TAILSMALL(x) \
	VPANDQ.BCST KABS, x, Z1; \
	VMINPD.BCST K40, Z1, Z1; \
	VMULPD Z1, Z1, Z2; \
	VMOVAPD Z2, Z3; \
	VFMSUB231PD Z1, Z1, Z3; \
	VMULPD.BCST KMHALF, Z2, Z4; \
	EXPK(Z4, Z6, Z7, Z5); \
	VMULPD.BCST KMHALF, Z3, Z3; \
	VFMADD231PD Z3, Z5, Z5; \
	TAILR(Z1, Z8, Z9, Z10, Z11, Z12, Z13); \
	VMULPD Z13, Z5, Z14

// HORNER8: acc = hornerK(tab, x).
#define HORNER8(tab, x, acc) \
	VBROADCASTSD tab+0(SB), acc; \
	VFMADD213PD.BCST tab+8(SB), x, acc; \
	VFMADD213PD.BCST tab+16(SB), x, acc; \
	VFMADD213PD.BCST tab+24(SB), x, acc; \
	VFMADD213PD.BCST tab+32(SB), x, acc; \
	VFMADD213PD.BCST tab+40(SB), x, acc; \
	VFMADD213PD.BCST tab+48(SB), x, acc; \
	VFMADD213PD.BCST tab+56(SB), x, acc

// func tailWeightsAVX512(lo, t, c, lg, logw *float64, n int) (mx float64, special int)
TEXT ·tailWeightsAVX512(SB), NOSPLIT, $0-64
	MOVQ lo+0(FP), SI
	MOVQ t+8(FP), DI
	MOVQ c+16(FP), DX
	MOVQ lg+24(FP), R9
	MOVQ logw+32(FP), R10
	MOVQ n+40(FP), CX
	XORQ R11, R11
	VBROADCASTSD KNEGINF, Z26
	VBROADCASTSD KONE, Z31

tw_loop:
	ACTIVE
	VMOVUPD.Z (SI), K1, Z0
	VCMPPD.BCST $LE, KTAILMAX, Z0, K1, K2
	KXORW K2, K1, K3
	KMOVW K3, AX
	POPCNTL AX, AX
	ADDQ AX, R11
	VMOVAPD.Z Z0, K2, Z0
	TAILSMALL(Z0)
	// Z14 = small, Z15 = big; K3 = lo >= 0.
	VSUBPD Z14, Z31, Z15
	VCMPPD.BCST $GE, KZERO, Z0, K3
	KNOTW K3, K4
	VBLENDMPD Z14, Z15, K3, Z16
	VBLENDMPD Z15, Z14, K3, Z17
	LOGK(Z16, Z18, Z19, Z20, Z21, Z22, Z23)
	// lg = log T, plus the rounding correction of big where lo < 0.
	VSUBPD Z15, Z31, Z24
	VSUBPD Z14, Z24, Z24
	VDIVPD Z15, Z24, Z24
	VADDPD Z24, Z23, K4, Z23
	VMOVUPD.Z (R10), K1, Z25
	VADDPD Z23, Z25, Z25
	VMAXPD Z25, Z26, K2, Z26
	VMOVUPD Z16, K2, (DI)
	VMOVUPD Z17, K2, (DX)
	VMOVUPD Z23, K2, (R9)
	VMOVUPD Z25, K2, (R10)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	ADDQ $64, R9
	ADDQ $64, R10
	SUBQ $8, CX
	JG tw_loop

	// The largest lane.
	VMOVAPD Z26, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VMAXPD X1, X0, X0
	MOVSD X0, mx+48(FP)
	MOVQ R11, special+56(FP)
	VZEROUPPER
	RET

// func tailDrawsAVX512(z, lo, t, c, u *float64, n int) (special int)
TEXT ·tailDrawsAVX512(SB), NOSPLIT, $0-56
	MOVQ z+0(FP), DI
	MOVQ lo+8(FP), SI
	MOVQ t+16(FP), DX
	MOVQ c+24(FP), R9
	MOVQ u+32(FP), R10
	MOVQ n+40(FP), CX
	XORQ R11, R11
	VBROADCASTSD KONE, Z31

td_loop:
	ACTIVE
	VMOVUPD.Z (SI), K1, Z0
	VCMPPD.BCST $LE, KTAILMAX, Z0, K1, K2
	KXORW K2, K1, K3
	KMOVW K3, AX
	POPCNTL AX, AX
	ADDQ AX, R11
	VMOVUPD.Z (DX), K2, Z1
	VMOVUPD.Z (R9), K2, Z2
	VMOVUPD.Z (R10), K2, Z3
	// tau = (1-u) T; kappa = fma(u, T, C); p = tau <= 1/2 ? tau : kappa.
	VSUBPD Z3, Z31, Z4
	VMULPD Z1, Z4, Z4
	VMAXPD.BCST KTINY, Z4, Z4
	VCMPPD.BCST $LE, KHALF, Z4, K3
	VMOVAPD Z2, Z5
	VFMADD231PD Z1, Z3, Z5
	VBLENDMPD Z4, Z5, K3, Z6
	// q = p - 1/2; K4: the lanes of the central branch, K5 the tails'.
	// A branch no active lane takes is skipped.
	VSUBPD.BCST KHALF, Z6, Z7
	VCMPPD.BCST $GE, KM0425, Z7, K4
	KANDW K4, K2, K6
	KORTESTW K6, K6
	JZ td_nocentral
	VBROADCASTSD KC0180625, Z8
	VFNMADD231PD Z7, Z7, Z8
	HORNER8(·as241CentralNum, Z8, Z9)
	HORNER8(·as241CentralDen, Z8, Z10)
	VMULPD Z9, Z7, Z11
	VDIVPD Z10, Z11, Z27

td_nocentral:
	KANDNW K2, K4, K5
	KORTESTW K5, K5
	JZ td_tailsdone
	// The tails: r = sqrt(-log p); K6: r <= 5 (AS 241's near tail).
	LOGK(Z6, Z12, Z13, Z14, Z15, Z16, Z17)
	VPXORQ.BCST KSIGN, Z17, Z17
	VSQRTPD Z17, Z18
	VSUBPD.BCST K16, Z18, Z19
	HORNER8(·as241NearNum, Z19, Z20)
	HORNER8(·as241NearDen, Z19, Z21)
	VPXORQ.BCST KSIGN, Z20, Z20
	VDIVPD Z21, Z20, Z22
	VCMPPD.BCST $LE, KFIVE, Z18, K6
	KANDNW K5, K6, K7
	KORTESTW K7, K7
	JZ td_nofar
	VSUBPD.BCST KFIVE, Z18, Z23
	HORNER8(·as241FarNum, Z23, Z24)
	HORNER8(·as241FarDen, Z23, Z25)
	VPXORQ.BCST KSIGN, Z24, Z24
	VDIVPD Z25, Z24, Z26
	VBLENDMPD Z22, Z26, K6, Z22

td_nofar:
	VBLENDMPD Z27, Z22, K4, Z27

td_tailsdone:
	// z = tau <= 1/2 ? -x : x, then z < lo ? lo : z.
	VPXORQ.BCST KSIGN, Z27, K3, Z27
	VMAXPD Z27, Z0, Z27
	VMOVUPD Z27, K2, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	ADDQ $64, R9
	ADDQ $64, R10
	SUBQ $8, CX
	JG td_loop
	MOVQ R11, special+48(FP)
	VZEROUPPER
	RET

// func expSumsAVX512(x *float64, n int, mx float64) (s1, s2 float64)
TEXT ·expSumsAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD mx+16(FP), Z15
	VPXORQ Z20, Z20, Z20
	VPXORQ Z21, Z21, Z21

es_loop:
	ACTIVE
	VMOVUPD.Z (SI), K1, Z0
	VSUBPD Z15, Z0, Z0
	EXPK(Z0, Z1, Z2, Z3)
	VMOVAPD.Z Z3, K1, Z3
	VADDPD Z3, Z20, Z20
	VFMADD231PD Z3, Z3, Z21
	ADDQ $64, SI
	SUBQ $8, CX
	JG es_loop

	// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) of each accumulator.
	VSHUFPD $0x55, Z20, Z20, Z22
	VADDPD Z22, Z20, Z20
	VSHUFF64X2 $0xB1, Z20, Z20, Z22
	VADDPD Z22, Z20, Z20
	VSHUFF64X2 $0x4E, Z20, Z20, Z22
	VADDPD Z22, Z20, Z20
	VSHUFPD $0x55, Z21, Z21, Z22
	VADDPD Z22, Z21, Z21
	VSHUFF64X2 $0xB1, Z21, Z21, Z22
	VADDPD Z22, Z21, Z21
	VSHUFF64X2 $0x4E, Z21, Z21, Z22
	VADDPD Z22, Z21, Z21
	VMOVAPD Z20, Z0
	VMOVAPD Z21, Z1
	MOVSD X0, s1+24(FP)
	MOVSD X1, s2+32(FP)
	VZEROUPPER
	RET

// func phiAccumulateAVX512(acc, mu, isig *float64, n int, w float64)
TEXT ·phiAccumulateAVX512(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ mu+8(FP), SI
	MOVQ isig+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD w+32(FP), Z30
	VBROADCASTSD KONE, Z31

pa_loop:
	ACTIVE
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD.Z (DX), K1, Z15
	VMULPD Z15, Z0, Z0
	TAILSMALL(Z0)
	// Phi = x < 0 ? small : 1 - small.
	VSUBPD Z14, Z31, Z15
	VCMPPD.BCST $LT, KZERO, Z0, K3
	VBLENDMPD Z14, Z15, K3, Z15
	VMOVUPD.Z (DI), K1, Z16
	VFMADD231PD Z15, Z30, Z16
	VMOVUPD Z16, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $8, CX
	JG pa_loop
	VZEROUPPER
	RET
