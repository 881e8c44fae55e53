package vecchia

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/gpc-mc/gpc/core"
)

// The multi-class estimator as a core.Estimator (PreparedMulticlass):
// its plan and its runner, which propagates a worker's particle groups
// through the training rows (PreparedMulticlass says how).

// Dim returns the model's training rows, the steps of a particle
// (core.Estimator).
func (p *PreparedMulticlass) Dim() int { return p.m.N }

// Plan returns cfg as the estimator runs it (core.Estimator), as
// Prepared.Plan does: MethodEP's groups, the resampling threshold
// DefaultESSThreshold, Groups raised where cfg.MaxMemory asks for smaller
// groups, the groups run at once; each particle holds C values per
// training row.
func (p *PreparedMulticlass) Plan(cfg core.Config) (core.Config, int, error) {
	per := classRunnerBytes(1, p.m.N, p.L, p.m.C)
	if p.KeepPaths > 0 {
		// As Prepared.Plan: a worker's kept paths and a finished group's.
		per += 2 * int64(p.m.N*p.L) * 4 * int64(min(p.KeepPaths, cfg.Samples)) / int64(max(1, cfg.Samples))
	}
	planned, workers, err := plan(cfg, p.m.N, per)
	if p.KeepPaths > 0 {
		planned.SinkAhead = 1
	}
	return planned, workers, err
}

// classRunnerBytes is the memory of one running group of m particles on
// a model of n rows, l coordinates per point and c classes: their latent
// coordinates and the per-particle vectors.
func classRunnerBytes(m, n, l, c int) int64 { return int64(m) * int64(n*l+3*l+c+20) * 8 }

// NewRunner returns a worker's runner for groups of at most maxM
// particles (core.Estimator).
func (p *PreparedMulticlass) NewRunner(cfg *core.Config, maxM int) core.Runner {
	return newClassRunner(p, cfg, maxM)
}

// EstimateMulticlass is core.Estimate on p with sink, if not nil, as its
// Sink, as Estimate is for two classes; a group's posteriors are T C
// values, test row t's class c at t C + c.
func EstimateMulticlass(ctx context.Context, p *PreparedMulticlass, cfg core.Config, sink GroupSink) (core.Result, error) {
	if sink != nil {
		cfg.Sink = func(g int, out core.GroupResult, grp *core.CloudGroup) error { return sink(g, out, grp.Post) }
	}
	return core.Estimate(ctx, p, cfg)
}

// classRunner is runner's multi-class counterpart. The particles' latent
// coordinates are variable-major, variable k L + a (row k's coordinate a)
// at x[(k L + a) m:], m values each.
type classRunner struct {
	p   *PreparedMulticlass
	ess float64
	m   int

	x    []float64
	logw []float64
	r    []float64 // log of each particle's correction (PreparedMulticlass)
	mh   []float64 // L x m: the proposal's conditional means
	mu   []float64 // L x m: the prior's conditional means
	cv   []float64 // max(L, C) x m: the twisted conditional means
	z    []float64 // (C - 1) x m: the label's standardized differences
	lo   []float64
	t    []float64
	cc   []float64
	lg   []float64
	u    []float64
	tmp  []float64
	idx  []int
	tmpI []int
	off  []int64
	orig []int
	seen []bool
	vec  []float64 // scratch

	sw   stepWork
	repL []float64 // the Cholesky factor of Noise D D'

	src core.PCG
	rng *rand.Rand

	pg    []float64 // T C weighted test posteriors
	g     int
	kept  []int     // the paths each group keeps (KeptSizes)
	paths []float32 // the last group's kept paths (keepPaths)
	pw    []float64
	wfin  []float64
	logZ  float64
	minES float64
	res   int
	dead  int
}

func newClassRunner(p *PreparedMulticlass, cfg *core.Config, maxM int) *classRunner {
	c, l := p.m.C, p.L
	r := &classRunner{p: p, ess: cfg.ESSThreshold}
	n := p.m.N * l * maxM
	if cfg.Alloc != nil {
		r.x = cfg.Alloc(n)[:n]
	} else {
		r.x = make([]float64, n)
	}
	vec := func(k int) []float64 { return make([]float64, k*maxM) }
	r.logw, r.r, r.lo, r.t, r.cc, r.lg, r.u, r.tmp, r.wfin = vec(1), vec(1), vec(1), vec(1), vec(1), vec(1), vec(1), vec(1), vec(1)
	r.mh, r.mu, r.cv, r.z = vec(l), vec(l), vec(c), vec(c-1)
	r.idx, r.tmpI, r.orig, r.seen = make([]int, maxM), make([]int, maxM), make([]int, maxM), make([]bool, maxM)
	r.vec = make([]float64, 3*c)
	r.pg = make([]float64, p.m.T*c)
	r.kept = KeptSizes(p.KeepPaths, core.GroupSizes(cfg.Samples, cfg.Groups))
	r.rng = rand.New(&r.src)
	// A repeat's step weighs its label's probability at its point's
	// values: the differences' noise alone, Noise (1 + [j = i]).
	q := c - 1
	r.repL = make([]float64, q*q)
	for j := range q {
		for i := range j + 1 {
			r.repL[j*q+i] = p.m.Noise
			if i == j {
				r.repL[j*q+i] *= 2
			}
		}
	}
	cholLower(r.repL, q)
	return r
}

// RunGroup propagates group g of m particles (core.GroupRunner).
func (r *classRunner) RunGroup(ctx context.Context, g, m int, s core.PCG, progress func(int64)) (core.GroupResult, error) {
	r.m, r.src, r.g = m, s, g
	r.logZ, r.minES, r.res = 0, 1, 0
	var err error
	if r.dead, err = runRows(ctx, r.p.m.N, m, r.p.m.Dup, r, r.logw[:m], r.r[:m], r.orig[:m], &r.logZ, progress); err != nil {
		return core.GroupResult{}, err
	}
	if r.dead < 0 {
		r.finish()
	}
	return core.GroupResult{LogZ: r.logZ, MinESS: r.minES, Resamples: r.res, Ancestors: r.ancestors(), DeadAt: r.dead}, nil
}

// row returns particle values' row of variable v.
func (r *classRunner) row(v int) []float64 { return r.x[v*r.m : (v+1)*r.m] }

// step advances the particles by regular row k: its L coordinates drawn
// jointly from the proposal's conditional with the row's site divided
// out, twisted toward the label by the GHK sequence over the C - 1
// differences (ghk), and each particle's correction updated.
func (r *classRunner) step(k int) {
	p, md, m := r.p, r.p.m, r.m
	l := p.L
	sw := &r.sw
	if !p.stepConsts(k, sw) {
		panic("vecchia: a step's constants failed where the preparation's succeeded")
	}
	pr, em := p.prop, p.em
	logD := 0.0
	for a := range l {
		v := k*l + a
		mh, mu := r.mh[a*m:(a+1)*m], r.mu[a*m:(a+1)*m]
		clear(mh)
		clear(mu)
		s, e := pr.start[v], pr.start[v+1]-a // the earlier points' entries
		if k >= p.Block {
			core.Combine2(mh, mu, r.x, r.offsets(pr.nbr[s:e]), pr.off[s:e], p.pb[s:e])
		} else {
			core.Combine(mh, r.x, r.offsets(pr.nbr[s:e]), pr.off[s:e])
			es, ee := em.Start[v], em.Start[v+1]-a
			core.Combine(mu, r.x, r.offsets(em.Nbr[es:ee]), em.Coef[es:ee])
		}
		logD += math.Log(em.CondVar[v])
	}
	// The weight's Gaussian constant, log sqrt(det Q / det Lambda), and
	// the correction's, -log sqrt(prod_a D_a) - log sqrt(det Q).
	r.logZ += 0.5*(sw.logdetQ-sw.logdetLam) - 0.5*logD - 0.5*sw.logdetQ
	logw := r.logw[:m]
	rr, mhat := r.vec[:l], r.vec[l:2*l]
	rnu := p.rnu[k*l : (k+1)*l]
	eta := p.eta[k*l : (k+1)*l]
	for i := range m {
		// q's conditional: T_kk mhat = eta_k - (the earlier points' part).
		for a := range l {
			rr[a] = eta[a] - r.mh[a*m+i]
		}
		ss := 0.0
		for a := range l {
			v := rr[a]
			ss += v * v
			for b := range a {
				v -= sw.tkk[a*l+b] * mhat[b]
			}
			mhat[a] = v / sw.tkk[a*l+a]
		}
		// The twisted mean c = Lambda^-1 (Q mhat - nu), and the weight's
		// Gaussian part (c' Lambda c - mhat' Q mhat)/2, with Lambda c =
		// Q mhat - nu and mhat' Q mhat = |T_kk mhat|^2.
		cl2 := 0.0
		for a := range l {
			s, qm := 0.0, 0.0
			for b := range l {
				s += sw.mmat[a*l+b] * mhat[b]
				qm += sw.q[a*l+b] * mhat[b]
			}
			s -= sw.cnu[a]
			r.cv[a*m+i] = s
			cl2 += s * (qm - rnu[a])
			r.mh[a*m+i] = mhat[a]
		}
		logw[i] += 0.5 * (cl2 - ss)
	}
	if !r.ghk(k, sw.ls, r.cv, true) {
		return
	}
	// g = c + G z + rchol xi, and the correction: log of the prior's
	// conditional density and of the point's site over q's.
	q := md.C - 1
	wv := p.w[k*l*l : (k+1)*l*l]
	nuv := p.nu[k*l : (k+1)*l]
	xs, dx, xi := r.vec[:l], r.vec[l:2*l], r.vec[2*l:3*l]
	corr := r.r[:m]
	for i := range m {
		for a := range l {
			v := r.cv[a*m+i]
			for j := range q {
				v += sw.g[a*q+j] * r.z[j*m+i]
			}
			xs[a] = v
		}
		r.src.NormFloats(xi)
		for a := range l {
			for b := a; b < l; b++ {
				xs[b] += sw.rchol[b*l+a] * xi[a]
			}
		}
		lr := 0.0
		for a := range l {
			d := xs[a] - r.mu[a*m+i]
			lr -= d * d / (2 * em.CondVar[k*l+a])
			dx[a] = xs[a] - r.mh[a*m+i]
			r.x[(k*l+a)*m+i] = xs[a]
		}
		qd := 0.0
		for a := range l {
			v := 0.0
			for b := range a + 1 {
				v += sw.tkk[a*l+b] * dx[b]
			}
			qd += v * v
		}
		site := 0.0
		for a := range l {
			v := 0.0
			for b := range l {
				v += wv[a*l+b] * xs[b]
			}
			site += xs[a] * (nuv[a] - 0.5*v)
		}
		corr[i] += lr + 0.5*qd + site
	}
}

// ghk runs the GHK sequence of row k's label over its C - 1 differences
// d_j = u_y - u_o(j), o(j) its j-th other class: given each particle's
// means of the coordinates (mean, L x m: a regular row's twisted means,
// or a repeat's point's values), the differences are DE mean + ls z, and
// step j weights each particle by P(d_j >= 0 | z_<j), resamples when the
// effective sample size falls, and (draw: at every step; else all but
// the last) draws z_j from its truncated normal. It reports false if
// every weight is 0.
func (r *classRunner) ghk(k int, ls, mean []float64, draw bool) bool {
	p, m := r.p, r.m
	l, q := p.L, p.m.C-1
	de := p.rowDE[k*q*l : (k+1)*q*l]
	lo, logw := r.lo[:m], r.logw[:m]
	for j := range q {
		dj := de[j*l : (j+1)*l]
		for i := range m {
			s := 0.0
			for b, v := range dj {
				s += v * mean[b*m+i]
			}
			for a := range j {
				s += ls[j*q+a] * r.z[a*m+i]
			}
			lo[i] = -s / ls[j*q+j]
		}
		mx := core.OrthantWeights(lo, r.t[:m], r.cc[:m], r.lg[:m], logw)
		resampled, dead := r.reweight(mx, k)
		if dead {
			return false
		}
		if !draw && j == q-1 {
			break
		}
		u := r.u[:m]
		core.DrawUniforms(u, k == 0 && j == 0, resampled, r.idx[:m], &r.src)
		core.OrthantDraws(r.z[j*m:(j+1)*m], lo, r.t[:m], r.cc[:m], r.lg[:m], u)
	}
	return true
}

// stepRepeat weights the particles by row k's label's probability at the
// latent coordinates of row dp, which it repeats, over row k's own site
// (the GHK sequence on the label's noise alone), and copies dp's values.
func (r *classRunner) stepRepeat(k, dp int) {
	p, m := r.p, r.m
	l := p.L
	rw, rnu := p.rw[k*l*l:(k+1)*l*l], p.rnu[k*l:(k+1)*l]
	logw := r.logw[:m]
	xs := r.vec[:l]
	for i := range m {
		for a := range l {
			xs[a] = r.x[(dp*l+a)*m+i]
		}
		v := 0.0
		for a := range l {
			s := 0.0
			for b := range l {
				s += rw[a*l+b] * xs[b]
			}
			v += xs[a] * (0.5*s - rnu[a])
		}
		logw[i] += v
	}
	if !r.ghk(k, r.repL, r.x[dp*l*m:(dp+1)*l*m], false) {
		return
	}
	copy(r.x[k*l*m:(k+1)*l*m], r.x[dp*l*m:(dp+1)*l*m])
}

// reweight is runner.reweight for the multi-class particles.
func (r *classRunner) reweight(mx float64, k int) (resampled, dead bool) {
	m := r.m
	logw := r.logw[:m]
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		r.logZ = math.Inf(-1)
		return false, true
	}
	s1, s2 := core.ExpSums(logw, mx)
	inc := mx + math.Log(s1)
	r.logZ += inc
	for i := range logw {
		logw[i] -= inc
	}
	ess := s1 * s1 / s2 / float64(m)
	r.minES = math.Min(r.minES, ess)
	if ess >= r.ess {
		return false, false
	}
	idx := r.idx[:m]
	core.Systematic(idx, logw, r.src.Float64Open())
	r.reorder(idx, k)
	for i := range logw {
		logw[i] = -math.Log(float64(m))
	}
	r.res++
	return true, false
}

// reorder moves particle idx[i]'s state to slot i: its latent values of
// the rows before row k, its correction, the step's per-particle values
// and its first ancestor.
func (r *classRunner) reorder(idx []int, k int) {
	m, c, l := r.m, r.p.m.C, r.p.L
	tmp := r.tmp[:m]
	perm := func(v []float64) {
		for i, j := range idx {
			tmp[i] = v[j]
		}
		copy(v, tmp)
	}
	for v := range k * l {
		perm(r.x[v*m : (v+1)*m])
	}
	for _, v := range [][]float64{r.r, r.lo, r.t, r.cc, r.lg} {
		perm(v[:m])
	}
	for a := range l {
		perm(r.mh[a*m : (a+1)*m])
		perm(r.mu[a*m : (a+1)*m])
		perm(r.cv[a*m : (a+1)*m])
	}
	for j := range c - 1 {
		perm(r.z[j*m : (j+1)*m])
	}
	o := r.tmpI[:m]
	for i, j := range idx {
		o[i] = r.orig[j]
	}
	copy(r.orig[:m], o)
}

// finish applies each particle's correction to the model's target, adds
// its log mean to the estimate, and sets the group's weighted test
// posteriors (testPosteriors) and kept paths (keptPaths: the L N
// coordinates of a path, by variable, in float32; drawn after the test
// posteriors, so that these do not depend on the paths kept).
func (r *classRunner) finish() {
	m := r.m
	logw, corr, w := r.logw[:m], r.r[:m], r.wfin[:m]
	mx := math.Inf(-1)
	for i := range m {
		w[i] = logw[i] + corr[i]
		mx = max(mx, w[i])
	}
	s1, s2 := core.ExpSums(w, mx)
	r.logZ += mx + math.Log(s1)
	r.minES = math.Min(r.minES, s1*s1/s2/float64(m))
	for i := range w {
		w[i] = math.Exp(w[i]-mx) / s1
	}
	r.testPosteriors(w)
	r.keepPaths(w)
}

// keepPaths sets the group's kept paths and their weights from its final
// particles, whose normalized weights are w (nil: a dead group's zero
// paths), as the two-class runner's keepPaths.
func (r *classRunner) keepPaths(w []float64) {
	r.paths, r.pw = keptPaths(r.paths, r.pw, r.kept[r.g], r.m, r.p.m.N*r.p.L, r.x, w, r.idx, &r.src)
}

// testPosteriors sets the group's weighted test posteriors: each test
// row's class probabilities given a particle's training values
// (classRow), averaged with the final weights w.
func (r *classRunner) testPosteriors(w []float64) {
	p, m, md := r.p, r.m, r.p.m
	c, l := md.C, p.L
	if md.T == 0 {
		return
	}
	// The test row's coordinates' means (L x m, in mh): a test row's
	// coordinates are independent given the training ones, each with its
	// conditional variance.
	means := r.mh[:l*m]
	rs := newClassRowScratch(c)
	combine := func(mu []float64, off []int64, coef []float64) { core.Combine(mu, r.x, off, coef) }
	for t := range md.T {
		r.off = md.testMeans(means, t, l, m, r.off, combine)
		md.classRow(r.pg[t*c:(t+1)*c], t, means, w, p.e, rs, r.rng)
	}
}

// testMeans sets means (L x m, by coordinate) to test row t's L latent
// coordinates' conditional means given each of m particles' training
// coordinates, with combine(mu, off, coef) adding to mu the coefficients
// coef times the particles' values of the variables whose rows of m
// values start at the offsets off (variable k L + a for row k's
// coordinate a). off is scratch, returned grown.
func (md *Multiclass) testMeans(means []float64, t, l, m int, off []int64, combine func(mu []float64, off []int64, coef []float64)) []int64 {
	s, e := md.TStart[t], md.TStart[t+1]
	for a := range l {
		i := 0
		if !md.Shared() {
			i = a
		}
		mu := means[a*m : (a+1)*m]
		clear(mu)
		off = off[:0]
		for _, j := range md.TNbr[s:e] {
			off = append(off, (int64(j)*int64(l)+int64(a))*int64(m))
		}
		combine(mu, off, md.TCoef[i][s:e])
	}
	return off
}

// classRowScratch is classRow's scratch for C classes.
type classRowScratch struct{ sd, prob, xm []float64 }

func newClassRowScratch(c int) *classRowScratch {
	return &classRowScratch{sd: make([]float64, c), prob: make([]float64, c), xm: make([]float64, 2*c)}
}

// classRow sets pg (C values) to test row t's class probabilities
// averaged over the particles with the normalized weights w, given the
// means of the row's L latent coordinates for each particle (means: L x
// len(w), by coordinate) and their map e (C x L) to the classes' latent
// values: each particle's classProbs, the classes' utilities independent
// of variances TCondVar_c + Noise (the contrasts' common level is no part
// of them), in a fixed order.
func (md *Multiclass) classRow(pg []float64, t int, means, w, e []float64, rs *classRowScratch, rng *rand.Rand) {
	c, m := md.C, len(w)
	l := len(e) / c
	sd, prob, xm := rs.sd, rs.prob, rs.xm
	for cl := range c {
		sd[cl] = math.Sqrt(md.TCondVar[md.class(cl)][t] + md.Noise)
	}
	clear(pg)
	for i := range m {
		if w[i] == 0 {
			continue
		}
		for cl := range c {
			v := 0.0
			for a := range l {
				v += e[cl*l+a] * means[a*m+i]
			}
			xm[cl] = v
		}
		classProbs(prob, xm[:c], sd, rng, xm[c:])
		for cl, v := range prob {
			pg[cl] = math.FMA(w[i], v, pg[cl])
		}
	}
	for cl := range pg {
		pg[cl] = min(pg[cl], 1) // the weights sum to 1 up to rounding
	}
}

// classDraws is the number of draws of a test row's utilities per
// particle for more than three classes (core.DefaultClassDraws, the dense
// path's).
const classDraws = core.DefaultClassDraws

// classProbs sets dst to the probability of each class having the
// largest utility, u_c ~ N(mean_c, sd_c^2) independent: Phi for two
// classes, for three the bivariate normal orthant of each class's two
// differences (core.BivariateUpper), for more the share of classDraws
// antithetic draws in which the class is largest (unbiased: its error is
// part of the groups' spread), as core.PredictClasses computes them.
// scratch has C values.
func classProbs(dst, mean, sd []float64, rng *rand.Rand, scratch []float64) {
	c := len(mean)
	switch c {
	case 2:
		p1 := core.Phi((mean[1] - mean[0]) / math.Hypot(sd[0], sd[1]))
		dst[0], dst[1] = 1-p1, p1
		return
	case 3:
		for k := range 3 {
			l1, l2 := (k+1)%3, (k+2)%3
			if l1 > l2 {
				l1, l2 = l2, l1
			}
			s1, s2 := math.Hypot(sd[k], sd[l1]), math.Hypot(sd[k], sd[l2])
			rho := sd[k] * sd[k] / (s1 * s2)
			dst[k] = core.BivariateUpper(-(mean[k]-mean[l1])/s1, -(mean[k]-mean[l2])/s2, rho)
		}
		return
	}
	clear(dst)
	zeta := scratch[:c]
	inc := 1 / float64(classDraws)
	for range classDraws / 2 {
		for i := range zeta {
			zeta[i] = rng.NormFloat64()
		}
		for _, sign := range [2]float64{1, -1} {
			best, bi := math.Inf(-1), 0
			for i := range c {
				if u := mean[i] + sign*sd[i]*zeta[i]; u > best {
					best, bi = u, i
				}
			}
			dst[bi] += inc
		}
	}
}

// ancestors counts the distinct first ancestors of the particles.
func (r *classRunner) ancestors() int {
	seen := r.seen[:r.m]
	clear(seen)
	d := 0
	for _, o := range r.orig[:r.m] {
		if !seen[o] {
			seen[o] = true
			d++
		}
	}
	return d
}

// offsets returns the offsets in x of the rows of variables nbr.
func (r *classRunner) offsets(nbr []int32) []int64 {
	r.off = rowOffsets(r.off, nbr, r.m)
	return r.off
}

// Output returns the group's estimate, test posteriors (NaN for a dead
// group) and kept paths, their arrays detached (core.Runner).
func (r *classRunner) Output() core.CloudGroup {
	if r.dead >= 0 {
		for t := range r.pg {
			r.pg[t] = math.NaN()
		}
		r.keepPaths(nil)
	}
	grp := core.CloudGroup{LogZ: r.logZ, Post: r.pg}
	if r.kept[r.g] > 0 {
		grp.Paths, grp.PathW = r.paths, r.pw
		r.paths, r.pw = nil, nil
	}
	r.pg = nil
	return grp
}

// Reuse takes a spare's posteriors' and kept paths' arrays, or makes the
// posteriors' (core.Runner).
func (r *classRunner) Reuse(spare core.CloudGroup) {
	r.pg = spare.Post
	if r.pg == nil {
		r.pg = make([]float64, r.p.m.T*r.p.m.C)
	}
	r.paths, r.pw = spare.Paths, spare.PathW
}
