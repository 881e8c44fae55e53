package core

import "math"

// FactorParts is everything a Factor holds, its EP twisting included, as
// plain values: what a prepared plan (gpc-orthant --prepare-only) stores so
// that NewFactorFromParts rebuilds a Factor on which Estimate gives the
// same bits as on the original.
type FactorParts struct {
	N         int
	L, A, B   []float64
	Perm      []int
	Jitter    float64
	Order     OrderKind
	MinPivot  float64
	Mu        []float64
	TiltStats TiltStats
	EPStats   EPStats
	// Tau, Kappa and M are MethodEP's sites in the new order, LogZ the EP
	// approximation's log normaliser and RChol the Cholesky factor of the
	// covariance in the input order (row-major N x N); Tau is nil for a
	// Factor without EP twisting.
	Tau, Kappa, M []float64
	LogZ          float64
	RChol         []float64
}

// Parts returns f's content. The slices are f's own: do not modify them.
func (f *Factor) Parts() FactorParts {
	p := FactorParts{N: f.N, L: f.L, A: f.A, B: f.B, Perm: f.Perm, Jitter: f.Jitter, Order: f.Order,
		MinPivot: f.MinPivot, Mu: f.Mu, TiltStats: f.TiltStats, EPStats: f.EPStats}
	if f.ep != nil {
		p.Tau, p.Kappa, p.M, p.LogZ, p.RChol = f.ep.tau, f.ep.kappa, f.ep.m, f.ep.logZ, f.ep.rchol
	}
	return p
}

// NewFactorFromParts is the Factor whose Parts are p, after checking them:
// the lengths, Perm a permutation, L lower-triangular with a positive
// finite diagonal, finite values (the bounds A <= B may be infinite). It
// returns an *InputError naming the first part that is wrong. The Factor
// uses p's slices.
func NewFactorFromParts(p FactorParts) (*Factor, error) {
	n := p.N
	if n <= 0 {
		return nil, inputErrorf(-1, "a factor of %d variables", n)
	}
	for _, v := range []struct {
		name string
		len  int
		want int
		opt  bool
	}{{"L", len(p.L), n * n, false}, {"A", len(p.A), n, false}, {"B", len(p.B), n, false}, {"Perm", len(p.Perm), n, false},
		{"Mu", len(p.Mu), n, true}, {"Tau", len(p.Tau), n, true}, {"Kappa", len(p.Kappa), n, p.Tau == nil}, {"M", len(p.M), n, p.Tau == nil},
		{"RChol", len(p.RChol), n * n, p.Tau == nil}} {
		if v.len != v.want && !(v.opt && v.len == 0) {
			return nil, inputErrorf(-1, "factor part %s has %d values, want %d", v.name, v.len, v.want)
		}
	}
	seen := make([]bool, n)
	for k, j := range p.Perm {
		if j < 0 || j >= n || seen[j] {
			return nil, inputErrorf(k, "factor part Perm is not a permutation of 0..%d (entry %d is %d)", n-1, k, j)
		}
		seen[j] = true
	}
	for _, v := range []struct {
		name string
		x    []float64
	}{{"L", p.L}, {"Mu", p.Mu}, {"Tau", p.Tau}, {"Kappa", p.Kappa}, {"M", p.M}, {"RChol", p.RChol}} {
		for i, x := range v.x {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, inputErrorf(i, "factor part %s[%d] is %v", v.name, i, x)
			}
		}
	}
	for i := range n {
		if !(p.L[i*n+i] > 0) {
			return nil, inputErrorf(i, "factor part L[%d][%d] = %v is not positive", i, i, p.L[i*n+i])
		}
		for j := i + 1; j < n; j++ {
			if p.L[i*n+j] != 0 {
				return nil, inputErrorf(i, "factor part L[%d][%d] = %v is above the diagonal", i, j, p.L[i*n+j])
			}
		}
		if math.IsNaN(p.A[i]) || math.IsNaN(p.B[i]) || p.A[i] > p.B[i] {
			return nil, inputErrorf(i, "factor part bounds [%v, %v] of variable %d are not an interval", p.A[i], p.B[i], i)
		}
	}
	for _, x := range []float64{p.Jitter, p.MinPivot, p.LogZ} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, inputErrorf(-1, "factor part %v is not finite", x)
		}
	}
	if p.Order < 0 || int(p.Order) >= len(orderNames) {
		return nil, inputErrorf(-1, "factor order %d is unknown", int(p.Order))
	}
	f := &Factor{N: n, L: p.L, A: p.A, B: p.B, Perm: p.Perm, Jitter: p.Jitter, Order: p.Order,
		MinPivot: p.MinPivot, Mu: p.Mu, TiltStats: p.TiltStats, EPStats: p.EPStats}
	if len(p.Mu) == 0 {
		f.Mu = nil
	}
	if len(p.Tau) > 0 {
		f.ep = &epSteps{tau: p.Tau, kappa: p.Kappa, m: p.M, logZ: p.LogZ, rchol: p.RChol}
	}
	return f, nil
}

// ReleasePredictionParts lets go of what only prediction and the score
// need, R's Cholesky factor of an EP factor (N x N), once it was written
// out (gpc-train sends it with the cloud): the estimate needs only L, the
// bounds and the sites. After it, Parts has no RChol, and prediction from
// f panics.
func (f *Factor) ReleasePredictionParts() {
	if f.ep != nil {
		f.ep.rchol = nil
	}
}
