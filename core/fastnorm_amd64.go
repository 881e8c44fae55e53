//go:build !purego

package core

import (
	"math"

	"golang.org/x/sys/cpu"
)

// useAVX512 selects the assembly kernels of fastnorm_amd64.s: the CPU and
// the operating system support AVX-512F. Tests turn it off to compare them
// with the Go kernels.
var useAVX512 = cpu.X86.HasAVX512F

// kc holds the assembly kernels' constants (fastnorm_amd64.s names them).
var kc = [...]float64{
	1, 4, 0.5, -0.5, 40, -746, log2e, ln2Hi, ln2Lo, tailV0, tailScale, 7,
	0x1p52, sqrt2, 2, tailMax, 0.180625, -0.425, 1.6, 5, 0, math.Inf(-1),
	0x1p-1074,
}

// kbits holds the sign-bit masks.
var kbits = [...]uint64{1<<63 - 1, 1 << 63}

//go:noescape
func tailWeightsAVX512(lo, t, c, lg, logw *float64, n int) (mx float64, special int)

//go:noescape
func tailDrawsAVX512(z, lo, t, c, u *float64, n int) (special int)

//go:noescape
func expSumsAVX512(x *float64, n int, mx float64) (s1, s2 float64)

//go:noescape
func phiAccumulateAVX512(acc, mu, isig *float64, n int, w float64)
