//go:build !purego

package core

//go:noescape
func combineF32AVX512(y *float64, x *float32, off *int64, a *float64, nj, n int)

//go:noescape
func combine2F32AVX512(y, z *float64, x *float32, off *int64, a, b *float64, nj, n int)
