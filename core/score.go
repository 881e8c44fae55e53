package core

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
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
	// Linv = lr^-1 (lower), and R^-1 = Linv' Linv in the working order.
	lt := mat.NewTriDense(n, mat.Lower, append([]float64(nil), lr...))
	var linv mat.TriDense
	if err := linv.InverseTri(lt); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) {
			return nil, err
		}
	}
	lraw := linv.RawTriangular()
	lgen := blas64.General{Rows: n, Cols: n, Stride: lraw.Stride, Data: lraw.Data}
	rinv := blas64.Symmetric{N: n, Stride: n, Data: make([]float64, n*n), Uplo: blas.Upper}
	blas64.Syrk(blas.Trans, 1, lgen, 0, rinv)
	ltri := blas64.Triangular{N: n, Stride: n, Data: lr, Uplo: blas.Lower, Diag: blas.NonUnit}

	groups := len(c.Groups)
	s := &Score{N: n, Weight: make([]float64, groups)}
	logZ := make([]float64, groups)
	sizes := make([]int, groups)
	var u []float64
	sec := blas64.Symmetric{N: n, Stride: n, Data: make([]float64, n*n), Uplo: blas.Upper}
	bufs := make([][]float64, min(batch, groups))
	for first := 0; first < groups; first += batch {
		last := min(groups, first+batch)
		for g := first; g < last; g++ {
			grp := &c.Groups[g]
			m := grp.Len()
			logZ[g], sizes[g] = grp.LogZ, m
			// Y: row p is lr^-1 (v_p - m), scaled by sqrt(w_p); for a
			// Factor of R that is z_p itself.
			w := make([]float64, m*n)
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
				// U = Z L' + 1 M' (the Factor's order), to the input order.
				u = append(u[:0], grp.Z...)
				ug := blas64.General{Rows: m, Cols: n, Stride: n, Data: u}
				blas64.Trmm(blas.Right, blas.Trans, 1, blas64.Triangular{N: n, Stride: n, Data: f.L, Uplo: blas.Lower, Diag: blas.NonUnit}, ug)
				for p := range m {
					sq := math.Exp(grp.LogW[p] / 2)
					row := u[p*n : p*n+n]
					dst := w[p*n : p*n+n]
					for k, v := range f.Perm {
						dst[v] = sq * (row[k] + f.ep.m[k])
					}
				}
				blas64.Trsm(blas.Right, blas.Trans, 1, ltri, blas64.General{Rows: m, Cols: n, Stride: n, Data: w})
			}
			// W = Y lr^-1: row p is (lr^-T y_p)' = (R^-1 (v_p - m))'.
			wg := blas64.General{Rows: m, Cols: n, Stride: n, Data: w}
			blas64.Trsm(blas.Right, blas.NoTrans, 1, ltri, wg)
			blas64.Syrk(blas.Trans, 1, wg, 0, sec)
			a := bufs[g-first]
			if a == nil {
				a = make([]float64, n*n)
				bufs[g-first] = a
			}
			for i := range n {
				pi := perm[i]
				for j := i; j < n; j++ {
					v := sec.Data[i*n+j] - rinv.Data[i*n+j]
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
	// w_g = n_g I_g / sum n I, relative to the largest I_g.
	mx := math.Inf(-1)
	for _, l := range logZ {
		mx = math.Max(mx, l)
	}
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		return nil, errors.New("core: the gradient needs a cloud with P > 0")
	}
	tot := 0.0
	for g, l := range logZ {
		s.Weight[g] = float64(sizes[g]) * math.Exp(l-mx)
		tot += s.Weight[g]
	}
	for g := range s.Weight {
		s.Weight[g] /= tot
	}
	return s, nil
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
