package core

import (
	"math"
	"runtime"
	"slices"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// Posterior is the probability that a test variable is positive given the
// box, with its Monte Carlo standard error.
type Posterior struct {
	P, SE float64
}

// Predict computes, for T test variables v* with covariances r (T x N,
// row-major, columns in the box's input order) with the box variables and
// variances vars, the posterior probability
//
//	P(v* > 0 | lower <= v <= upper) = E[ Phi(mu*(v) / sigma*) | box ],
//	mu*(v) = r' R^-1 (v - Mean) = w' z,   w = L^-1 r,   sigma*^2 = s - w'w,
//
// as the weighted mean of Phi(w' z_p / sigma*) over the particles of c (the
// paper's soft count, eq. RATIO-MS-2, eq. J-FIN for the classifier). Each
// group's weighted mean p_g is combined with weights a_g = n_g I_g (I_g the
// group's estimate of P), as a ratio estimator:
//
//	p = sum_g a_g p_g / sum_g a_g,
//	SE^2 = G/(G-1) sum_g a_g^2 (p_g - p)^2 / (sum_g a_g)^2,
//
// so that particle groups of any size and weight combine exactly, and the
// standard error comes from independent groups (NaN for one group), scaled
// by StudentScale(G) as Estimate's.
//
// dst must have length T. Predict returns an *InputError if a test
// variable's conditional variance sigma*^2 is not positive (its row does not
// belong with the box's covariance). It panics if the shapes disagree.
func Predict(dst []Posterior, f *Factor, c *Cloud, r, vars []float64) error {
	return PredictWith(dst, f, c, r, vars, PredictOptions{})
}

// PredictOptions selects how Predict counts.
type PredictOptions struct {
	// Hard selects the paper's hard count (Algorithm GPC-MC, eq. FRAC-VI-2)
	// instead of the soft count: each particle draws v* from
	// N(mu*, sigma*^2) and the posterior is the weighted fraction of draws
	// above 0. Its variance is larger; it is there to reproduce the paper.
	Hard bool
	// Seed and First derive the hard count's random streams: test row j of
	// the call draws from the stream of (Seed, First + j), so the result
	// does not depend on how the test rows are batched.
	Seed  uint64
	First int
	// Threads is the number of goroutines (0: GOMAXPROCS); the result does
	// not depend on it.
	Threads int
	// ClassDraws is PredictClasses' number of draws of the test utilities
	// per particle for more than three classes (0: DefaultClassDraws).
	ClassDraws int
}

// PredictWith is Predict with options.
func PredictWith(dst []Posterior, f *Factor, c *Cloud, r, vars []float64, opt PredictOptions) error {
	n, t := f.N, len(vars)
	if len(dst) != t || len(r) != t*n || c.N != n {
		panic("core: Predict shapes disagree")
	}
	if t == 0 {
		return nil
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	sizes, logZ := make([]int, len(c.Groups)), make([]float64, len(c.Groups))
	for g := range c.Groups {
		sizes[g], logZ[g] = c.Groups[g].Len(), c.Groups[g].LogZ
	}
	p, err := NewPredictor(f, sizes, r, vars, opt)
	if err != nil {
		return err
	}
	if slices.Max(logZ) == math.Inf(-1) {
		// Finish would say so, after the work.
		return errNoPosterior()
	}
	for g := range c.Groups {
		p.Add(g, 0, c.Groups[g].Z[:sizes[g]*n], c.Groups[g].LogW, nil)
	}
	return p.Finish(dst, logZ)
}

// testBasis returns, for T test variables with covariances r (T x N, input
// order) and variances vars, the t x n matrix w (row j for test j, in the
// Factor's order), offsets and conditional standard deviations (and their
// inverses) such that a particle's conditional mean of test variable j is
// offset_j + w_j . z (offset nil for zero), its conditional standard
// deviation sigma_j.
//
// For a Factor of R itself, w_j = L^-1 r_j (in the Factor's order) and
// sigma^2 = s - |w_j|^2. For MethodEP's Factor of Sigma (v = M + L z),
// w_j = L' x_j and offset_j = M . x_j with x_j = R^-1 r_j (in the Factor's
// order), from R's Cholesky factor. The triangular solves and the product
// run on internal/gemm's kernel (solveRowsTo, solveRowsUpper,
// mulLowerRight).
func (f *Factor) testBasis(r, vars []float64, t, workers int) (w, offset, sigma, isig []float64, err error) {
	n := f.N
	sigma, isig = make([]float64, t), make([]float64, t)
	var ws gemm.Workspace
	setSigma := func(y []float64) error {
		for j := range t {
			s2 := vars[j]
			for _, v := range y[j*n : j*n+n] {
				s2 -= v * v
			}
			if !(s2 > 0) {
				return inputErrorf(j, "test row %d: its variance %v given the train variables is %v, not positive: the row does not belong with this covariance", j, vars[j], s2)
			}
			sigma[j] = math.Sqrt(s2)
			isig[j] = 1 / sigma[j]
		}
		return nil
	}
	if f.ep == nil {
		// W = Rp L^-T (t x n): row j is w for test j.
		w = make([]float64, t*n)
		for j := range t {
			for k, v := range f.Perm {
				w[j*n+k] = r[j*n+v]
			}
		}
		solveRowsTo(w, t, f.L, n, &ws, workers)
		if err := setSigma(w); err != nil {
			return nil, nil, nil, nil, err
		}
		return w, nil, sigma, isig, nil
	}
	// Y = r rl^-T (rows y_j = rl^-1 r_j, input order; R = rl rl'), whose
	// norms give sigma; then X = Y rl^-1 in place (x_j = rl^-T y_j =
	// R^-1 r_j), and W = XP L with XP X's columns in the Factor's order.
	// The transposes these products need are taken a panel at a time, so
	// that nothing beside the t x n rows is N x N.
	rl := f.ep.rchol
	y := slices.Clone(r[:t*n])
	solveRowsTo(y, t, rl, n, &ws, workers)
	if err := setSigma(y); err != nil {
		return nil, nil, nil, nil, err
	}
	solveRowsUpper(y, t, rl, n, &ws, workers)
	// xp_j = x_j[Perm]; offset_j = M[Perm] . xp_j.
	xp := make([]float64, t*n)
	offset = make([]float64, t)
	for j := range t {
		row := xp[j*n : j*n+n]
		for k, v := range f.Perm {
			row[k] = y[j*n+v]
			offset[j] = math.FMA(f.ep.m[k], row[k], offset[j])
		}
	}
	w = y
	mulLowerRight(w, xp, t, f.L, n, &ws, workers)
	return w, offset, sigma, isig, nil
}

// upperBlock is the width of solveRowsUpper's column blocks, lowerPanel
// that of mulLowerRight's.
const (
	upperBlock = 64
	lowerPanel = 256
)

// solveRowsUpper overwrites each of the t rows w_j (length n, row-major)
// with l^-T w_j, l lower-triangular (n x n, row-major): X = W l^-1, the
// columns of X from the last block to the first. The block's update from
// the columns solved, X[:, j1:] l[j1:, j0:j1], runs on internal/gemm's
// kernel with l's block column transposed into a panel.
func solveRowsUpper(w []float64, t int, l []float64, n int, ws *gemm.Workspace, workers int) {
	nb := upperBlock
	upd := make([]float64, t*nb)
	panel := make([]float64, nb*n)
	diag := make([]float64, nb*nb) // diag[a][b] = l[j0+b][j0+a]: the block, transposed
	for j1 := n; j1 > 0; {
		j0 := max(0, j1-nb)
		b := j1 - j0
		if k := n - j1; k > 0 {
			// panel (b x k): panel[c][q] = l[j1+q][j0+c].
			p := panel[:b*k]
			for q := range k {
				row := l[(j1+q)*n+j0 : (j1+q)*n+j1]
				for c, v := range row {
					p[c*k+q] = v
				}
			}
			u := upd[:t*b]
			ws.NT(t, b, k, w[j1:], n, p, k, u, b, false, workers)
			for r := range t {
				row := w[r*n+j0 : r*n+j1]
				for c := range row {
					row[c] -= u[r*b+c]
				}
			}
		}
		d := diag[:b*b]
		for a := range b {
			for c := range b {
				d[a*b+c] = l[(j0+c)*n+j0+a]
			}
		}
		for r := range t {
			row := w[r*n+j0 : r*n+j1]
			for a := b - 1; a >= 0; a-- {
				s := row[a]
				da := d[a*b : a*b+b]
				for c := a + 1; c < b; c++ {
					s = math.FMA(-da[c], row[c], s)
				}
				row[a] = s / da[a]
			}
		}
		j1 = j0
	}
}

// mulLowerRight sets w (t x n) to x l, x t x n and l lower-triangular
// (n x n), both row-major: column block [c0, c1) of w is x[:, c0:]
// l[c0:, c0:c1] (l is zero above), on internal/gemm's kernel with l's
// block column transposed into a panel.
func mulLowerRight(w, x []float64, t int, l []float64, n int, ws *gemm.Workspace, workers int) {
	nb := lowerPanel
	panel := make([]float64, nb*n)
	for c0 := 0; c0 < n; c0 += nb {
		c1 := min(n, c0+nb)
		b, k := c1-c0, n-c0
		// panel (b x k): panel[c][q] = l[c0+q][c0+c], in tiles of 64 rows
		// of l so that the panel's rows stay in cache.
		p := panel[:b*k]
		for q0 := 0; q0 < k; q0 += 64 {
			q1 := min(k, q0+64)
			for c := range b {
				pc := p[c*k : c*k+k]
				for q := q0; q < q1; q++ {
					pc[q] = l[(c0+q)*n+c0+c]
				}
			}
		}
		ws.NT(t, b, k, x[c0:], n, p, k, w[c0:], n, false, workers)
	}
}
