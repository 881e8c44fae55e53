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
