//go:build !purego

package core

import (
	"math"

	"golang.org/x/sys/cpu"
)

// vecSupported lists the assembly paths the CPU and the operating system
// support (cpu.X86 checks both), fastest first, then the Go kernels.
func vecSupported() []vecPath {
	var ps []vecPath
	if cpu.X86.HasAVX512F {
		ps = append(ps, vecAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ps = append(ps, vecAVX2)
	}
	return append(ps, vecGeneric)
}

// kc holds the AVX-512 kernels' constants (fastnorm_amd64.s names them).
var kc = [...]float64{
	1, 4, 0.5, -0.5, 40, -746, log2e, ln2Hi, ln2Lo, tailV0, tailScale, 7,
	0x1p52, sqrt2, 2, tailMax, 0.180625, -0.425, 1.6, 5, 0, math.Inf(-1),
	0x1p-1074,
}

// kbits holds the sign-bit masks.
var kbits = [...]uint64{1<<63 - 1, 1 << 63}

// kv holds the AVX2 kernels' constants, each repeated in the four lanes of
// a vector (fastnorm_avx2_amd64.s names them by their offsets, 32 bytes
// apart): kc's, then the bit masks and the constants of the emulated
// VSCALEFPD, VGETEXPPD and VGETMANTPD (see scale2 and expMant) and the
// tail's row stride, then the polynomials' coefficients in the order of
// their Horner steps: expPoly, logPoly and AS 241's six.
var kv = func() (v [4 * 102]float64) {
	c := append([]float64(nil), kc[:]...)
	c = append(c,
		math.Float64frombits(1<<63-1), math.Float64frombits(1<<63), math.Float64frombits(1<<52-1),
		0x1p52+1023, 0x1p-1022, 0x1p64, 64, -1022, 0x1p-64, 128)
	c = append(c, expPoly[:]...)
	c = append(c, logPoly[:]...)
	for _, t := range []*[8]float64{&as241CentralNum, &as241CentralDen, &as241NearNum, &as241NearDen, &as241FarNum, &as241FarDen} {
		c = append(c, t[:]...)
	}
	if 4*len(c) != len(v) {
		panic("core: kv has the wrong length")
	}
	for i, x := range c {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = x, x, x, x
	}
	return v
}()

// tailRows is tailPoly by pieces: the 11 coefficients of piece k, highest
// power first, in tailRows[k][:11], so that the AVX2 kernels read one
// particle's coefficients from one row.
var tailRows = func() (r [8][16]float64) {
	for j := range tailPoly {
		for k := range 8 {
			r[k][j] = tailPoly[j][k]
		}
	}
	return r
}()

//go:noescape
func tailWeightsAVX512(lo, t, c, lg, logw *float64, n int) (mx float64, special int)

//go:noescape
func tailDrawsAVX512(z, lo, t, c, u *float64, n int) (special int)

//go:noescape
func expSumsAVX512(x *float64, n int, mx float64) (s1, s2 float64)

//go:noescape
func phiAccumulateAVX512(acc, mu, isig *float64, n int, w float64)

// The AVX2 kernels take a multiple of 4 particles (of 8 for tailWeightsAVX2
// and expSumsAVX2, which leaves its eight lane sums in a and b); the Go
// kernels do the rest.

//go:noescape
func tailWeightsAVX2(lo, t, c, lg, logw *float64, n int) (mx float64, special int)

//go:noescape
func tailDrawsAVX2(z, lo, t, c, u *float64, n int) (special int)

//go:noescape
func expSumsAVX2(x *float64, n int, mx float64, a, b *[8]float64)

//go:noescape
func phiAccumulateAVX2(acc, mu, isig *float64, n int, w float64)
