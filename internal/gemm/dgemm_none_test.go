//go:build !openblas || !cgo

package gemm

// dgemmDirect is OpenBLAS's cblas_dgemm, in a build with -tags openblas.
var dgemmDirect func(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int)
