package core

import (
	"errors"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// Score is the gradient of log P with respect to the covariance R of a box
// problem, estimated from a particle cloud by Fisher's identity: for
// v ~ N(m, R) restricted to the box,
//
//	d log P = 1/2 tr(A dR),   A = R^-1 E[(v - m)(v - m)' | box] R^-1 - R^-1,
//
// the expectation under the truncated normal, which the cloud's weighted
// particles estimate. With v - m = L z (the Factor's order, R = L L'),
// R^-1 (v - m) = L^-T z, so each particle costs one triangular solve.
//
// Each independent particle group g gives its own estimate A_g, and the
// groups are combined as the posterior expectations of prediction are: by
// their estimates of P, weight w_g = n_g I_g / sum_h n_h I_h. A scalar
// derivative t = 1/2 tr(A dR) is then the ratio estimate sum_g w_g t_g,
// with the delta-method standard error
//
//	se^2 = G/(G-1) sum_g w_g^2 (t_g - t)^2,
//
// (Contract). The gradient is the exact derivative of log P, not of the
// estimate of log P at fixed random numbers: the two agree in expectation.
//
// References: R. A. Fisher (1925); the identity d log Z = E_post[d log
// joint] as used for truncated normals by e.g. Botev (2017), and for GP
// classification's marginal likelihood by Rasmussen and Williams (2006),
// eq. 5.9, with EP's Gaussian in place of the exact posterior.
type Score struct {
	N int
	// A holds each group's estimate A_g, N x N row-major in the box's
	// input order (symmetric).
	A [][]float64
	// Weight holds the groups' weights w_g, summing to 1.
	Weight []float64
}

// ErrScoreMethod is returned by NewScore for a cloud of the paper's
// methods, which keep no weights.
var ErrScoreMethod = errors.New("core: the gradient needs a cloud of method smc, met or ep")

// NewScore estimates the Score of the box prepared in f from the cloud c
// that Estimate returned for it (Config.Keep) with method: MethodSMC,
// MethodMET or MethodEP (ErrScoreMethod for the paper's methods). For
// MethodEP's Factor of EP's Sigma (v - m = M + L z in the Factor's order),
// R^-1 (v - m) comes from R's own factor. It panics if the cloud's
// dimension is not f's.
func NewScore(f *Factor, c *Cloud, method Method) (*Score, error) {
	var a [][]float64
	s, err := NewScoreBatches(f, c, method, len(c.Groups), func(_ int, ag [][]float64) { a = ag })
	if err != nil {
		return nil, err
	}
	s.A = a
	return s, nil
}

// NewScoreBatches is NewScore for a covariance too large to hold an N x N
// A_g for every group at once: it hands fn the groups' A_g in order, batch
// groups at a time (the last batch may be smaller; first is the index of
// its first group), in buffers it reuses for the next batch, and returns
// the Score with its Weight only (A nil). It panics if batch < 1.
func NewScoreBatches(f *Factor, c *Cloud, method Method, batch int, fn func(first int, a [][]float64)) (*Score, error) {
	if method != MethodSMC && method != MethodMET && method != MethodEP || (method == MethodEP) != (f.ep != nil) {
		return nil, ErrScoreMethod
	}
	if batch < 1 {
		panic("core: NewScoreBatches: batch < 1")
	}
	n := f.N
	if c.N != n {
		panic("core: cloud and factor differ in dimension")
	}
	// The working factor lr of R (R = lr lr' in the order perm): the
	// Factor's own, or for MethodEP R's in the input order.
	lr, perm := f.L, f.Perm
	if f.ep != nil {
		lr = f.ep.rchol
		perm = make([]int, n)
		for i := range perm {
			perm[i] = i
		}
	}
	// R^-1 = Y Y' in the working order, Y = lr^-T (the identity's rows
	// solved against lr'), on internal/gemm's kernel.
	workers := cholWorkers()
	var ws gemm.Workspace
	y := make([]float64, n*n)
	for i := range n {
		y[i*n+i] = 1
	}
	solveRowsTo(y, n, lr, n, &ws, workers)
	rinv := make([]float64, n*n)
	symProductTo(rinv, y, n, n, &ws, workers)

	groups := len(c.Groups)
	s := &Score{N: n}
	logZ := make([]float64, groups)
	sizes := make([]int, groups)
	sec := make([]float64, n*n)
	var w, wt []float64
	bufs := make([][]float64, min(batch, groups))
	for first := 0; first < groups; first += batch {
		last := min(groups, first+batch)
		for g := first; g < last; g++ {
			grp := &c.Groups[g]
			m := grp.Len()
			logZ[g], sizes[g] = grp.LogZ, m
			// Y: row p is lr^-1 (v_p - m), scaled by sqrt(w_p); for a
			// Factor of R that is z_p itself.
			w = slices.Grow(w[:0], m*n)[:m*n]
			if f.ep == nil {
				for p := range m {
					sq := math.Exp(grp.LogW[p] / 2)
					row := grp.Z[p*n : p*n+n]
					dst := w[p*n : p*n+n]
					for k, z := range row {
						dst[k] = sq * z
					}
				}
			} else {
				// U = Z L' + 1 M' (the Factor's order), to the input
				// order, then solved against lr: w <- w lr^-T.
				wt = slices.Grow(wt[:0], m*n)[:m*n]
				ws.NT(m, n, n, grp.Z, n, f.L, n, wt, n, false, workers)
				for p := range m {
					sq := math.Exp(grp.LogW[p] / 2)
					row := wt[p*n : p*n+n]
					dst := w[p*n : p*n+n]
					for k, v := range f.Perm {
						dst[v] = sq * (row[k] + f.ep.m[k])
					}
				}
				solveRowsTo(w, m, lr, n, &ws, workers)
			}
			// W = Y lr^-1: row p is (lr^-T y_p)' = (R^-1 (v_p - m))'; then
			// sec = W'W, the product of W's transpose with itself.
			solveRowsUpper(w, m, lr, n, &ws, workers)
			wt = slices.Grow(wt[:0], m*n)[:m*n]
			for p := range m {
				for k, v := range w[p*n : p*n+n] {
					wt[k*m+p] = v
				}
			}
			symProductTo(sec, wt, n, m, &ws, workers)
			a := bufs[g-first]
			if a == nil {
				a = make([]float64, n*n)
				bufs[g-first] = a
			}
			for i := range n {
				pi := perm[i]
				for j := i; j < n; j++ {
					v := sec[i*n+j] - rinv[i*n+j]
					pj := perm[j]
					a[pi*n+pj], a[pj*n+pi] = v, v
				}
			}
		}
		fn(first, bufs[:last-first])
		if last-first == groups {
			bufs = nil // handed over whole: NewScore keeps them
		}
	}
	w, err := GroupWeights(sizes, logZ)
	if err != nil {
		return nil, err
	}
	s.Weight = w
	return s, nil
}

// GroupWeights returns the weights w_g = n_g I_g / sum_h n_h I_h of
// independent particle groups of the sizes given whose estimates of log P
// are logZ (Score.Weight: the ratio estimator's weights of a posterior
// expectation), or an error if every group estimated P = 0. It panics if
// the lengths differ.
func GroupWeights(sizes []int, logZ []float64) ([]float64, error) {
	if len(sizes) != len(logZ) {
		panic("core: GroupWeights: the lengths differ")
	}
	// Relative to the largest I_g.
	mx := math.Inf(-1)
	for _, l := range logZ {
		mx = math.Max(mx, l)
	}
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		return nil, errors.New("core: the gradient needs a cloud with P > 0")
	}
	w := make([]float64, len(logZ))
	tot := 0.0
	for g, l := range logZ {
		w[g] = float64(sizes[g]) * math.Exp(l-mx)
		tot += w[g]
	}
	for g := range w {
		w[g] /= tot
	}
	return w, nil
}

// symProductTo sets c (n x n) to x x', x n x k (row-major), on
// internal/gemm's kernel: the lower triangle block column by block column,
// mirrored.
func symProductTo(c, x []float64, n, k int, ws *gemm.Workspace, workers int) {
	const cols = 384
	for c0 := 0; c0 < n; c0 += cols {
		c1 := min(n, c0+cols)
		ws.NT(n-c0, c1-c0, k, x[c0*k:], k, x[c0*k:], k, c[c0*n+c0:], n, false, workers)
	}
	for i := range n {
		for j := 0; j < i; j++ {
			c[j*n+i] = c[i*n+j]
		}
	}
}

// Contract returns t = 1/2 tr(A dR) for a symmetric perturbation dR (N x N,
// row-major, input order) with its standard error (NaN for one group). It
// panics if dR is not N x N.
func (s *Score) Contract(dR []float64) (t, se float64) {
	if len(dR) != s.N*s.N {
		panic("core: Score.Contract: dR is not N x N")
	}
	tg := make([]float64, len(s.A))
	for g, a := range s.A {
		sum := 0.0
		for k, v := range a {
			sum += v * dR[k]
		}
		tg[g] = sum / 2
	}
	return s.Combine(tg)
}

// Combine returns the weighted mean of per-group values tg (one per group,
// each group's estimate of a linear function of A) and its delta-method
// standard error (see Score); NaN for one group.
func (s *Score) Combine(tg []float64) (t, se float64) {
	if len(tg) != len(s.Weight) {
		panic("core: Score.Combine: one value per group needed")
	}
	for g, v := range tg {
		t += s.Weight[g] * v
	}
	nG := len(tg)
	if nG < 2 {
		return t, math.NaN()
	}
	v := 0.0
	for g, x := range tg {
		d := s.Weight[g] * (x - t)
		v += d * d
	}
	return t, math.Sqrt(v * float64(nG) / float64(nG-1))
}
