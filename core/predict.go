package core

import (
	"math"

	"gonum.org/v1/gonum/floats"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
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
// standard error comes from independent groups (NaN for one group).
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
	b, offset, sigma, err := f.testBasis(r, vars, t)
	if err != nil {
		return err
	}
	impl := blas64.Implementation()
	g := len(c.Groups)
	pg := make([]float64, g*t) // group means
	maxLogZ := math.Inf(-1)
	for _, grp := range c.Groups {
		maxLogZ = math.Max(maxLogZ, grp.LogZ)
	}
	if math.IsInf(maxLogZ, -1) {
		return inputErrorf(-1, "every particle group estimated P = 0: there is no posterior to average over")
	}
	var mu []float64
	for gi := range c.Groups {
		grp := &c.Groups[gi]
		m := grp.Len()
		mu = slicesGrow(mu, m*t)
		// mu (m x t) = Z (m x n) B (n x t): the particles' conditional means.
		impl.Dgemm(blas.NoTrans, blas.NoTrans, m, t, n, 1, grp.Z, n, b, t, 0, mu, t)
		if offset != nil {
			for p := range m {
				floats.Add(mu[p*t:p*t+t], offset)
			}
		}
		row := pg[gi*t : gi*t+t]
		if opt.Hard {
			for j := range t {
				rng := NewStream(opt.Seed, domainPredict, uint64(opt.First+j)<<20|uint64(gi))
				for p := range m {
					if mu[p*t+j]+sigma[j]*rng.NormFloat64() > 0 {
						row[j] += math.Exp(grp.LogW[p])
					}
				}
			}
			continue
		}
		for p := range m {
			w := math.Exp(grp.LogW[p])
			for j := range t {
				row[j] += w * Phi(mu[p*t+j]/sigma[j])
			}
		}
	}
	for j := range t {
		var sa, sap, sa2d float64
		for gi, grp := range c.Groups {
			a := float64(grp.Len()) * math.Exp(grp.LogZ-maxLogZ)
			sa += a
			sap += a * pg[gi*t+j]
		}
		p := sap / sa
		for gi, grp := range c.Groups {
			a := float64(grp.Len()) * math.Exp(grp.LogZ-maxLogZ)
			d := pg[gi*t+j] - p
			sa2d += a * a * d * d
		}
		se := math.NaN()
		if g > 1 {
			se = math.Sqrt(float64(g)/float64(g-1)*sa2d) / sa
		}
		dst[j] = Posterior{P: p, SE: se}
	}
	return nil
}

// slicesGrow returns s resliced to length n, reallocating if needed.
func slicesGrow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// testBasis returns, for T test variables with covariances r (T x N, input
// order) and variances vars, the n x t matrix b, offsets and conditional
// standard deviations such that a particle's conditional mean of test
// variable j is offset_j + sum_k z_k b[k][j] (offset nil for zero), its
// conditional standard deviation sigma_j.
//
// For a Factor of R itself, b = L^-1 r (in the Factor's order) and
// sigma^2 = s - |b|^2. For MethodEP's Factor of Sigma (v = M + L z),
// b = L' R^-1 r and offset = M'R^-1 r, with R^-1 r from R's Cholesky.
func (f *Factor) testBasis(r, vars []float64, t int) (b, offset, sigma []float64, err error) {
	n := f.N
	b = make([]float64, n*t)
	sigma = make([]float64, t)
	impl := blas64.Implementation()
	if f.ep == nil {
		// B = L^-1 Rp' (n x t): column j is w for test j.
		for j := range t {
			for k, v := range f.Perm {
				b[k*t+j] = r[j*n+v]
			}
		}
		impl.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, n, t, 1, f.L, n, b, t)
		for j := range t {
			s2 := vars[j]
			for k := range n {
				s2 -= b[k*t+j] * b[k*t+j]
			}
			if !(s2 > 0) {
				return nil, nil, nil, inputErrorf(j, "test row %d: its variance %v given the train variables is %v, not positive: the row does not belong with this covariance", j, vars[j], s2)
			}
			sigma[j] = math.Sqrt(s2)
		}
		return b, nil, sigma, nil
	}
	// X = R^-1 Rp' (n x t) in input order, through R's Cholesky factor
	// (input order: rl is lower triangular, R = rl rl').
	x := make([]float64, n*t)
	for j := range t {
		for v := range n {
			x[v*t+j] = r[j*n+v]
		}
	}
	rl := f.ep.rchol
	impl.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, n, t, 1, rl, n, x, t)
	for j := range t {
		s2 := vars[j]
		for v := range n {
			s2 -= x[v*t+j] * x[v*t+j]
		}
		if !(s2 > 0) {
			return nil, nil, nil, inputErrorf(j, "test row %d: its variance %v given the train variables is %v, not positive: the row does not belong with this covariance", j, vars[j], s2)
		}
		sigma[j] = math.Sqrt(s2)
	}
	impl.Dtrsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, n, t, 1, rl, n, x, t)
	// b = L' X[Perm]; offset = M[Perm]' X[Perm].
	offset = make([]float64, t)
	for k, v := range f.Perm {
		copy(b[k*t:k*t+t], x[v*t:v*t+t])
		floats.AddScaled(offset, f.ep.m[k], x[v*t:v*t+t])
	}
	impl.Dtrmm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, n, t, 1, f.L, n, b, t)
	return b, offset, sigma, nil
}
