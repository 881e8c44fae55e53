//go:build !purego

#include "textflag.h"

// The NEON kernel of NT (arm64). A vector holds 2 lanes, so an element's
// eight lane sums are 4 accumulators (lanes 0-1, 2-3, 4-5, 6-7); a strip of
// 3 rows of C against a pair of packed rows of B is 24 accumulators
// (V0-V23: row r, column c, quarter q in V(8r + 4c + q)). Each step of 8
// lanes loads, per quarter, the pair's 2 vectors of B and the 3 rows'
// vectors of A for 6 fused multiply-adds (FMLA, one rounding per lane as
// math.FMA). The kernel stores the lane sums; the Go caller adds the last,
// partial vector and reduces them in kernGo's order.

// func kern3x2NEON(a0, a1, a2 *float64, bp *float64, steps, aks int, out *float64)
// runs steps vectors of 8 of the rows at a0, a1, a2 (vectors aks bytes
// apart) against the packed pair at bp (16 values per step) and stores
// the 48 lane sums at out: row r, column c, lane l at (2r + c)*8 + l.
TEXT ·kern3x2NEON(SB), NOSPLIT, $0-56
	MOVD a0+0(FP), R0
	MOVD a1+8(FP), R1
	MOVD a2+16(FP), R2
	MOVD bp+24(FP), R3
	MOVD steps+32(FP), R4
	MOVD aks+40(FP), R5
	MOVD out+48(FP), R6
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	CBZ R4, store

loop:
	FMOVQ 0(R3), F27
	FMOVQ 64(R3), F28
	FMOVQ 0(R0), F29
	VFMLA V27.D2, V29.D2, V0.D2
	VFMLA V28.D2, V29.D2, V4.D2
	FMOVQ 0(R1), F30
	VFMLA V27.D2, V30.D2, V8.D2
	VFMLA V28.D2, V30.D2, V12.D2
	FMOVQ 0(R2), F31
	VFMLA V27.D2, V31.D2, V16.D2
	VFMLA V28.D2, V31.D2, V20.D2
	FMOVQ 16(R3), F27
	FMOVQ 80(R3), F28
	FMOVQ 16(R0), F29
	VFMLA V27.D2, V29.D2, V1.D2
	VFMLA V28.D2, V29.D2, V5.D2
	FMOVQ 16(R1), F30
	VFMLA V27.D2, V30.D2, V9.D2
	VFMLA V28.D2, V30.D2, V13.D2
	FMOVQ 16(R2), F31
	VFMLA V27.D2, V31.D2, V17.D2
	VFMLA V28.D2, V31.D2, V21.D2
	FMOVQ 32(R3), F27
	FMOVQ 96(R3), F28
	FMOVQ 32(R0), F29
	VFMLA V27.D2, V29.D2, V2.D2
	VFMLA V28.D2, V29.D2, V6.D2
	FMOVQ 32(R1), F30
	VFMLA V27.D2, V30.D2, V10.D2
	VFMLA V28.D2, V30.D2, V14.D2
	FMOVQ 32(R2), F31
	VFMLA V27.D2, V31.D2, V18.D2
	VFMLA V28.D2, V31.D2, V22.D2
	FMOVQ 48(R3), F27
	FMOVQ 112(R3), F28
	FMOVQ 48(R0), F29
	VFMLA V27.D2, V29.D2, V3.D2
	VFMLA V28.D2, V29.D2, V7.D2
	FMOVQ 48(R1), F30
	VFMLA V27.D2, V30.D2, V11.D2
	VFMLA V28.D2, V30.D2, V15.D2
	FMOVQ 48(R2), F31
	VFMLA V27.D2, V31.D2, V19.D2
	VFMLA V28.D2, V31.D2, V23.D2
	ADD $128, R3
	ADD R5, R0
	ADD R5, R1
	ADD R5, R2
	SUBS $1, R4
	BNE loop

store:
	VST1.P [V0.D2, V1.D2, V2.D2, V3.D2], 64(R6)
	VST1.P [V4.D2, V5.D2, V6.D2, V7.D2], 64(R6)
	VST1.P [V8.D2, V9.D2, V10.D2, V11.D2], 64(R6)
	VST1.P [V12.D2, V13.D2, V14.D2, V15.D2], 64(R6)
	VST1.P [V16.D2, V17.D2, V18.D2, V19.D2], 64(R6)
	VST1.P [V20.D2, V21.D2, V22.D2, V23.D2], 64(R6)
	RET
