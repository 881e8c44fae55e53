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
