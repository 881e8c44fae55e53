package core

import (
	"math"
	"runtime"

	"gpc/internal/gemm"
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
	// Threads is the number of goroutines (0: GOMAXPROCS); the result does
	// not depend on it.
	Threads int
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
	// W = Rp L^-T (t x n): row j is w for test j.
	w := make([]float64, t*n)
	for j := range t {
		for k, v := range f.Perm {
			w[j*n+k] = r[j*n+v]
		}
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	var ws gemm.Workspace
	solveRowsTo(w, t, f.L, n, &ws, opt.Threads)
	sigma, isig := make([]float64, t), make([]float64, t)
	for j := range t {
		s2 := vars[j]
		for _, v := range w[j*n : j*n+n] {
			s2 -= v * v
		}
		if !(s2 > 0) {
			return inputErrorf(j, "test row %d: its variance %v given the train variables is %v, not positive: the row does not belong with this covariance", j, vars[j], s2)
		}
		sigma[j] = math.Sqrt(s2)
		isig[j] = 1 / sigma[j]
	}
	g := len(c.Groups)
	maxLogZ := math.Inf(-1)
	for _, grp := range c.Groups {
		maxLogZ = math.Max(maxLogZ, grp.LogZ)
	}
	if math.IsInf(maxLogZ, -1) {
		return inputErrorf(-1, "every particle group estimated P = 0: there is no posterior to average over")
	}
	pg := make([]float64, g*t) // group means
	groupMeans(pg, c, w, sigma, isig, n, t, opt)
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
