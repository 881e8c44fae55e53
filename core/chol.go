package core

import (
	"math"
	"runtime"
	"sync"

	"github.com/gpc-mc/gpc/internal/gemm"

	"gonum.org/v1/gonum/floats"
)

// cholBlock is the panel width of the blocked Cholesky factorisation: the
// trailing update of each panel is a product with inner dimension
// cholBlock on internal/gemm's kernel, the work inside a panel n
// cholBlock / 2 multiply-adds per column.
const cholBlock = 96

// cholRows is the width of the column blocks of the trailing update: the
// lower triangle is updated block column by block column, each a product
// of cholRows columns from the block's first row down (the part above the
// diagonal of the diagonal block is computed and discarded).
const cholRows = 384

// cholPivot is what a pivoted factorisation needs: pick(i) returns the
// position (>= i) of the variable to place at position i, done(i, lii)
// is told its pivot, and column(i, p, lpi) each entry below it, in
// increasing p for a given i (calls for different p may run concurrently
// and must touch only what belongs to p). swap(i, j) exchanges the
// caller's per-position state; check(i, d) accepts the conditional
// variance d at position i or returns false to stop the factorisation.
type cholPivot struct {
	pick   func(i int) int
	swap   func(i, j int)
	check  func(i int, d float64) bool
	done   func(i int, lii float64)
	column func(i, p int, lpi float64)
}

// cholesky factorises the symmetric matrix whose lower triangle w holds
// (n x n, row-major; the upper triangle is ignored and set to zero) in
// place, w = L L', L lower triangular, with optional symmetric pivoting:
//
//	P w P' = L L',
//
// right-looking and blocked: each panel of cholBlock columns is factorised
// column by column against the trailing matrix as the previous panels left
// it (the pivots chosen as it goes, as LAPACK's dpstrf), then the trailing
// lower triangle takes the panel's rank-cholBlock update, -L21 L21', on
// internal/gemm's kernel with up to workers goroutines. The n^3/6
// multiply-adds run in that product except n^2 cholBlock / 2 of them.
// Every entry is computed in an order fixed by n alone: the result does
// not depend on workers.
//
// It returns the position at which check refused a pivot (or, with no
// pivoting, the first conditional variance that is not positive) and -1 on
// success; w is then partly overwritten.
//
// References: E. Anderson et al. (1999), LAPACK Users' Guide, 3rd ed.,
// SIAM (xPOTRF, xPSTRF); N. J. Higham (2002), Accuracy and Stability of
// Numerical Algorithms, 2nd ed., SIAM, section 10.3.
func cholesky(w []float64, n int, pv *cholPivot, workers int) int {
	return choleskyCols(w, n, n, pv, workers)
}

// PartialCholesky factorises the first cols columns of the symmetric
// matrix whose lower triangle w holds (n x n, row-major), in place and
// without pivoting: with w = [W11 W21'; W21 W22], W11 of order cols,
//
//	W11 = L11 L11',   L21 = W21 L11^-T,
//
// and the trailing lower triangle is left holding the Schur complement
// W22 - L21 L21'. The upper triangle is set to zero. cols = n is the
// whole factorisation. The same blocked kernels as the dense path's
// factorisation, on up to workers goroutines; the result does not depend
// on workers. It returns the first position (below cols) whose
// conditional variance is not positive, w then partly overwritten, and -1
// on success.
func PartialCholesky(w []float64, n, cols, workers int) int {
	if cols < 0 || cols > n {
		panic("core: PartialCholesky: cols out of range")
	}
	return choleskyCols(w, n, cols, nil, workers)
}

// choleskyCols is cholesky stopped after the first cols columns, the
// trailing matrix then holding their Schur complement (PartialCholesky).
func choleskyCols(w []float64, n, cols int, pv *cholPivot, workers int) int {
	if len(w) < n*n {
		panic("core: cholesky: w too short")
	}
	workers = max(1, workers)
	var ws gemm.Workspace
	neg := make([]float64, n*cholBlock)
	for k0 := 0; k0 < cols; k0 += cholBlock {
		k1 := min(cols, k0+cholBlock)
		for i := k0; i < k1; i++ {
			if pv != nil {
				if j := pv.pick(i); j != i {
					swapSym(w, n, i, j)
					pv.swap(i, j)
				}
			}
			row := w[i*n+k0 : i*n+i]
			d := w[i*n+i] - floats.Dot(row, row)
			if pv != nil && !pv.check(i, d) || pv == nil && !(d > 0) {
				return i
			}
			lii := math.Sqrt(d)
			w[i*n+i] = lii
			if pv != nil {
				pv.done(i, lii)
			}
			panelColumn(w, n, k0, i, lii, pv, workers)
		}
		if k1 == n {
			break
		}
		// The trailing lower triangle, rows and columns k1..n-1, takes
		// -L[k1:, k0:k1] L[k1:, k0:k1]'.
		nb := k1 - k0
		for p := k1; p < n; p++ {
			src, dst := w[p*n+k0:p*n+k1], neg[(p-k1)*nb:(p-k1)*nb+nb]
			for k, v := range src {
				dst[k] = -v
			}
		}
		for c0 := k1; c0 < n; c0 += cholRows {
			c1 := min(n, c0+cholRows)
			ws.NT(n-c0, c1-c0, nb, neg[(c0-k1)*nb:], nb, w[c0*n+k0:], n, w[c0*n+c0:], n, true, workers)
		}
	}
	for i := range n {
		clear(w[i*n+i+1 : i*n+n])
	}
	return -1
}

// panelColumn computes column i of L below the diagonal, L[p][i] =
// (w[p][i] - L[p][k0:i] . L[i][k0:i]) / lii for p > i, w holding the
// trailing matrix as the panels before k0 left it, the rows split in
// fixed chunks over workers goroutines.
func panelColumn(w []float64, n, k0, i int, lii float64, pv *cholPivot, workers int) {
	const chunk = 256
	row := w[i*n+k0 : i*n+i]
	rows := func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			lpi := (w[p*n+i] - floats.Dot(w[p*n+k0:p*n+i], row)) / lii
			w[p*n+i] = lpi
			if pv != nil {
				pv.column(i, p, lpi)
			}
		}
	}
	if workers == 1 || (n-i)*(i-k0+4) < 1<<16 {
		rows(i+1, n)
		return
	}
	var wg sync.WaitGroup
	next := i + 1
	var mu sync.Mutex
	for range min(workers, (n-i+chunk-1)/chunk) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				p0 := next
				next += chunk
				mu.Unlock()
				if p0 >= n {
					return
				}
				rows(p0, min(n, p0+chunk))
			}
		}()
	}
	wg.Wait()
}

// swapSym exchanges positions i < j of the symmetric matrix whose lower
// triangle w holds (rows and columns both), touching the lower triangle
// only, as LAPACK's dpstrf: the rows' leading parts, the diagonal, the
// segment between them (row j against column i) and the columns below j.
func swapSym(w []float64, n, i, j int) {
	if i > j {
		i, j = j, i
	}
	ri, rj := w[i*n:i*n+i], w[j*n:j*n+i]
	for k := range ri {
		ri[k], rj[k] = rj[k], ri[k]
	}
	w[i*n+i], w[j*n+j] = w[j*n+j], w[i*n+i]
	for c := i + 1; c < j; c++ {
		w[c*n+i], w[j*n+c] = w[j*n+c], w[c*n+i]
	}
	for r := j + 1; r < n; r++ {
		w[r*n+i], w[r*n+j] = w[r*n+j], w[r*n+i]
	}
}

// cholWorkers is the goroutine count of the preparation's factorisations.
func cholWorkers() int { return runtime.GOMAXPROCS(0) }

// invDiag returns the diagonal of the inverse of the symmetric positive
// definite n x n matrix cov (as symSource reads it),
//
//	(cov^-1)_ii = |L^-1 e_i|^2,   cov = L L',
//
// the squared norms of the columns of L^-1: the blocked factorisation,
// then, for each block of cholRows columns starting at r0, the triangular
// solves restricted to L[r0:, r0:] (the columns' entries above r0 are
// zero), n^3/3 multiply-adds in all, on internal/gemm's kernel. It returns
// ok = false if cov is not positive definite.
func invDiag(cov symSource) (d []float64, ok bool) {
	n := cov.n
	w := make([]float64, n*n)
	cov.lowerTo(w)
	workers := cholWorkers()
	if cholesky(w, n, nil, workers) >= 0 {
		return nil, false
	}
	d = make([]float64, n)
	var ws gemm.Workspace
	x := make([]float64, cholRows*n)
	for r0 := 0; r0 < n; r0 += cholRows {
		r1 := min(n, r0+cholRows)
		m := n - r0
		x = x[:(r1-r0)*m]
		clear(x)
		for r := r0; r < r1; r++ {
			x[(r-r0)*m+r-r0] = 1
		}
		solveRowsStrided(x, r1-r0, m, w[r0*n+r0:], m, n, &ws, workers)
		for r := r0; r < r1; r++ {
			row := x[(r-r0)*m : (r-r0)*m+m]
			d[r] = floats.Dot(row, row)
		}
	}
	return d, true
}
