//go:build !purego

package core

import "unsafe"

//go:noescape
func combineF32AVX512(y *float64, x *float32, off *int64, a *float64, nj, n int)

//go:noescape
func combine2F32AVX512(y, z *float64, x *float32, off *int64, a, b *float64, nj, n int)

//go:noescape
func spreadF32AVX512(x *float32, v *float64, off *int64, a *float64, nj, n int)

// f32Lanes[k] is the mask of the first k lanes of a vector of eight.
var f32Lanes = [9]uint8{0, 1, 3, 7, 15, 31, 63, 127, 255}

// havePrefetch: prefetchSpan is an instruction loop here.
const havePrefetch = true

// prefetchSpan prefetches the cache lines of the n bytes from p (n > 0).
//
//go:noescape
func prefetchSpan(p unsafe.Pointer, n int)

// prefetchRowSpans prefetches, for each of the nr rows of float32 values
// at offsets off from x (of nx values) that lie within x to their value
// hi, the cache lines that start within its values lo to hi, and the
// line of its first byte if lo is 0: consecutive spans of a row hint each
// of its lines once (0 <= lo < hi).
//
//go:noescape
func prefetchRowSpans(x unsafe.Pointer, nx int, off *int64, nr, lo, hi int)
