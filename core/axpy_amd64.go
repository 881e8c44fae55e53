//go:build !purego

package core

//go:noescape
func axpy2AVX512(y, z, x *float64, n int, a, b float64)

//go:noescape
func axpyAVX512(y, x *float64, n int, a float64)

//go:noescape
func axpy2AVX2(y, z, x *float64, n int, a, b float64)

//go:noescape
func axpyAVX2(y, x *float64, n int, a float64)

//go:noescape
func combineAVX512(y, x *float64, off *int64, a *float64, nj, n int)

//go:noescape
func combine2AVX512(y, z, x *float64, off *int64, a, b *float64, nj, n int)

//go:noescape
func spreadAVX512(x, v *float64, off *int64, a *float64, nj, n int)
