//go:build openblas && cgo

// Package cblas binds OpenBLAS's cblas_dgemm for internal/gemm's openblas
// path (a build with -tags openblas, cgo and libopenblas-dev). It is a
// package of its own because a package that uses cgo cannot hold Go
// assembly.
package cblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

// SetThreads sets the number of OpenBLAS's own threads (for every caller
// in the process).
func SetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// DgemmNT computes C = A B' + beta C, row-major: A m x k (stride lda), B
// n x k (stride ldb), C m x n (stride ldc).
func DgemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	C.cblas_dgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(m), C.blasint(n), C.blasint(k),
		1, (*C.double)(&a[0]), C.blasint(lda), (*C.double)(&b[0]), C.blasint(ldb),
		C.double(beta), (*C.double)(&c[0]), C.blasint(ldc))
}
