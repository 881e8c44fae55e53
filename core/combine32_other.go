//go:build !amd64 || purego

package core

import "unsafe"

func combineF32AVX512(y *float64, x *float32, off *int64, a *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}

func combine2F32AVX512(y, z *float64, x *float32, off *int64, a, b *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}

func spreadF32AVX512(x *float32, v *float64, off *int64, a *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}

// havePrefetch: no prefetch instruction here.
const havePrefetch = false

func prefetchSpan(p unsafe.Pointer, n int) {}

func prefetchRowSpans(x unsafe.Pointer, nx int, off *int64, nr, lo, hi int) {}
