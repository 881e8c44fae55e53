//go:build !amd64 || purego

package core

func axpy2AVX512(y, z, x *float64, n int, a, b float64) {
	panic("core: no assembly kernels on this architecture")
}

func axpyAVX512(y, x *float64, n int, a float64) {
	panic("core: no assembly kernels on this architecture")
}

func axpy2AVX2(y, z, x *float64, n int, a, b float64) {
	panic("core: no assembly kernels on this architecture")
}

func axpyAVX2(y, x *float64, n int, a float64) {
	panic("core: no assembly kernels on this architecture")
}

func combineAVX512(y, x *float64, off *int64, a *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}

func combine2AVX512(y, z, x *float64, off *int64, a, b *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}

func spreadAVX512(x, v *float64, off *int64, a *float64, nj, n int) {
	panic("core: no assembly kernels on this architecture")
}
