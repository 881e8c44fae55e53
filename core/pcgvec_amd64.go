//go:build !purego

package core

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The generator's outputs eight at a time, for the particles' normal
// numbers (zigRects) and Latin uniforms (pcgOutputs): eight lanes of
// AVX-512 hold the states of the stream's next eight outputs, each a map
// of steps from the state (jumpOf), and step by the map of eight. Every
// output is the one pcg.next gives in turn, bit for bit.

// haveZigAVX512 reports whether the kernels can run: they need AVX-512's
// 64-bit products (DQ) and its 256-bit forms (VL).
var haveZigAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

// zigVec holds the kernels' constants: the generator's maps of one to
// eight steps (jumpOf), lane i's in entry i, and the ziggurat's k and w
// tables (zig's), strip b's two in kw[b] (k in the low 32 bits, w's bits
// in the high), for one gather.
type zigVec struct {
	mulHi, mulLo, incHi, incLo [8]uint64
	kw                         [128]uint64
}

var zv = func() *zigVec {
	v := new(zigVec)
	for i := range 8 {
		j := jumpOf(i + 1)
		v.mulHi[i], v.mulLo[i], v.incHi[i], v.incLo[i] = j.mulHi, j.mulLo, j.incHi, j.incLo
	}
	for b := range v.kw {
		v.kw[b] = uint64(zig.k[b]) | uint64(math.Float32bits(zig.w[b]))<<32
	}
	return v
}()

// zigRectsAVX512 runs NormFloats' usual case eight numbers at a time: from
// the state s, the eight next outputs (each lane's state from s by its
// own map of steps, so the lanes hold the stream's next eight outputs in
// order), each one's strip and abscissa, and the rectangle's test and
// value (rect), written to z. It goes on while the n - done numbers left
// hold a vector of eight and stops at the first number outside its
// rectangle; it returns done, the numbers accepted (their values in
// z[:done], those after them written but not meant), and leaves s at the
// state after their outputs: the next output is the one outside, or the
// next vector's first. (pcgvec_amd64.s.)
//
//go:noescape
func zigRectsAVX512(s *pcg, z *float64, n int, t *zigVec) (done int)

// zigVector reports whether NormFloats' vector path (zigRects) runs.
func zigVector() bool { return haveZigAVX512 && vec() == vecAVX512 }

// zigRects is NormFloats' vector path: the numbers of z that lie in their
// rectangles from the first on, done of them, g advanced by their outputs
// (0 where the CPU lacks the kernel or z holds fewer than eight).
func zigRects(g *pcg, z []float64) int {
	if !zigVector() || len(z) < 8 {
		return 0
	}
	return zigRectsAVX512(g, (*float64)(unsafe.Pointer(&z[0])), len(z), zv)
}

// pcgOutputsAVX512 writes the next n outputs of the stream from s (n > 0)
// to dst, and then as many more as fill its last vector of eight
// (dst holds n rounded up to eight), and leaves s at the state after the
// first n. (pcgvec_amd64.s.)
//
//go:noescape
func pcgOutputsAVX512(s *pcg, dst *uint64, n int, t *zigVec)

// pcgOutputs sets dst[:n] to the next n outputs of s's stream and
// advances s past them, where the vector path runs (dst holding n
// rounded up to eight), and reports whether it did.
func pcgOutputs(s *pcg, dst []uint64, n int) bool {
	if !haveZigAVX512 || vec() != vecAVX512 || n <= 0 || len(dst) < (n+7)&^7 {
		return false
	}
	pcgOutputsAVX512(s, &dst[0], n, zv)
	return true
}
