package vecchia

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core"
)

// Expectation propagation for the multi-class proposal's sites, started
// from Laplace's (PreparedMulticlass.laplace). Each row has a site
// exp(-g' W g / 2 + nu' g) on its point's L coordinates. A round factors
// the proposal with the current sites, takes q's mean (conjugate
// gradients) and each point's marginal covariance (the dense block's
// exactly, from its rows of T; the later points' from exact draws of q,
// as for two classes, more of them in the last rounds: covariances), and
// updates every row's site in parallel: the cavity (q's marginal with the
// row's site divided out)
// times the row's label, whose moments come from those of the label's
// C - 1 differences truncated to the orthant (orthantMoments), matched by
// a Gaussian, the site moved a damped step towards it. The rounds stop
// at epRounds, or at the last round whose factorisation held.
//
// References: T. Minka (2001), "Expectation propagation for approximate
// Bayesian inference", UAI; J. Riihimaki, P. Jylanki and A. Vehtari
// (2013), "Nested expectation propagation for Gaussian process
// classification with a multinomial probit likelihood", JMLR 14:75-109
// (EP for the multinomial probit GP: a site per point coupling its
// classes, the tilted moments from an inner approximation); J. P.
// Cunningham, P. Hennig and S. Lacoste-Julien (2011), "Gaussian
// probabilities and expectation propagation", arXiv 1111.6832 (EP for a
// Gaussian's moments on a box).

// orthantSweeps is the number of sweeps of orthantMoments' EP over the
// C - 1 constraints: its moments only shape the proposal, and from two
// or three constraints on they change little after a few sweeps.
const orthantSweeps = 6

// orthantWork is orthantMoments' scratch for q dimensions.
type orthantWork struct {
	q                 int
	sig, si, m, h, tp []float64
	tau, nu           []float64
}

func (w *orthantWork) size(q int) {
	if w.q == q {
		return
	}
	w.q = q
	w.sig, w.si, w.m, w.h, w.tp = make([]float64, q*q), make([]float64, q*q), make([]float64, q), make([]float64, q), make([]float64, q)
	w.tau, w.nu = make([]float64, q), make([]float64, q)
}

// orthantMoments approximates the mean m and covariance sig (q x q) of
// N(mu, s) truncated to the orthant d >= 0 by expectation propagation
// over its q constraints (a one-dimensional site on each d_j, the
// cavity's truncated moments matched exactly; Cunningham, Hennig and
// Lacoste-Julien 2011). It reports false if s is not positive definite.
// For q = 1 it is exact.
func orthantMoments(mu, s []float64, w *orthantWork) (m, sig []float64, ok bool) {
	q := len(mu)
	w.size(q)
	copy(w.si, s)
	if !cholLower(w.si, q) {
		return nil, nil, false
	}
	// h = S^-1 mu, and S^-1 itself.
	inv := make([]float64, q*q)
	invFromChol(inv, w.si, q, w.tp)
	for i := range q {
		v := 0.0
		for j := range q {
			v += inv[i*q+j] * mu[j]
		}
		w.h[i] = v
	}
	clear(w.tau)
	clear(w.nu)
	copy(w.sig, s)
	copy(w.m, mu)
	for range orthantSweeps {
		for j := range q {
			sjj := w.sig[j*q+j]
			pc := 1/sjj - w.tau[j]
			if !(pc > 0) {
				continue
			}
			vc := 1 / pc
			mc := vc * (w.m[j]/sjj - w.nu[j])
			sd := math.Sqrt(vc)
			z := mc / sd
			lam := millsRatio(z)
			mt := mc + sd*lam
			vt := vc * (1 - lam*(z+lam))
			if !(vt > 0) {
				continue
			}
			nt := math.Max(1/vt-pc, 0)
			nn := mt/vt - mc*pc
			dt := nt - w.tau[j]
			w.tau[j], w.nu[j] = nt, nn
			// sig = (S^-1 + diag tau)^-1 by a rank-one update of
			// sig's column j (Sherman-Morrison), m = sig (h + nu).
			if dt != 0 {
				den := 1 + dt*sjj
				copy(w.tp, w.sig[j*q:(j+1)*q])
				for a := range q {
					for b := range q {
						w.sig[a*q+b] -= dt * w.tp[a] * w.tp[b] / den
					}
				}
			}
			for a := range q {
				v := 0.0
				for b := range q {
					v += w.sig[a*q+b] * (w.h[b] + w.nu[b])
				}
				w.m[a] = v
			}
		}
	}
	return w.m, w.sig, true
}

// classEP is the multi-class EP's state: the prepared proposal's factor t
// and prior factor a, and the points' marginals of q.
type classEP struct {
	p     *PreparedMulticlass
	a, t  *tri
	mean  []float64 // q's mean, by variable
	cov   []float64 // each point's L x L marginal covariance
	stats core.EPStats
	say   func(format string, args ...any)
}

// epDampingBlock is the share of a step that the dense block's sites take
// in a round (the two-class EP's blockDamping): they are coupled to each
// other strongly, and updated in parallel.
const epDampingBlock = 0.5

// The multi-class proposal's tails. A later point's site comes from its
// L x L marginal covariance under q, estimated from draws of q; with
// epSamples (64) draws a 2 x 2 covariance is off by about a fifth, its
// sites by as much, and at N = 1000 with three classes the group
// estimates were right-skewed (a rare particle carrying a group) and the
// standard error's intervals held the model's probability 85 % of the
// time. The last classFinalRounds rounds' covariances come from
// classSamples draws, and widen takes every point that qualifies
// (classWidenFraction) rather than the least precise share the two
// classes take: docs/vecchia.md (Calibration) gives the coverage of each
// choice and its cost.
const (
	classSamples       = 1024
	classFinalRounds   = 1
	classWidenFraction = 1.0
)

// runEP refines the rows' sites from Laplace's by EP's rounds (classEP).
// A factorisation that breaks down ends the rounds with the last round's
// sites.
func (p *PreparedMulticlass) runEP(ctx context.Context, a, t *tri, say func(string, ...any)) (core.EPStats, error) {
	m, l := p.m, p.L
	n := m.N * l
	e := &classEP{p: p, a: a, t: t, mean: slices.Clone(p.Laplace.Mode), cov: make([]float64, m.N*l*l), say: say}
	pd, po := make([]float64, n), make([]float64, len(t.nbr))
	saveW, saveNu := make([]float64, len(p.rw)), make([]float64, len(p.rnu))
	for e.stats.Sweeps = 1; e.stats.Sweeps <= epRounds; e.stats.Sweeps++ {
		if err := ctx.Err(); err != nil {
			return e.stats, err
		}
		if e.stats.Sweeps > 1 && say != nil {
			say("EP: round %d, after change %.3g", e.stats.Sweeps, e.stats.Change)
		}
		copy(saveW, p.rw)
		copy(saveNu, p.rnu)
		p.assemble(t, a, pd, po)
		shift, err := t.factorShifted(pd, po, 0, n, maxShift)
		if err != nil {
			if !errors.Is(err, errBreakdown) {
				return e.stats, err
			}
			e.stats.Sweeps--
			break
		}
		p.Shift = max(p.Shift, shift)
		p.mean(e.mean, a, t, roundMeanTol)
		e.covariances()
		change := e.update()
		p.sums()
		if err := p.finiteSites(); err != nil {
			copy(p.rw, saveW)
			copy(p.rnu, saveNu)
			p.sums()
			e.stats.Sweeps--
			break
		}
		e.stats.Change = change
	}
	e.stats.Sweeps = min(e.stats.Sweeps, epRounds)
	if e.stats.Sweeps > 0 {
		p.Widened = e.widen()
	}
	return e.stats, nil
}

// widen widens the sites of confidently classified points, as the two
// classes' widenSites does (core.WidenFactor, with the reasons there): of
// the points observed once, every one (classWidenFraction, where the two
// classes take the least precise core.WidenFractionLarge) whose cavity
// (the last round's marginal with the site divided out) has each of the
// label's differences' means at least core.WidenMinZ of its standard
// deviation (the noise's included) above 0 get their precision multiplied by
// core.WidenFactor, and their linear terms moved so that q's mean stays
// EP's. Dividing out EP's site of such a point leaves the step a
// Gaussian weight over the particles, where the label's probability is
// nearly flat, and the wider proposal reaches the tails that EP's own
// under-covers (docs/vecchia.md, Calibration: what it does to the
// coverage at N = 1000 with three classes). It returns the number of
// sites widened.
func (e *classEP) widen() int {
	p := e.p
	m, l := p.m, p.L
	q := m.C - 1
	single := make([]bool, m.N)
	for k := range m.N {
		single[k] = m.Dup(k) < 0
	}
	for k := range m.N {
		if d := m.Dup(k); d >= 0 {
			single[d] = false
		}
	}
	trace := func(k int) float64 {
		s := 0.0
		for a := range l {
			s += p.rw[(k*l+a)*l+a]
		}
		return s
	}
	var cand []int
	for k := range m.N {
		if single[k] {
			cand = append(cand, k)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(trace(a), trace(b)) })
	cand = cand[:int(classWidenFraction*float64(len(cand)))]
	u := newSiteUpdate(l, m.C)
	widened := 0
	for _, k := range cand {
		mu := e.mean[k*l : (k+1)*l]
		if !u.cavity(p, k, e.mean, e.cov) {
			continue
		}
		// The differences' cavity means and sds: u.mud, u.sd.
		ok := true
		for j := range q {
			if u.mud[j] < core.WidenMinZ*math.Sqrt(u.sd[j*q+j]) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		w, nu := p.rw[k*l*l:(k+1)*l*l], p.rnu[k*l:(k+1)*l]
		for a := range l {
			for b := range l {
				d := (core.WidenFactor - 1) * w[a*l+b]
				nu[a] += d * mu[b]
			}
		}
		for i := range w {
			w[i] *= core.WidenFactor
		}
		widened++
	}
	p.sums()
	return widened
}

// finiteSites returns an error if a site is not finite.
func (p *PreparedMulticlass) finiteSites() error {
	for _, v := range p.w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errBreakdown
		}
	}
	for _, v := range p.nu {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errBreakdown
		}
	}
	return nil
}

// covariances sets each regular point's L x L marginal covariance under
// q: the dense block's from its rows of T (q's marginal of the block is
// N(., (T_BB'T_BB)^-1)), the later points' from draws T^-1 z: epSamples
// in the first rounds, classSamples in the last classFinalRounds, which
// make the sites the proposal keeps (each round's step takes epDamping of
// the way) and the cavities by which widen judges them.
func (e *classEP) covariances() {
	p, t := e.p, e.t
	m, l := p.m, p.L
	k0 := p.Block * l
	clear(e.cov)
	if p.Block < m.N {
		draws := epSamples
		if e.stats.Sweeps > epRounds-classFinalRounds {
			draws = classSamples
		}
		e.drawCovariances(draws)
	}
	if k0 == 0 {
		return
	}
	// The block: the columns u of T_BB^-1 (forward substitution on its
	// transpose, rows contiguous), cov_ij += u_i u_j within each point.
	var reg []int
	idx := make([]int, k0)
	for v := range k0 {
		idx[v] = -1
		if !t.dup[v] {
			idx[v] = len(reg)
			reg = append(reg, v)
		}
	}
	nr := len(reg)
	ut := make([]float64, nr*nr)
	diag := make([]float64, nr)
	for i, v := range reg {
		diag[i] = t.diag[v]
		for q := t.start[v]; q < t.start[v+1]; q++ {
			ut[idx[t.nbr[q]]*nr+i] = t.off[q]
		}
	}
	u := make([]float64, nr)
	for col := range nr {
		clear(u)
		u[col] = 1
		for i := col; i < nr; i++ {
			u[i] /= diag[i]
			if i+1 < nr {
				core.Axpy(u[i+1:], -u[i], ut[i*nr+i+1:i*nr+nr])
			}
		}
		// Regular block variables come a point's L at a time.
		for i := col - col%l; i < nr; i += l {
			k := reg[i] / l
			c := e.cov[k*l*l : (k+1)*l*l]
			for a := range l {
				for bb := range l {
					c[a*l+bb] += u[i+a] * u[i+bb]
				}
			}
		}
	}
}

// update moves every row's site a damped step towards EP's, in parallel
// (each row's own slots), and returns the largest change of a site's
// precision relative to its cavity's.
func (e *classEP) update() float64 {
	p := e.p
	m := p.m
	changes := make([]float64, m.N)
	parallelRange(0, m.N, 0, func(lo, hi int) {
		u := newSiteUpdate(p.L, m.C)
		for k := lo; k < hi; k++ {
			damping := epDamping
			if k < p.Block {
				damping = epDampingBlock
			}
			changes[k] = u.row(p, k, e.mean, e.cov, damping)
		}
	})
	return slices.Max(changes)
}

// siteUpdate is a worker's scratch for EP's row updates.
type siteUpdate struct {
	l, q                              int
	vinv, pc, vc, hc, mc, mud, sd, kk []float64
	vt, tmp, wn, nn, dev, dvc, chol   []float64
	ow                                orthantWork
	es                                mat.EigenSym
	sym                               *mat.SymDense
	vecs                              mat.Dense
}

func newSiteUpdate(l, c int) *siteUpdate {
	q := c - 1
	f := func(k int) []float64 { return make([]float64, k) }
	return &siteUpdate{l: l, q: q, vinv: f(l * l), pc: f(l * l), vc: f(l * l), hc: f(l), mc: f(l), mud: f(q), sd: f(q * q),
		kk: f(l * q), vt: f(l * l), tmp: f(l + q), wn: f(l * l), nn: f(l), dev: f(q), dvc: f(q * l), chol: f(l * l), sym: mat.NewSymDense(l, nil)}
}

// cavity sets u's cavity of row k from its point's marginal (mean, cov):
// its precision pc, linear term hc, covariance vc and mean mc, and the
// label's differences' mean mud and covariance sd under it; false where
// it is not proper.
func (u *siteUpdate) cavity(p *PreparedMulticlass, k int, mean, cov []float64) bool {
	m, l, q := p.m, u.l, u.q
	v := latent1(m, k)
	mu := mean[v*l : (v+1)*l]
	copy(u.vinv, cov[v*l*l:(v+1)*l*l])
	if !cholLower(u.vinv, l) {
		return false
	}
	chol := u.chol
	copy(chol, u.vinv)
	invFromChol(u.vinv, chol, l, u.tmp)
	rw, rnu := p.rw[k*l*l:(k+1)*l*l], p.rnu[k*l:(k+1)*l]
	// The cavity: precision pc = V^-1 - W, linear term hc = V^-1 mu - nu.
	for i := range l {
		s := 0.0
		for j := range l {
			u.pc[i*l+j] = u.vinv[i*l+j] - rw[i*l+j]
			s += u.vinv[i*l+j] * mu[j]
		}
		u.hc[i] = s - rnu[i]
	}
	copy(u.vc, u.pc)
	if !cholLower(u.vc, l) {
		return false
	}
	copy(chol, u.vc)
	invFromChol(u.vc, chol, l, u.tmp)
	for i := range l {
		s := 0.0
		for j := range l {
			s += u.vc[i*l+j] * u.hc[j]
		}
		u.mc[i] = s
	}
	// The label's differences d = DE g + D eps under the cavity: mean
	// DE mc, covariance DE Vc (DE)' + Noise (I + 1 1').
	de := p.de[m.Y[k]]
	dvc := u.dvc // DE Vc
	for j := range q {
		s := 0.0
		for b := range l {
			s += de[j*l+b] * u.mc[b]
			t := 0.0
			for a := range l {
				t += de[j*l+a] * u.vc[a*l+b]
			}
			dvc[j*l+b] = t
		}
		u.mud[j] = s
	}
	for j := range q {
		for i := range q {
			s := m.Noise
			if i == j {
				s += m.Noise
			}
			for b := range l {
				s += dvc[j*l+b] * de[i*l+b]
			}
			u.sd[j*q+i] = s
		}
	}
	return true
}

// row updates row k's site from its point's marginal (mean, cov) and
// returns the change; 0 where the cavity is not proper.
func (u *siteUpdate) row(p *PreparedMulticlass, k int, mean, cov []float64, damping float64) float64 {
	l, q := u.l, u.q
	if !u.cavity(p, k, mean, cov) {
		return 0
	}
	rw, rnu := p.rw[k*l*l:(k+1)*l*l], p.rnu[k*l:(k+1)*l]
	dvc, chol := u.dvc, u.chol
	md, sig, ok := orthantMoments(u.mud, u.sd, &u.ow)
	if !ok {
		return 0
	}
	// K = Vc (DE)' S^-1 = (S^-1 DE Vc)': solve S X = DE Vc.
	sc := slices.Clone(u.sd)
	cholLower(sc, q)
	sinv := make([]float64, q*q)
	invFromChol(sinv, sc, q, u.tmp)
	for b := range l {
		for j := range q {
			s := 0.0
			for i := range q {
				s += sinv[j*q+i] * dvc[i*l+b]
			}
			u.kk[b*q+j] = s
		}
	}
	// The tilted moments: mt = mc + K (md - mud), Vt = Vc - K DE Vc +
	// K sig K'.
	for j := range q {
		u.dev[j] = md[j] - u.mud[j]
	}
	mt := make([]float64, l)
	for a := range l {
		s := u.mc[a]
		for j := range q {
			s += u.kk[a*q+j] * u.dev[j]
		}
		mt[a] = s
		for b := range l {
			t := u.vc[a*l+b]
			for j := range q {
				t -= u.kk[a*q+j] * dvc[j*l+b]
				for i := range q {
					t += u.kk[a*q+j] * sig[j*q+i] * u.kk[b*q+i]
				}
			}
			u.vt[a*l+b] = t
		}
	}
	// The new site: Vt^-1 - pc (its negative eigenvalues clipped to 0:
	// a site is a precision), Vt^-1 mt - hc.
	copy(chol, u.vt)
	for a := range l {
		for b := range a {
			chol[a*l+b] = 0.5 * (u.vt[a*l+b] + u.vt[b*l+a])
		}
	}
	if !cholLower(chol, l) {
		return 0
	}
	vti := make([]float64, l*l)
	invFromChol(vti, chol, l, u.tmp)
	for a := range l {
		for b := range a + 1 {
			u.sym.SetSym(a, b, vti[a*l+b]-u.pc[a*l+b])
		}
	}
	if !u.es.Factorize(u.sym, true) {
		return 0
	}
	vals := u.es.Values(nil)
	u.es.VectorsTo(&u.vecs)
	for a := range l {
		for b := range l {
			s := 0.0
			for i, lam := range vals {
				if lam > 0 {
					s += u.vecs.At(a, i) * lam * u.vecs.At(b, i)
				}
			}
			u.wn[a*l+b] = s
		}
	}
	for a := range l {
		s := -u.hc[a]
		for b := range l {
			s += vti[a*l+b] * mt[b]
		}
		u.nn[a] = s
	}
	// The change, relative to the cavity's precision (its diagonal).
	ch := 0.0
	for a := range l {
		sc := math.Sqrt(u.pc[a*l+a])
		ch = max(ch, math.Abs(u.nn[a]-rnu[a])/sc)
		for b := range l {
			ch = max(ch, math.Abs(u.wn[a*l+b]-rw[a*l+b])/(sc*math.Sqrt(u.pc[b*l+b])))
		}
	}
	for i := range l * l {
		rw[i] = (1-damping)*rw[i] + damping*u.wn[i]
	}
	for i := range l {
		rnu[i] = (1-damping)*rnu[i] + damping*u.nn[i]
	}
	return ch
}

// drawCovariances sets the later points' covariances in e.cov from the
// given number of draws x = T^-1 z of q (drawsOfQ: the same bits for any
// thread count).
func (e *classEP) drawCovariances(draws int) {
	p := e.p
	m, l := p.m, p.L
	drawsOfQ(e.t, draws, func(x []float64) {
		for k := p.Block; k < m.N; k++ {
			c := e.cov[k*l*l : (k+1)*l*l]
			for a := range l {
				for b := range l {
					c[a*l+b] += x[k*l+a] * x[k*l+b]
				}
			}
		}
	})
	for i := p.Block * l * l; i < len(e.cov); i++ {
		e.cov[i] /= float64(draws)
	}
}
