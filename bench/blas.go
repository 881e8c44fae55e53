package bench

// externalBLAS is a BLAS linked in for comparison (OpenBLAS with the build
// tag openblas): the GEMM benchmarks report its rates beside gpc's.
type externalBLAS interface {
	setThreads(n int)
	dgemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int)
	sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)
}

// openBLAS is OpenBLAS when built with -tags openblas, else nil.
var openBLAS externalBLAS
