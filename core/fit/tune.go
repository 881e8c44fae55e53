package fit

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"math"
	"strconv"
)

// Surface is the log marginal likelihood of a classifier as a function of
// log-hyperparameters,
//
//	f(theta) = log p(y | X, k_theta),   theta_j = log h_j,
//
// h_j the value of hyperparameter Params[j] (the others keep their values in
// Kernel), estimated with common random numbers: every evaluation uses the
// same method, the same variable order Perm and, for a given seed, the same
// random streams (group g draws from the stream of (seed, g) at every
// theta). The estimate is then a smooth function of theta for a fixed seed
// wherever no resampling step appears or disappears, and the difference
// between two nearby thetas is far more precise than either value.
//
// Choosing the order by the covariance at each theta (greedy or variance
// pivoting) would reassign the uniforms to other variables from one theta to
// the next, and the method chosen by pilots could change too: both would
// make the random numbers no longer common. NewSurface chooses both once, at
// a reference point.
type Surface struct {
	// Data is the training set: a gp.Classifier, or a gp.Multiclass whose
	// own kernels are not used.
	Data gp.Model
	// Kernel holds the fixed hyperparameters, those in Params being
	// overwritten; a model with several kernels (Data.KernelCount: a
	// Multiclass with a kernel per class) starts each from it, Params
	// naming the kernel (gp.Hyper.Class).
	Kernel gp.Kernel
	Params []gp.Hyper // the coordinates of theta
	// Method and Perm are the estimator and the variable order (Perm[k] is
	// the input index of the k-th variable) used at every theta.
	Method core.Method
	Perm   []int
	// Vars is the number of orthant variables: N, or N (C - 1) for C
	// classes.
	Vars   int
	Jitter float64
	// Config holds the estimator's tunables; Method, Samples, Seed and Keep
	// are set per evaluation.
	Config core.Config
}

// NewSurface returns the Surface of data over params, the method and order
// chosen among cands by pilot runs (Choose, with cfg's particle count and
// seed) at the reference point theta0, or prepared directly when cands has
// one element. It also returns the pilots (nil without a choice) and the
// kind of the order chosen at theta0.
func NewSurface(ctx context.Context, data gp.Model, kernel gp.Kernel, params []gp.Hyper, theta0 []float64, cands []core.Candidate, jitter float64, cfg core.Config) (*Surface, []core.Pilot, core.OrderKind, error) {
	if len(theta0) != len(params) {
		panic("fit: theta0 and params differ in length")
	}
	s := &Surface{Data: data, Kernel: kernel, Params: params, Jitter: jitter, Config: cfg}
	s.Kernel.Alpha = append([]float64(nil), kernel.Alpha...)
	box := s.box(theta0)
	var f *core.Factor
	var pilots []core.Pilot
	var err error
	if len(cands) > 1 {
		var c core.Candidate
		f, c, pilots, err = core.Choose(ctx, box, cands, jitter, cfg)
		s.Method = c.Method
	} else {
		s.Method = cands[0].Method
		f, err = core.Prepare(box, cands[0], cfg.Seed, jitter)
	}
	if err != nil {
		return nil, pilots, 0, err
	}
	s.Perm = append([]int(nil), f.Perm...)
	s.Vars = f.N
	return s, pilots, f.Order, nil
}

// kernels returns the kernels at theta (Data.KernelCount of them): each
// hyperparameter exp(theta_j) rounded to 15 significant digits, so that a
// value the user gave (8, whose log's exp is 7.999999999999998) is the
// value used, as gpc-kernel would use it, and the estimate there is
// gpc-train's to the last bit.
func (s *Surface) kernels(theta []float64) []*gp.Kernel {
	ks := make([]*gp.Kernel, s.Data.KernelCount())
	for c := range ks {
		k := s.Kernel
		k.Alpha = append([]float64(nil), s.Kernel.Alpha...)
		ks[c] = &k
	}
	for j, h := range s.Params {
		h.Set(ks[h.Class], round15(math.Exp(theta[j])))
	}
	return ks
}

// kernel returns the (first) kernel at theta.
func (s *Surface) kernel(theta []float64) *gp.Kernel { return s.kernels(theta)[0] }

// box returns the orthant problem at theta.
func (s *Surface) box(theta []float64) core.Box { return s.Data.KernelBox(s.kernels(theta)) }

// round15 rounds x to 15 significant digits.
func round15(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 15, 64), 64)
	if err != nil {
		return x
	}
	return v
}

// KernelAt returns the kernel at theta (the first, for a model with a
// kernel per class: KernelsAt).
func (s *Surface) KernelAt(theta []float64) *gp.Kernel { return s.kernel(theta) }

// KernelsAt returns the model's kernels at theta.
func (s *Surface) KernelsAt(theta []float64) []*gp.Kernel { return s.kernels(theta) }

// Factor prepares the classifier's orthant problem at theta for the
// surface's method in its fixed order.
func (s *Surface) Factor(theta []float64) (*core.Factor, error) {
	return core.PrepareOrdered(s.box(theta), s.Method, s.Perm, s.Jitter)
}

// Eval estimates f(theta) with the given particle count and seed; with keep
// the Result carries the particle cloud. It also returns the Factor, which
// prediction needs with the cloud.
func (s *Surface) Eval(ctx context.Context, theta []float64, samples int, seed uint64, keep bool) (core.Result, *core.Factor, error) {
	f, err := s.Factor(theta)
	if err != nil {
		return core.Result{}, nil, err
	}
	cfg := s.Config
	cfg.Method, cfg.Samples, cfg.Seed, cfg.Keep = s.Method, samples, seed, keep
	res, err := core.Estimate(ctx, f, cfg)
	return res, f, err
}

// groupSizes returns the particle counts of Estimate's groups.
func groupSizes(samples, groups int) []int {
	sizes := make([]int, groups)
	for k := range sizes {
		sizes[k] = samples / groups
		if k < samples%groups {
			sizes[k]++
		}
	}
	return sizes
}

// relGroups returns each group's estimate relative to the combined one,
// c_g = I_g / I, for a result whose groups have the given sizes. Their
// size-weighted mean is 1.
func relGroups(r *core.Result) []float64 {
	c := make([]float64, len(r.GroupLogP))
	for g, l := range r.GroupLogP {
		c[g] = math.Exp(l - r.LogP)
	}
	return c
}

// DiffSE returns the standard error of the difference b.LogP - a.LogP of
// two estimates made with common random numbers (the same particle count,
// groups and seed, so that group g of a and group g of b are a pair), by
// the delta method over the paired groups:
//
//	d_g = I_g(b)/I(b) - I_g(a)/I(a),   SE^2 = sum_g n_g d_g^2 / ((G - 1) M),
//
// the standard error of Result.SE applied to the difference (d has
// size-weighted mean 0). Positive correlation between the pairs makes it
// much smaller than hypot(a.SE, b.SE). It returns NaN for one group or an
// estimate of P = 0, and panics if the two results' groups differ.
func DiffSE(a, b *core.Result) float64 {
	if a.Samples != b.Samples || a.Groups != b.Groups || len(a.GroupLogP) != len(b.GroupLogP) {
		panic("fit: DiffSE needs two results with the same samples and groups")
	}
	if a.Groups < 2 || math.IsInf(a.LogP, -1) || math.IsInf(b.LogP, -1) {
		return math.NaN()
	}
	sizes := groupSizes(a.Samples, a.Groups)
	ca, cb := relGroups(a), relGroups(b)
	s := 0.0
	for g := range ca {
		d := cb[g] - ca[g]
		s += float64(sizes[g]) * d * d
	}
	return math.Sqrt(s / float64(a.Groups-1) / float64(a.Samples))
}

// GroupCorrelation returns the correlation, over the paired groups, of the
// group estimates of two results made with common random numbers: 1 when
// the groups move together, 0 for independent random numbers.
func GroupCorrelation(a, b *core.Result) float64 {
	ca, cb := relGroups(a), relGroups(b)
	n := float64(len(ca))
	var ma, mb float64
	for g := range ca {
		ma += ca[g] / n
		mb += cb[g] / n
	}
	var sab, saa, sbb float64
	for g := range ca {
		sab += (ca[g] - ma) * (cb[g] - mb)
		saa += (ca[g] - ma) * (ca[g] - ma)
		sbb += (cb[g] - mb) * (cb[g] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}

// errNoEstimate marks an evaluation that gave no finite estimate.
var errNoEstimate = errors.New("fit: the estimate of P is 0")

// evalFinite is Eval that also refuses an estimate of P = 0.
func (s *Surface) evalFinite(ctx context.Context, theta []float64, samples int, seed uint64) (core.Result, error) {
	res, _, err := s.Eval(ctx, theta, samples, seed, false)
	if err == nil && math.IsInf(res.LogP, -1) {
		err = errNoEstimate
	}
	return res, err
}

// Optimum is the maximum of a Surface's estimate for one seed, refined by a
// local quadratic fit, with its uncertainties.
type Optimum struct {
	// Theta is the log-hyperparameters of the maximum: the stationary point
	// of the quadratic fitted around the Nelder-Mead optimum.
	Theta []float64
	// Result is the estimate at Theta.
	Result core.Result
	// Evals counts the estimates made (the simplex's and the fit's).
	Evals int
	// Hessian (k x k, row-major) is the fit's second derivative of log ML
	// in theta.
	Hessian []float64
	// MCSE is the Monte Carlo standard error of each Theta_j: the
	// stationary point theta* = theta0 - H^-1 g moves with the estimated
	// gradient g, whose covariance comes from the paired groups of the
	// fit's estimates (the delta method of DiffSE), so
	// Cov(theta*) = H^-1 Cov(g) H^-1. It is what a different seed would
	// change.
	MCSE []float64
	// Width is sqrt(diag((-H)^-1)): the width of the likelihood's peak in
	// each log-hyperparameter (what the data say about it), NaN where the
	// fitted quadratic is not concave.
	Width []float64
}

// OptimizeConfig holds the tunables of Surface.Maximize. The zero value of
// every field but Samples selects its default.
type OptimizeConfig struct {
	Samples int
	Seed    uint64
	// Step is the initial simplex's edge in each coordinate (log units;
	// default 0.5), and the fit's half-width is Step/4 (FitFraction).
	Step []float64
	// XTol ends the simplex search when its best vertex has stayed within
	// XTol of where it was, in every coordinate, over the last iterations
	// (NelderMead; default 0.01: 1 % in each hyperparameter); MaxEvals
	// bounds its estimates (default 200 per coordinate).
	XTol     float64
	MaxEvals int
	// Lower and Upper, if not nil, bound the simplex search: a point
	// outside counts as infeasible (the fit's stencil may cross them).
	Lower, Upper []float64
	// Eval, if not nil, is called after every estimate.
	Eval func(theta []float64, res *core.Result)
}

// Maximize finds the maximum of the surface's estimate for cfg.Seed,
// starting from theta0: the Nelder-Mead simplex search on the common-random-
// numbers surface (which is smooth in theta for a fixed seed), restarted
// from its optimum with the initial step until it stays put, then a
// quadratic fitted on the central-difference stencil around its optimum
// (2k^2 + 1 estimates) for the refined point, its Monte Carlo error and the
// likelihood's width (Optimum). An evaluation that fails (EP breaking down
// at an extreme theta, P estimated as 0) counts as -Inf to the search.
func (s *Surface) Maximize(ctx context.Context, theta0 []float64, cfg OptimizeConfig) (*Optimum, error) {
	k := len(s.Params)
	if len(theta0) != k {
		panic("fit: theta0 has the wrong length")
	}
	step := cfg.Step
	if step == nil {
		step = make([]float64, k)
		for j := range step {
			step[j] = 0.5
		}
	}
	xtol := cfg.XTol
	if xtol == 0 {
		xtol = 0.01
	}
	maxEvals := cfg.MaxEvals
	if maxEvals == 0 {
		maxEvals = 200 * k
	}
	evals := 0
	var ctxErr error
	neg := func(theta []float64) float64 {
		if ctxErr != nil {
			return math.Inf(1)
		}
		for j, v := range theta {
			if cfg.Lower != nil && v < cfg.Lower[j] || cfg.Upper != nil && v > cfg.Upper[j] {
				return math.Inf(1)
			}
		}
		evals++
		res, err := s.evalFinite(ctx, theta, cfg.Samples, cfg.Seed)
		if err != nil {
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
			}
			return math.Inf(1)
		}
		if cfg.Eval != nil {
			cfg.Eval(theta, &res)
		}
		return -res.LogP
	}
	// Restart the simplex from its optimum with the initial step until it
	// stays put: on a long, flat ridge the simplex can collapse across the
	// ridge and stall before reaching the maximum along it (Lagarias et
	// al. 1998; the usual remedy).
	best, fbest := NelderMead(neg, theta0, step, xtol, maxEvals)
	for range MaxRestarts {
		if ctxErr != nil || evals >= maxEvals {
			break
		}
		x, fx := NelderMead(neg, best, step, xtol, maxEvals-evals)
		moved := false
		for j := range x {
			moved = moved || math.Abs(x[j]-best[j]) > xtol
		}
		if fx < fbest {
			best, fbest = x, fx
		}
		if !moved {
			break
		}
	}
	if ctxErr != nil {
		return nil, ctxErr
	}
	h := make([]float64, k)
	for j := range h {
		h[j] = step[j] * FitFraction
	}
	opt, err := s.fit(ctx, best, h, cfg)
	if err != nil {
		return nil, err
	}
	opt.Evals += evals
	return opt, nil
}

// MaxRestarts bounds Maximize's restarts of the simplex search.
const MaxRestarts = 5

// FitFraction is the half-width of Maximize's quadratic fit as a fraction
// of the simplex's initial step. The fitted stationary point is biased by
// the cubic term, about h^2 f3/(6 |f2|) in one dimension (f2, f3 the
// second and third derivatives), and its noise
// grows as h shrinks only through the Hessian (the gradient's
// common-random-numbers noise does not depend on h): on the linear kernel
// of the tests a step of 0.5 gives a bias of 0.008 at h = step/2 and 0.002
// at step/4.
const FitFraction = 0.25

// fit estimates the surface on the central-difference stencil around
// theta0 (half-widths h) and returns the Optimum of the fitted quadratic.
func (s *Surface) fit(ctx context.Context, theta0, h []float64, cfg OptimizeConfig) (*Optimum, error) {
	k := len(theta0)
	eval := func(dir []float64) (core.Result, error) {
		th := make([]float64, k)
		for j := range th {
			th[j] = theta0[j] + dir[j]*h[j]
		}
		res, err := s.evalFinite(ctx, th, cfg.Samples, cfg.Seed)
		if err != nil {
			return res, fmt.Errorf("core: the fit around the optimum, at %v: %w", th, err)
		}
		if cfg.Eval != nil {
			cfg.Eval(th, &res)
		}
		return res, nil
	}
	unit := func(j int, sj float64, l int, sl float64) []float64 {
		d := make([]float64, k)
		d[j] += sj
		if l >= 0 {
			d[l] += sl
		}
		return d
	}
	opt := &Optimum{Hessian: make([]float64, k*k)}
	c0, err := eval(make([]float64, k))
	if err != nil {
		return nil, err
	}
	opt.Evals++
	g := make([]float64, k)
	// dg[j] holds each group's contribution to g_j (relative group
	// estimates differenced like g).
	dg := make([][]float64, k)
	plus, minus := make([]core.Result, k), make([]core.Result, k)
	for j := range k {
		if plus[j], err = eval(unit(j, 1, -1, 0)); err != nil {
			return nil, err
		}
		if minus[j], err = eval(unit(j, -1, -1, 0)); err != nil {
			return nil, err
		}
		opt.Evals += 2
		g[j] = (plus[j].LogP - minus[j].LogP) / (2 * h[j])
		opt.Hessian[j*k+j] = (plus[j].LogP - 2*c0.LogP + minus[j].LogP) / (h[j] * h[j])
		cp, cm := relGroups(&plus[j]), relGroups(&minus[j])
		dg[j] = make([]float64, len(cp))
		for q := range cp {
			dg[j][q] = (cp[q] - cm[q]) / (2 * h[j])
		}
	}
	for j := range k {
		for l := j + 1; l < k; l++ {
			var v [4]float64
			for i, sg := range [4][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
				r, err := eval(unit(j, sg[0], l, sg[1]))
				if err != nil {
					return nil, err
				}
				v[i] = r.LogP
			}
			opt.Evals += 4
			hjl := (v[0] - v[1] - v[2] + v[3]) / (4 * h[j] * h[l])
			opt.Hessian[j*k+l], opt.Hessian[l*k+j] = hjl, hjl
		}
	}
	// The stationary point of the quadratic: theta* = theta0 - H^-1 g.
	neg := make([]float64, k*k)
	for i, v := range opt.Hessian {
		neg[i] = -v
	}
	inv, ok := invertSPD(neg, k)
	opt.Theta = append([]float64(nil), theta0...)
	opt.MCSE = make([]float64, k)
	opt.Width = make([]float64, k)
	if !ok {
		// Not concave here (a ridge or the edge of a plateau): keep the
		// simplex's point, with no width and no error from the fit.
		for j := range k {
			opt.MCSE[j], opt.Width[j] = math.NaN(), math.NaN()
		}
		opt.Result = c0
		return opt, nil
	}
	for j := range k {
		for l := range k {
			opt.Theta[j] += inv[j*k+l] * g[l]
		}
		opt.Width[j] = math.Sqrt(inv[j*k+j])
	}
	// Cov(g) from the paired groups, as in DiffSE.
	sizes := groupSizes(c0.Samples, c0.Groups)
	gn := c0.Groups
	cov := make([]float64, k*k)
	for j := range k {
		for l := range k {
			sum := 0.0
			for q := range gn {
				sum += float64(sizes[q]) * dg[j][q] * dg[l][q]
			}
			cov[j*k+l] = sum / float64(gn-1) / float64(c0.Samples)
		}
	}
	// Cov(theta*) = inv cov inv.
	for j := range k {
		v := 0.0
		for a := range k {
			for b := range k {
				v += inv[j*k+a] * cov[a*k+b] * inv[b*k+j]
			}
		}
		opt.MCSE[j] = math.Sqrt(v)
	}
	// The estimate at the refined point, unless the step left the stencil
	// (then the fit is an extrapolation: keep the simplex's point).
	inside := true
	for j := range k {
		if math.Abs(opt.Theta[j]-theta0[j]) > h[j] {
			inside = false
		}
	}
	if !inside {
		copy(opt.Theta, theta0)
		opt.Result = c0
		return opt, nil
	}
	res, err := s.evalFinite(ctx, opt.Theta, cfg.Samples, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("core: at the fitted optimum %v: %w", opt.Theta, err)
	}
	if cfg.Eval != nil {
		cfg.Eval(opt.Theta, &res)
	}
	opt.Evals++
	opt.Result = res
	return opt, nil
}

// invertSPD returns the inverse of the symmetric positive definite k x k
// matrix a (row-major), or ok = false if it is not positive definite.
func invertSPD(a []float64, k int) (inv []float64, ok bool) {
	// Cholesky a = L L', then solve column by column.
	l, ok := smallCholesky(a, k, 0)
	if !ok {
		return nil, false
	}
	inv = make([]float64, k*k)
	col := make([]float64, k)
	for c := range k {
		for i := range k {
			s := 0.0
			if i == c {
				s = 1
			}
			for p := range i {
				s -= l[i*k+p] * col[p]
			}
			col[i] = s / l[i*k+i]
		}
		for i := k - 1; i >= 0; i-- {
			s := col[i]
			for p := i + 1; p < k; p++ {
				s -= l[p*k+i] * inv[p*k+c]
			}
			inv[i*k+c] = s / l[i*k+i]
		}
	}
	return inv, true
}

// smallCholesky returns the lower Cholesky factor of the symmetric k x k
// matrix a (row-major, k small), or ok = false if a pivot is not above
// tol.
func smallCholesky(a []float64, k int, tol float64) (l []float64, ok bool) {
	l = make([]float64, k*k)
	for i := range k {
		for j := 0; j <= i; j++ {
			v := a[i*k+j]
			for p := range j {
				v -= l[i*k+p] * l[j*k+p]
			}
			if i == j {
				if !(v > tol) {
					return nil, false
				}
				l[i*k+i] = math.Sqrt(v)
			} else {
				l[i*k+j] = v / l[j*k+j]
			}
		}
	}
	return l, true
}
