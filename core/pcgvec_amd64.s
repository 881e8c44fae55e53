//go:build !purego

#include "textflag.h"

// The generator's outputs eight at a time (pcgvec_amd64.go).
//
// zigRectsAVX512: the next eight outputs of the
// generator at once, in lanes whose states are the stream's next eight
// (the first vector's from the state by the maps of one to eight steps,
// each later one from the last by the map of eight), the 128-bit
// product's high word from four 32-bit products (VPMULUDQ), the DXSM mix
// (pcg.next), and the ziggurat's rectangle test and value (zigTable.rect:
// |int32(x)| < k[b] for the strip b = x>>32 & 127, the value
// float64(int32(x)) * float64(w[b])): the Go code's operations, the same
// bits. The next vector's states do not wait for this vector's tests, so
// that successive vectors overlap; a test that fails ends the call, and
// the state is then taken from the lane before it.

// LCG sets OH:OL to H:L * mul + inc mod 2^128, lane by lane, with mul and
// inc in Z20 (mul's high word), Z21 (its low word), Z22, Z23 (inc's) and
// Z24 (mul's low word >> 32), Z26 the low 32-bit mask, Z28 ones (Z2-Z5
// and Z7-Z9 clobbered, K1 too).
#define LCG(H, L, OH, OL) \
	VPSRLQ $32, L, Z2; \
	VPMULUDQ Z21, L, Z3; \
	VPMULUDQ Z24, L, Z4; \
	VPMULUDQ Z21, Z2, Z5; \
	VPMULUDQ Z24, Z2, Z2; \
	VPSRLQ $32, Z3, Z3; \
	VPANDQ Z26, Z4, Z7; \
	VPANDQ Z26, Z5, Z8; \
	VPADDQ Z7, Z3, Z3; \
	VPADDQ Z8, Z3, Z3; \
	VPSRLQ $32, Z3, Z3; \
	VPSRLQ $32, Z4, Z4; \
	VPSRLQ $32, Z5, Z5; \
	VPADDQ Z4, Z2, Z2; \
	VPADDQ Z5, Z2, Z2; \
	VPADDQ Z3, Z2, Z2; \
	VPMULLQ Z21, H, Z7; \
	VPMULLQ Z20, L, Z8; \
	VPADDQ Z7, Z2, Z2; \
	VPADDQ Z8, Z2, Z2; \
	VPMULLQ Z21, L, Z9; \
	VPADDQ Z23, Z9, OL; \
	VPCMPUQ $1, Z9, OL, K1; \
	VPADDQ Z22, Z2, OH; \
	VPADDQ Z28, OH, K1, OH

// LANE sets R11:R12 to lane R14's state of H:L (Z29, Z30 clobbered).
#define LANE(H, L) \
	VPBROADCASTQ R14, Z29; \
	VPERMQ H, Z29, Z30; \
	VMOVQ X30, R11; \
	VPERMQ L, Z29, Z30; \
	VMOVQ X30, R12

// INIT sets Z6:Z10 to the states of the next eight outputs from the
// state at (DI), by the maps of one to eight steps at (DX), then Z20-Z24
// to the map of eight steps, every lane's, for LCG; Z0:Z1 is the state in
// every lane. Z26 and Z28 must hold LCG's masks.
#define INIT \
	VPBROADCASTQ 0(DI), Z0; \
	VPBROADCASTQ 8(DI), Z1; \
	VMOVDQU64 0(DX), Z20; \
	VMOVDQU64 64(DX), Z21; \
	VMOVDQU64 128(DX), Z22; \
	VMOVDQU64 192(DX), Z23; \
	VPSRLQ $32, Z21, Z24; \
	LCG(Z0, Z1, Z6, Z10); \
	VPBROADCASTQ 56(DX), Z20; \
	VPBROADCASTQ 120(DX), Z21; \
	VPBROADCASTQ 184(DX), Z22; \
	VPBROADCASTQ 248(DX), Z23; \
	VPSRLQ $32, Z21, Z24

// CONSTS sets Z25 to DXSM's multiplier, Z26 to LCG's low 32-bit mask and
// Z28 to ones (R8 clobbered).
#define CONSTS \
	MOVQ $0xda942042e4dd58b5, R8; \
	VPBROADCASTQ R8, Z25; \
	MOVQ $0xffffffff, R8; \
	VPBROADCASTQ R8, Z26; \
	MOVQ $1, R8; \
	VPBROADCASTQ R8, Z28

// DXSM sets Z11 to the outputs of the states H:L (pcg.next's mix: x = hi
// ^ hi>>32, x *= dxsmMul, x ^= x>>48, x *= lo|1; Z25 dxsmMul, Z28 ones;
// Z12 clobbered).
#define DXSM(H, L) \
	VPSRLQ $32, H, Z11; \
	VPXORQ Z11, H, Z11; \
	VPMULLQ Z25, Z11, Z11; \
	VPSRLQ $48, Z11, Z12; \
	VPXORQ Z12, Z11, Z11; \
	VPORQ Z28, L, Z12; \
	VPMULLQ Z12, Z11, Z11

// func pcgOutputsAVX512(s *pcg, dst *uint64, n int, t *zigVec)
TEXT ·pcgOutputsAVX512(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ dst+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ t+24(FP), DX
	XORQ AX, AX
	CONSTS
	INIT

outLoop:
	LCG(Z6, Z10, Z16, Z17)
	DXSM(Z6, Z10)
	VMOVDQU64 Z11, (SI)(AX*8)
	ADDQ $8, AX
	CMPQ AX, CX
	JGE outDone
	VMOVDQA64 Z16, Z6
	VMOVDQA64 Z17, Z10
	JMP outLoop

outDone:
	// The state after n outputs: lane n-1 - (AX-8) of the last vector.
	MOVQ CX, R14
	SUBQ AX, R14
	ADDQ $7, R14
	LANE(Z6, Z10)
	MOVQ R11, 0(DI)
	MOVQ R12, 8(DI)
	VZEROUPPER
	RET

// func zigRectsAVX512(s *pcg, z *float64, n int, t *zigVec) (done int)
TEXT ·zigRectsAVX512(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ t+24(FP), DX
	XORQ AX, AX
	CONSTS
	MOVQ $0x7f, R8
	VPBROADCASTQ R8, Z27
	LEAQ 256(DX), R9 // kw
	// Z0:Z1, the last vector's states (at first the state itself in
	// every lane); Z6:Z10 this vector's.
	INIT

loop:
	LEAQ 8(AX), R13
	CMPQ R13, CX
	JGT last
	// The next vector's states, then this one's outputs.
	LCG(Z6, Z10, Z16, Z17)
	DXSM(Z6, Z10)
	// The rectangle: b, j, k[b], w[b].
	VPSRLQ $32, Z11, Z13
	VPANDQ Z27, Z13, Z13
	KXNORW K2, K2, K2
	VPGATHERQQ (R9)(Z13*8), K2, Z15 // k[b] | w[b]<<32
	VPMOVQD Z11, Y14
	VPMOVQD Z15, Y13
	VPSRLQ $32, Z15, Z15
	VPMOVQD Z15, Y31
	VPABSD Y14, Y12
	VPCMPUD $1, Y13, Y12, K4 // |j| < k[b]
	VCVTDQ2PD Y14, Z18
	VCVTPS2PD Y31, Z19
	VMULPD Z19, Z18, Z18
	VMOVUPD Z18, (SI)(AX*8)
	KMOVB K4, R13
	CMPQ R13, $0xff
	JNE partial
	ADDQ $8, AX
	VMOVDQA64 Z6, Z0
	VMOVDQA64 Z10, Z1
	VMOVDQA64 Z16, Z6
	VMOVDQA64 Z17, Z10
	JMP loop

partial:
	// p, the lanes accepted from the first: the state is lane p-1's,
	// or the last vector's last lane's where p is 0.
	NOTQ R13
	BSFQ R13, R14
	ADDQ R14, AX
	DECQ R14
	JS last
	LANE(Z6, Z10)
	JMP out

last:
	MOVQ $7, R14
	LANE(Z0, Z1)

out:
	MOVQ R11, 0(DI)
	MOVQ R12, 8(DI)
	MOVQ AX, done+32(FP)
	VZEROUPPER
	RET
