//go:build openblas && cgo

package gemm

// The openblas path: the products go to OpenBLAS's cblas_dgemm (a build
// with -tags openblas, cgo and libopenblas-dev). OpenBLAS sums in its own
// order, so this path's results are not the other paths' bits.

import (
	"sync"

	"github.com/gpc-mc/gpc/internal/gemm/cblas"
)

// blasKernel is OpenBLAS's path.
var blasKernel = &kernel{name: "openblas", product: productBLAS}

// OpenBLAS runs single-threaded: the products share their rows among
// goroutines as the other paths do, and the callers that run products
// concurrently (one per particle group) do not oversubscribe the cores.
func init() { cblas.SetThreads(1) }

// blasRows is the number of rows of C per call of cblas_dgemm: OpenBLAS's
// sums depend on where a row falls in its blocking, so the rows are cut
// the same whatever the number of workers (the results do not depend on
// it, as on the other paths).
const blasRows = 256

// productBLAS computes C by cblas_dgemm on blocks of blasRows rows, the
// blocks shared among up to workers goroutines. A or C stored by groups of
// 8 columns are copied to and from row-major scratch.
func productBLAS(w *Workspace, m, n, k int, a []float64, lda, ag int, b []float64, ldb int, c []float64, ldc, cg int, add bool, workers int) {
	workers = max(1, min(workers, m*n*k/minParallel))
	copyA, copyC := ag != 8, cg != 8
	size := 0
	if copyA {
		size += m * k
	}
	if copyC {
		size += m * n
	}
	if cap(w.ab) < size {
		w.ab = make([]float64, size)
	}
	rowsA, rowsC := w.ab[:0], w.ab[:0]
	if copyA {
		rowsA = w.ab[:m*k]
	}
	if copyC {
		rowsC = w.ab[size-m*n : size]
	}
	rows := func(i0, i1 int) {
		ar, ldar := a[i0*lda:], lda
		if copyA {
			ar, ldar = rowsA[i0*k:i1*k], k
			for i := i0; i < i1; i++ {
				for l := range k {
					ar[(i-i0)*k+l] = a[i*lda+l/8*ag+l%8]
				}
			}
		}
		cr, ldcr := c[i0*ldc:], ldc
		if copyC {
			cr, ldcr = rowsC[i0*n:i1*n], n
			if add {
				for i := i0; i < i1; i++ {
					for j := range n {
						cr[(i-i0)*n+j] = c[i*ldc+j/8*cg+j%8]
					}
				}
			}
		}
		beta := 0.0
		if add {
			beta = 1
		}
		cblas.DgemmNT(i1-i0, n, k, ar, ldar, b, ldb, beta, cr, ldcr)
		if copyC {
			for i := i0; i < i1; i++ {
				for j := range n {
					c[i*ldc+j/8*cg+j%8] = cr[(i-i0)*n+j]
				}
			}
		}
	}
	blocks := (m + blasRows - 1) / blasRows
	workers = min(workers, blocks)
	if workers == 1 {
		for bl := range blocks {
			rows(bl*blasRows, min(m, (bl+1)*blasRows))
		}
		return
	}
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bl := wk; bl < blocks; bl += workers {
				rows(bl*blasRows, min(m, (bl+1)*blasRows))
			}
		}()
	}
	wg.Wait()
}
