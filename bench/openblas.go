//go:build openblas && cgo

package bench

// OpenBLAS, for comparison in the GEMM benchmarks only (gpc itself never
// links it): go test -tags openblas ./bench -run '^$' -bench GEMM, with
// libopenblas-dev installed.

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

func init() { openBLAS = cblas{} }

type cblas struct{}

func (cblas) setThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// dgemmNT is C = A B' in float64, row-major.
func (cblas) dgemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	C.cblas_dgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(m), C.blasint(n), C.blasint(k),
		1, (*C.double)(&a[0]), C.blasint(lda), (*C.double)(&b[0]), C.blasint(ldb), 0, (*C.double)(&c[0]), C.blasint(ldc))
}

// sgemmNT is C = A B' in float32, row-major.
func (cblas) sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	C.cblas_sgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(m), C.blasint(n), C.blasint(k),
		1, (*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb), 0, (*C.float)(&c[0]), C.blasint(ldc))
}
