//go:build !purego

#include "textflag.h"

// AVX2 versions of TwistedStep's loops (twisted.go), four particles per
// vector, the Go code's operations on each particle in the same order,
// no product fused with a sum: the same bits. TwistedStep's fields, in
// order, at 8-byte offsets: Eta 0, Ad 8, A2 16, Rnu 24, ILam 32, HalfLam
// 40, Bound 48, ISw 56, SSw 64, Gain 72, Rsd 80, TwoD 88, HalfTau 96,
// Nu 104, Upper 112 (a byte). twistedConsts: 1/2 at 0, -0 at 8.

// func twistedWeightsAVX2(s *TwistedStep, mh, c, lo, logw *float64, n int)
TEXT ·twistedWeightsAVX2(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), AX
	VBROADCASTSD 0(AX), Y15  // Eta
	VBROADCASTSD 8(AX), Y14  // Ad
	VBROADCASTSD 16(AX), Y13 // A2
	VBROADCASTSD 24(AX), Y12 // Rnu
	VBROADCASTSD 32(AX), Y11 // ILam
	VBROADCASTSD 40(AX), Y10 // HalfLam
	VBROADCASTSD 48(AX), Y9  // Bound
	VBROADCASTSD 56(AX), Y8  // ISw
	MOVBQZX 112(AX), R9      // Upper
	VBROADCASTSD ·twistedConsts+0(SB), Y7 // 1/2
	MOVQ mh+8(FP), SI
	MOVQ c+16(FP), DI
	MOVQ lo+24(FP), DX
	MOVQ logw+32(FP), BX
	MOVQ n+40(FP), CX
	TESTQ CX, CX
	JLE tw_done

tw_loop:
	// mhat = (Eta - mh) / Ad.
	VMOVUPD (SI), Y0
	VSUBPD Y0, Y15, Y0
	VDIVPD Y14, Y0, Y0
	VMOVUPD Y0, (SI)
	// c = (mhat A2 - Rnu) ILam.
	VMULPD Y13, Y0, Y1
	VSUBPD Y12, Y1, Y1
	VMULPD Y11, Y1, Y1
	VMOVUPD Y1, (DI)
	// logw += (HalfLam c) c - ((mhat/2) mhat) A2.
	VMULPD Y1, Y10, Y2
	VMULPD Y1, Y2, Y2
	VMULPD Y7, Y0, Y3
	VMULPD Y0, Y3, Y3
	VMULPD Y13, Y3, Y3
	VSUBPD Y3, Y2, Y2
	VMOVUPD (BX), Y4
	VADDPD Y2, Y4, Y4
	VMOVUPD Y4, (BX)
	// lo = (Bound - c) ISw, or (c - Bound) ISw.
	TESTQ R9, R9
	JNZ tw_upper
	VSUBPD Y1, Y9, Y5
	JMP tw_lo

tw_upper:
	VSUBPD Y9, Y1, Y5

tw_lo:
	VMULPD Y8, Y5, Y5
	VMOVUPD Y5, (DX)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $4, CX
	JG tw_loop

tw_done:
	VZEROUPPER
	RET

// func twistedMovesAVX2(s *TwistedStep, c, z, nz, mu, mh *float64, xk *float32, corr *float64, n int)
TEXT ·twistedMovesAVX2(SB), NOSPLIT, $0-72
	MOVQ s+0(FP), AX
	VBROADCASTSD 16(AX), Y11 // A2
	VBROADCASTSD 64(AX), Y15 // SSw
	VBROADCASTSD 72(AX), Y14 // Gain
	VBROADCASTSD 80(AX), Y13 // Rsd
	VBROADCASTSD 88(AX), Y12 // TwoD
	VBROADCASTSD 96(AX), Y10 // HalfTau
	VBROADCASTSD 104(AX), Y9 // Nu
	VBROADCASTSD ·twistedConsts+0(SB), Y7 // 1/2
	VBROADCASTSD ·twistedConsts+8(SB), Y6 // -0: the sign bit
	MOVQ c+8(FP), SI
	MOVQ z+16(FP), DI
	MOVQ nz+24(FP), R8 // nil: no noise
	MOVQ mu+32(FP), DX
	MOVQ mh+40(FP), BX
	MOVQ xk+48(FP), R10
	MOVQ corr+56(FP), R11
	MOVQ n+64(FP), CX
	TESTQ CX, CX
	JLE tm_done

tm_loop:
	// w = c + SSw z; x = c + Gain (w - c) (+ Rsd nz).
	VMOVUPD (SI), Y0
	VMULPD (DI), Y15, Y1
	VADDPD Y1, Y0, Y1
	VSUBPD Y0, Y1, Y1
	VMULPD Y1, Y14, Y1
	VADDPD Y1, Y0, Y1
	TESTQ R8, R8
	JZ tm_round
	VMULPD (R8), Y13, Y2
	VADDPD Y2, Y1, Y1
	ADDQ $32, R8

tm_round:
	// The path's value: x rounded to float32, stored, and read back.
	VCVTPD2PSY Y1, X3
	VMOVUPS X3, (R10)
	VCVTPS2PD X3, Y1
	// dm = x - mu, dh = x - mh.
	VMOVUPD (DX), Y2
	VSUBPD Y2, Y1, Y2
	VMOVUPD (BX), Y3
	VSUBPD Y3, Y1, Y3
	// corr += (((-dm) dm)/TwoD + ((dh/2) dh) A2) - (HalfTau x) x + Nu x.
	VXORPD Y6, Y2, Y4
	VMULPD Y2, Y4, Y4
	VDIVPD Y12, Y4, Y4
	VMULPD Y7, Y3, Y5
	VMULPD Y3, Y5, Y5
	VMULPD Y11, Y5, Y5
	VADDPD Y5, Y4, Y4
	VMULPD Y1, Y10, Y5
	VMULPD Y1, Y5, Y5
	VSUBPD Y5, Y4, Y4
	VMULPD Y1, Y9, Y5
	VADDPD Y5, Y4, Y4
	VMOVUPD (R11), Y5
	VADDPD Y4, Y5, Y5
	VMOVUPD Y5, (R11)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, BX
	ADDQ $16, R10
	ADDQ $32, R11
	SUBQ $4, CX
	JG tm_loop

tm_done:
	VZEROUPPER
	RET
