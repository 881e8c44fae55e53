package core

import (
	"math"
	"unsafe"
)

// CombineF32 is Combine on rows of float32 values: y[i] += sum_j a[j]
// x[off[j]+i], each x value converted to float64 (exactly) before its
// fused multiply-add, in the order of j: the same bits on every vector
// path. A sequential estimator that stores its particles' values in
// float32 (half the memory traffic of its steps) reads them with it. It
// panics if a row is out of x's range.
func CombineF32(y []float64, x []float32, off []int64, a []float64) {
	n := len(y)
	a = a[:len(off)]
	checkRowsF32(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		combineF32AVX512(&y[0], &x[0], &off[0], &a[0], len(off), n)
		return
	}
	for j, o := range off {
		row := x[o : o+int64(n)]
		aj := a[j]
		for i, v := range row {
			y[i] = math.FMA(aj, float64(v), y[i])
		}
	}
}

// Combine2F32 is CombineF32 of a into y and of b into z, reading the rows
// once.
func Combine2F32(y, z []float64, x []float32, off []int64, a, b []float64) {
	n := len(y)
	z, a, b = z[:n], a[:len(off)], b[:len(off)]
	checkRowsF32(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		combine2F32AVX512(&y[0], &z[0], &x[0], &off[0], &a[0], &b[0], len(off), n)
		return
	}
	for j, o := range off {
		row := x[o : o+int64(n)]
		aj, bj := a[j], b[j]
		for i, v := range row {
			f := float64(v)
			y[i] = math.FMA(aj, f, y[i])
			z[i] = math.FMA(bj, f, z[i])
		}
	}
}

// SpreadF32 is Spread on rows of float32 values: for each j in order, it
// subtracts a[j] v from the row of len(v) values of x at offset off[j],
// each value converted to float64 (exactly), updated by one fused
// multiply-add and rounded back to float32 (to nearest): x[off[j]+i] =
// float32(fma(-a[j], v[i], float64(x[off[j]+i]))), the same bits on every
// vector path. The rows must not overlap. It panics if a row is out of
// x's range.
func SpreadF32(x []float32, off []int64, a, v []float64) {
	n := len(v)
	a = a[:len(off)]
	checkRowsF32(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		spreadF32AVX512(&x[0], &v[0], &off[0], &a[0], len(off), n)
		return
	}
	for j, o := range off {
		row := x[o : o+int64(n)]
		aj := -a[j]
		for i, vi := range v {
			row[i] = float32(math.FMA(aj, vi, float64(row[i])))
		}
	}
}

// checkRowsF32 panics if a row of n values at an offset of off is not
// within x.
func checkRowsF32(x []float32, off []int64, n int) {
	for _, o := range off {
		if o < 0 || o+int64(n) > int64(len(x)) {
			panic("core: CombineF32: a row is out of range")
		}
	}
}

// PrefetchRowsF32 asks the CPU to bring the rows of n float32 values of x
// at the offsets off (a later CombineF32's or Combine2F32's) into its
// caches, and returns at once: a hint that changes no value, so that a
// sequential estimator can fetch its next step's neighbours' rows, which
// are scattered in memory, while it finishes the current step. It does
// nothing where the build has no assembly kernels, and skips a row that is
// not within x.
func PrefetchRowsF32(x []float32, off []int64, n int) {
	if n <= 0 || len(off) == 0 || !havePrefetch {
		return
	}
	for _, o := range off {
		if o >= 0 && o+int64(n) <= int64(len(x)) {
			prefetchSpan(unsafe.Pointer(&x[o]), 4*n)
		}
	}
}

// PrefetchRowSpansF32 is PrefetchRowsF32 for values lo to hi
// (exclusive) of each row, so that a step can spread its hints for the
// next step's rows over its own parts, a span of every row after each: of
// a row's cache lines it asks for those that start within the span (and
// the row's first for a span from 0), so that consecutive spans ask for
// each line once. A row not within x, to its value hi, is skipped.
func PrefetchRowSpansF32(x []float32, off []int64, lo, hi int) {
	if lo < 0 || hi <= lo || len(off) == 0 || len(x) == 0 || !havePrefetch {
		return
	}
	prefetchRowSpans(unsafe.Pointer(&x[0]), len(x), &off[0], len(off), lo, hi)
}

// Prefetch asks the CPU to bring the values of x into its caches and
// returns at once: PrefetchRowsF32's hint for one span of any values, for
// a scattered update whose targets are known a step ahead. It changes no
// value, and does nothing where the build has no assembly kernels.
func Prefetch[T any](x []T) {
	if len(x) == 0 || !havePrefetch {
		return
	}
	// The span's address goes to the instruction loop as it is (no
	// conversion to another element type, which the race detector's
	// pointer checks refuse for a span shorter than that type).
	prefetchSpan(unsafe.Pointer(&x[0]), len(x)*int(unsafe.Sizeof(x[0])))
}
