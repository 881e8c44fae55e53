//go:build openblas && cgo

package gemm

import "github.com/gpc-mc/gpc/internal/gemm/cblas"

// dgemmDirect is OpenBLAS's cblas_dgemm on the whole product, on one
// thread (the openblas path's init sets it), for BenchmarkPaths'
// reference row: the rate the kernels are measured against.
var dgemmDirect = func(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	cblas.DgemmNT(m, n, k, a, lda, b, ldb, 0, c, ldc)
}
