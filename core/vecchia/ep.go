package vecchia

import (
	"context"
	"math"
	"slices"

	"gpc/core"
)

// Parallel expectation propagation for the proposal's sites. Each row k
// (each observation: a repeated point has its own) has a site
// exp(-tau_k x^2/2 + nu_k x) on its latent variable; the proposal q is the
// Gaussian of the prior times the sites, through the factor T (Prepared).
// A round takes q's marginal of every latent variable, divides out each
// row's site (the cavity), matches the moments of the cavity times the
// row's bound (its noise integrated out: obsDerivs), and moves the site a
// damped step towards the Gaussian that matches them, all rows at once,
// then factors T again.
//
// q's marginal variances: exact for the dense block (the inverse of its
// rows' factor, whose marginal is theirs alone), and by Monte Carlo for the
// later variables, from epSamples exact draws of q (T^-1 z, fixed random
// numbers: the preparation does not depend on the estimate's seed), whose
// relative error sqrt(2/epSamples) only shapes the proposal. q's mean is
// exact (conjugate gradients).
//
// References: T. Minka (2001), "Expectation propagation for approximate
// Bayesian inference", UAI; M. van Gerven, B. Cseke, F. de Lange and T.
// Heskes (2010), "Efficient Bayesian multivariate fMRI analysis using a
// sparsifying spatio-temporal prior", NeuroImage 50:150-161 (parallel EP
// with sparse precisions).
type parallelEP struct {
	m     *Model
	a, t  *tri
	tau   []float64 // per latent variable, the sum of its rows' sites
	nu    []float64
	rtau  []float64 // per row
	rnu   []float64
	mean  []float64 // q's mean
	vars  []float64 // q's marginal variances
	stats core.EPStats
	shift float64

	block int
	say   func(format string, args ...any)

	pd, po []float64
}

const (
	// epRounds bounds the parallel EP's rounds.
	epRounds = 6
	// epDamping is the share of a round's step a site takes.
	epDamping = 0.9
	// epRoundTol is the sites' largest change, relative to the cavity
	// precision, below which the rounds stop.
	epRoundTol = 0.02
	// epSamples is the number of draws of q for the later variables'
	// marginal variances.
	epSamples = 96
)

// meanTol is the relative residual of q's mean.
const meanTol = 1e-10

// epSeed is the fixed seed of the marginal variances' draws.
const epSeed = 0x76656363686961

func newParallelEP(m *Model, a, t *tri, st *Sites, block int) *parallelEP {
	n := m.N
	e := &parallelEP{m: m, a: a, t: t, rtau: make([]float64, n), rnu: make([]float64, n),
		tau: make([]float64, n), nu: make([]float64, n), mean: make([]float64, n), vars: make([]float64, n),
		pd: make([]float64, n), po: make([]float64, len(t.nbr)), block: block}
	// Laplace's sites, shared among a latent variable's rows.
	count := make([]float64, n)
	for k := range n {
		count[latent(m, k)]++
	}
	for k := range n {
		v := latent(m, k)
		e.rtau[k], e.rnu[k] = st.Tau[v]/count[v], st.Nu[v]/count[v]
	}
	return e
}

// sum sets tau and nu from the rows' sites.
func (e *parallelEP) sum() {
	clear(e.tau)
	clear(e.nu)
	for k := range e.m.N {
		v := latent(e.m, k)
		e.tau[v] += e.rtau[k]
		e.nu[v] += e.rnu[k]
	}
}

// factor factors A'A + diag(tau) into t and computes q's mean.
func (e *parallelEP) factor() error {
	n := e.m.N
	e.t.assemble(e.a, e.tau, e.pd, e.po)
	shift, err := e.t.factorShifted(e.pd, e.po, 0, n)
	if err != nil {
		return err
	}
	e.shift = max(e.shift, shift)
	meanOf(e.mean, e.a, e.t, e.tau, e.nu)
	return nil
}

// marginals sets vars to q's marginal variances.
func (e *parallelEP) marginals() {
	m, t := e.m, e.t
	n := m.N
	clear(e.vars)
	// The later variables: draws x = T^-1 z.
	g := core.GroupStream(epSeed, 0)
	z, x := make([]float64, n), make([]float64, n)
	for range epSamples {
		for k := range z {
			z[k] = core.PhiInv(g.Float64Open())
		}
		t.solveTo(x, z)
		for k, v := range x {
			e.vars[k] += v * v
		}
	}
	for k := range e.vars {
		e.vars[k] /= epSamples
	}
	// The block: exactly, diag(L^-1 L^-T) for its rows L (dense, lower,
	// over its regular rows), whose marginal is theirs alone.
	var reg []int
	idx := make([]int, e.block)
	for k := range e.block {
		idx[k] = -1
		if !t.dup[k] {
			idx[k] = len(reg)
			reg = append(reg, k)
		}
	}
	nr := len(reg)
	if nr == 0 {
		return
	}
	l := make([]float64, nr*nr)
	for i, k := range reg {
		l[i*nr+i] = t.diag[k]
		for q := t.start[k]; q < t.start[k+1]; q++ {
			l[i*nr+idx[t.nbr[q]]] = t.off[q]
		}
	}
	// Column c of L^-1, by forward substitution, adds its squares to the
	// variances of its rows.
	col := make([]float64, nr)
	for i := range nr {
		e.vars[reg[i]] = 0
	}
	for c := range nr {
		for i := c; i < nr; i++ {
			v := 0.0
			if i == c {
				v = 1
			}
			row := l[i*nr : i*nr+i]
			for q := c; q < i; q++ {
				v -= row[q] * col[q]
			}
			col[i] = v / l[i*nr+i]
			e.vars[reg[i]] += col[i] * col[i]
		}
	}
}

// run iterates the rounds and leaves the final factor, sites and eta.
func (e *parallelEP) run(ctx context.Context) error {
	m := e.m
	n := m.N
	e.sum()
	for e.stats.Sweeps = 1; ; e.stats.Sweeps++ {
		if err := e.factor(); err != nil {
			return err
		}
		if e.stats.Sweeps > epRounds {
			e.stats.Sweeps = epRounds
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.stats.Sweeps > 1 && e.say != nil {
			e.say("EP: round %d, after change %.3g", e.stats.Sweeps, e.stats.Change)
		}
		e.marginals()
		change, moving := 0.0, 0
		newTau, newNu := slices.Clone(e.rtau), slices.Clone(e.rnu)
		for k := range n {
			v := latent(m, k)
			s2 := e.vars[v]
			tc := 1/s2 - e.rtau[k]
			nc := e.mean[v]/s2 - e.rnu[k]
			if !(tc > 0) || math.IsInf(tc, 1) {
				continue
			}
			mc, vc := nc/tc, 1/tc
			_, g, w := obsDerivs(mc, m.Lower[k], m.Upper[k], vc+m.Noise)
			mh := mc + vc*g
			vh := vc - vc*vc*w
			if !(vh > 0) {
				continue
			}
			nt := math.Max(1/vh-tc, 0)
			nn := mh/vh - nc
			ch := math.Max(math.Abs(nt-e.rtau[k]), math.Abs(nn-e.rnu[k])*math.Sqrt(vc)) / tc
			change = math.Max(change, ch)
			if ch >= epRoundTol {
				moving++
			}
			newTau[k] = (1-epDamping)*e.rtau[k] + epDamping*nt
			newNu[k] = (1-epDamping)*e.rnu[k] + epDamping*nn
		}
		e.stats.Change, e.stats.Moving = change, moving
		copy(e.rtau, newTau)
		copy(e.rnu, newNu)
		e.sum()
		if change < epRoundTol {
			if err := e.factor(); err != nil {
				return err
			}
			break
		}
	}
	return nil
}
