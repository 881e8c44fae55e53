package fit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"

	"gonum.org/v1/gonum/mat"
)

// Gradient is an estimate of the surface f(theta) and of its gradient
// d f / d theta_j = d log p(y | X) / d log h_j (Fisher's identity on the
// particle cloud, core.Score), with the gradient's standard errors and
// covariance from the independent particle groups.
type Gradient struct {
	Theta  []float64
	Result core.Result
	Grad   []float64
	SE     []float64
	// Cov is the k x k (row-major) covariance of Grad's Monte Carlo error,
	// G/(G-1) sum_g w_g^2 (t_g - t)(t_g - t)' (core.Score).
	Cov []float64
}

// ErrNonFinite is returned when an estimate or a gradient is not finite.
var ErrNonFinite = errors.New("fit: the log marginal likelihood or its gradient is not finite")

// Grad estimates f(theta) and its gradient with samples particles and the
// surface's random streams for seed (common random numbers: the estimate
// of f is the one Eval gives). The surface's method must be smc, met
// or ep (core.ErrScoreMethod).
func (s *Surface) Grad(ctx context.Context, theta []float64, samples int, seed uint64) (*Gradient, error) {
	res, f, err := s.Eval(ctx, theta, samples, seed, true)
	if err != nil {
		return nil, err
	}
	return s.gradFrom(res, f, theta)
}

// gradFrom is Grad from an estimate at theta that kept its cloud (res,
// with the Factor f it was made with).
func (s *Surface) gradFrom(res core.Result, f *core.Factor, theta []float64) (*Gradient, error) {
	if math.IsInf(res.LogP, 0) || math.IsNaN(res.LogP) {
		return nil, ErrNonFinite
	}
	k := len(s.Params)
	ks := s.kernels(theta)
	tg := make([]float64, len(res.Cloud.Groups)*k)
	batch := max(1, scoreBatchBytes/(8*f.N*f.N))
	sc, err := core.NewScoreBatches(f, res.Cloud, s.Method, batch, func(first int, a [][]float64) {
		s.Data.KernelGradTo(tg[first*k:(first+len(a))*k], ks, s.Params, a)
	})
	res.Cloud = nil
	if err != nil {
		return nil, err
	}
	g := GradientOf(theta, sc, tg)
	g.Result = res
	return g, nil
}

// scoreBatchBytes bounds the memory of the covariance scores A_g that Grad
// holds at once (core.NewScoreBatches): one N x N matrix per particle
// group, 162 MB each for digits' N (C - 1) = 4500 differences.
const scoreBatchBytes = 256 << 20

// GradientOf is the gradient at theta from the groups' derivatives tg
// (one row of len(theta) per group of sc, whose Weight alone is used):
// their ratio estimate, standard errors and covariance (Gradient), with
// Result unset.
func GradientOf(theta []float64, sc *core.Score, tg []float64) *Gradient {
	k := len(theta)
	groups := len(sc.Weight)
	g := &Gradient{Theta: append([]float64(nil), theta...), Grad: make([]float64, k), SE: make([]float64, k), Cov: make([]float64, k*k)}
	col := make([]float64, groups)
	for j := range k {
		for q := range groups {
			col[q] = tg[q*k+j]
		}
		g.Grad[j], g.SE[j] = sc.Combine(col)
	}
	if groups > 1 {
		c := float64(groups) / float64(groups-1)
		for q := range groups {
			w := sc.Weight[q]
			for i := range k {
				di := w * (tg[q*k+i] - g.Grad[i])
				for j := range k {
					g.Cov[i*k+j] += c * di * w * (tg[q*k+j] - g.Grad[j])
				}
			}
		}
	} else {
		for i := range g.Cov {
			g.Cov[i] = math.NaN()
		}
	}
	return g
}

// EPEvidence returns EP's approximation of f(theta) (core.EP.LogEvidence,
// the evidence GPML's infEP maximizes) and its gradient in theta, EP run to
// tol.
func (s *Surface) EPEvidence(theta []float64, tol float64) (float64, []float64, error) {
	e, err := core.NewEPTol(s.box(theta), s.Jitter, tol)
	if err != nil {
		return 0, nil, err
	}
	g, err := s.epGrad(e, theta)
	return e.LogEvidence(), g, err
}

// epGrad is the gradient in theta of the log evidence of e, EP at theta.
func (s *Surface) epGrad(e *core.EP, theta []float64) ([]float64, error) {
	sc, err := e.Score()
	if err != nil {
		return nil, err
	}
	tg := make([]float64, len(s.Params))
	s.Data.KernelGradTo(tg, s.kernels(theta), s.Params, sc.A)
	return GradientOf(theta, sc, tg).Grad, nil
}

// FitConfig holds the tunables of Surface.Fit. The zero value of every
// field but Samples selects its default.
type FitConfig struct {
	// Samples is the particle count of the exact stage's last round; the
	// rounds before it use Samples/4^r (at least MinFitSamples), so that the
	// optimizer gets close cheaply and then refines.
	Samples int
	// Rounds is the number of exact rounds (default 2).
	Rounds int
	// FinalSamples is the particle count of the final estimate at the
	// optimum (default 4 Samples), on a seed of its own.
	FinalSamples int
	Seed         uint64
	// Prior, if its Mu is not nil, is added to the objective (a maximum a
	// posteriori fit of the log-hyperparameters).
	Prior LogNormalPrior
	// MaxIterations bounds each stage's quasi-Newton iterations (default
	// 100 + 5 k: a step moves a log-hyperparameter by at most MaxStep, and
	// one that runs off to its bound, beta to BoundHigh from 1, takes 55).
	MaxIterations int
	// SkipEP starts the exact stage at theta0 instead of EP's optimum; so
	// does every fit of EPStageMaxVars orthant variables or more.
	SkipEP bool
	// Hessian asks for the curvature at the optimum by central differences
	// of the gradient (2k more gradients at FinalSamples particles), for
	// the Monte Carlo error of the optimum (FitResult.MCSE).
	Hessian bool
	// Lower and Upper, if not nil, bound theta (Bounds): a hyperparameter
	// whose likelihood rises without end in one direction stops at its
	// bound, and FitResult.Bound says so.
	Lower, Upper []float64
	// GTol, if above 0, replaces MaximizeEvidence's gradient norm at
	// which the search stops (epGTol, for an evidence whose gradient is
	// exact): an evidence whose gradient is taken by differences has
	// a noise floor there.
	GTol float64
	// Progress, if not nil, is called after every evaluation with the
	// stage ("ep" or "exact"), the particle count (0 for EP), theta and
	// the objective.
	Progress func(stage string, samples int, theta []float64, f float64)
}

// The stopping rules of the stages: EP's evidence is exact, so its search
// stops at a gradient norm of epGTol or a change of epFTol nats; the
// exact stage's objective has Monte Carlo noise far above 1e-4 nats, so it
// stops when 3 iterations gain less than exactFTol.
const (
	epFTol    = 1e-8
	epGTol    = 1e-5
	exactFTol = 1e-4
)

// EPStageMaxVars is the number of orthant variables from which Fit has no
// EP stage: its exact stage starts at the starting point. EP's evidence
// and its gradient need EP converged (sweeps of N^3/2 multiply-adds until
// the sites change by less than EPFitTol: 14 on digits, N (C - 1) =
// 4500) and an N x N inverse, where the exact stage's estimate needs the
// proposal's EP (5 sweeps from core.EPLargeN variables on), its particles
// and the score: on digits an EP evaluation took 28 s and its gradient 6
// s more, an exact estimate with 500 particles 12 s and its gradient 7 s
// (the 2-core AVX-512 machine, under load), so that the EP stage would
// cost more than the exact stage it shortens. Below, EP's evidence is the
// cheaper, and deterministic, first stage.
const EPStageMaxVars = 2000

// MinFitSamples is the fewest particles of an exact round.
const MinFitSamples = 500

// EPFitTol is the EP tolerance of the EP stage: the evidence's gradient is
// its derivative only at EP's fixed point.
const EPFitTol = 1e-6

// FitResult is the outcome of Surface.Fit.
type FitResult struct {
	// EPTheta and EPLogZ are the EP-evidence optimum and EP's log evidence
	// there (NaN with SkipEP).
	EPTheta []float64
	EPLogZ  float64
	// Theta is the exact optimum; Final the estimate and gradient there
	// with FinalSamples particles on a fresh seed.
	Theta []float64
	Final *Gradient
	// GradNorm is |Final.Grad| and NoiseNorm sqrt(sum_j Final.SE_j^2): the
	// optimizer has converged when the former is not much larger.
	GradNorm, NoiseNorm float64
	// Gain is the exact objective (the log marginal likelihood, plus the
	// log prior) at the exact stage's point less that at EP's optimum,
	// both estimated with FinalSamples particles on the final seed, and
	// SEGain its standard error (DiffSE); KeptEP is set when Gain was
	// not above both MinGain and KeepMargin SEGain, so that Theta is EP's
	// optimum (NaN and false with SkipEP).
	Gain, SEGain float64
	KeptEP       bool
	// Evals counts the exact estimates made, Iterations the quasi-Newton
	// iterations of all rounds.
	Evals, Iterations int
	// Bound is, per hyperparameter, -1 or +1 where the fit ended on the
	// lower or upper edge of the box (FitConfig.Lower, Upper; Bounds): the
	// likelihood (or posterior) still rises beyond it, and the
	// hyperparameter has run off toward 0 or infinity; 0 inside the box.
	Bound []int
	// Hessian (k x k) and MCSE (k) are set with FitConfig.Hessian: the
	// curvature of f at Theta and the Monte Carlo error of each Theta_j,
	// sqrt(diag(H^-1 Cov(g) H^-1)); MCSE is NaN where H is not negative
	// definite.
	Hessian, MCSE []float64
}

// ErrNotConverged is returned by Fit when its last round ran out of
// iterations with the gradient at the optimum far larger than its Monte
// Carlo noise.
type ErrNotConverged struct {
	GradNorm, NoiseNorm float64
	Iterations          int
}

func (e *ErrNotConverged) Error() string {
	return fmt.Sprintf("fit: the optimizer did not converge: gradient norm %.3g after %d iterations, against Monte Carlo noise %.3g (raise --iterations or --samples, or start closer)", e.GradNorm, e.Iterations, e.NoiseNorm)
}

// KeepMargin is the number of standard errors by which the exact stage's
// point must beat EP's optimum in the exact objective for Fit to return
// it: where EP's optimum is already the exact one within the Monte Carlo
// error, moving would only add that error to the hyperparameters, and
// EP's optimum, a deterministic function of the data, is kept.
const KeepMargin = 2

// MinGain is the least gain, in nats of the exact objective, for which Fit
// returns the exact stage's point rather than EP's optimum, however small
// its standard error. Near its maximum the log posterior of the
// log-hyperparameters falls as d^2/2, d the distance in standard
// deviations of their posterior (its Laplace approximation, the metric of
// the Hessian there): a gain of 0.005 nats puts EP's optimum a tenth of a
// posterior standard deviation from the exact one. Closer than that the two
// points are one answer to the data, and EP's, a deterministic function of
// the data with no Monte Carlo error in it, is the one to report (on pima
// under the ard prior the exact stage gained 0.0002 to 0.0009 nats, resolved
// by paired standard errors of 1e-5 to 1e-4, and predicted the held-out
// labels a little worse: docs/fitting.md).
const MinGain = 0.005

// KeepEP reports whether Fit keeps EP's optimum over an exact stage's point
// that is better by gain (in nats of the exact objective) with standard
// error se: unless gain is above MinGain and above KeepMargin se. A NaN se
// (too few groups for one) leaves MinGain alone to decide; a NaN gain keeps
// EP's optimum.
func KeepEP(gain, se float64) bool {
	return !(gain > MinGain && (gain > KeepMargin*se || math.IsNaN(se)))
}

// ConvergedRatio is the largest |gradient| / (its noise norm) at which Fit
// calls the optimum converged: the gradient of f at its maximum is zero, so
// the estimate there is pure noise, of norm about NoiseNorm.
const ConvergedRatio = 3

// Fit maximizes the surface by L-BFGS (maximize: steps of at most MaxStep
// in each log-hyperparameter, inside the box of cfg.Lower and cfg.Upper)
// in two stages: on EP's log evidence, exact in theta and cheap, from
// theta0 (moved into the box); then on the Monte Carlo estimate from EP's
// optimum, with common random numbers (one seed per round, so that within
// a round the objective is a smooth function of theta and the line search
// sees a deterministic function) and the gradient of Fisher's identity,
// in rounds of growing particle counts. A round ends when the gradient is
// within its noise, when the line search can no longer improve, or after
// MaxIterations. The optimum is then estimated again with FinalSamples
// particles on a fresh seed, and so is EP's optimum, on the same seed:
// Fit returns EP's optimum instead unless the exact stage's point is
// better by more than MinGain and by more than KeepMargin standard errors
// of the difference (FitResult.Gain, KeptEP). It returns *ErrNotConverged, with the result,
// if the last round ran out of iterations and the final gradient is more
// than ConvergedRatio times its noise (a round that stops by itself has
// found no better point: with a stiff prior or a tiny Monte Carlo noise
// the gradient there can exceed its noise by far and the point still be
// within a small fraction of a nat of the maximum). It returns a
// *TrapError, without a result, if the start is in a Trap, and with the
// result if the end is: the likelihood is flat there.
func (s *Surface) Fit(ctx context.Context, theta0 []float64, cfg FitConfig) (*FitResult, error) {
	k := len(s.Params)
	if len(theta0) != k {
		panic("fit: theta0 has the wrong length")
	}
	cfg = cfg.exactDefaults(k)
	out := &FitResult{EPLogZ: math.NaN()}
	theta := cfg.clip(theta0)
	if err := s.trapAt(theta, false); err != nil {
		return nil, err
	}
	lower, upper := cfg.Lower, cfg.Upper // the box, for FitResult.Bound

	if !cfg.SkipEP && s.Vars < EPStageMaxVars {
		x, lz, err := s.MaximizeEP(ctx, theta, cfg)
		if err != nil {
			return nil, err
		}
		theta, out.EPTheta, out.EPLogZ = x, append([]float64(nil), x...), lz
		cfg = PinEdges(cfg, theta)
	}

	smp := &surfaceSampler{s: s}
	limited, err := Exact(ctx, smp, theta, out.EPTheta, cfg, out)
	if err != nil {
		return nil, err
	}
	if cfg.Hessian {
		if err := Hessian(ctx, smp, out, cfg); err != nil {
			return nil, err
		}
	}
	out.Bound = BoundOf(out.Theta, lower, upper)
	if err := s.trapAt(out.Theta, true); err != nil {
		return out, err
	}
	if limited && !(out.GradNorm <= ConvergedRatio*out.NoiseNorm) {
		return out, &ErrNotConverged{GradNorm: out.GradNorm, NoiseNorm: out.NoiseNorm, Iterations: out.Iterations}
	}
	return out, nil
}

// clip returns theta in the box of cfg.Lower and cfg.Upper.
func (cfg *FitConfig) clip(theta []float64) []float64 {
	x := append([]float64(nil), theta...)
	for j := range x {
		if cfg.Lower != nil {
			x[j] = math.Max(x[j], cfg.Lower[j])
		}
		if cfg.Upper != nil {
			x[j] = math.Min(x[j], cfg.Upper[j])
		}
	}
	return x
}

// MaximizeEP is Fit's first stage alone: L-BFGS on EP's log evidence
// (plus cfg.Prior) from theta0, with cfg's MaxIterations and Progress
// (MaximizeEvidence). It returns EP's optimum and EP's log evidence there.
func (s *Surface) MaximizeEP(ctx context.Context, theta0 []float64, cfg FitConfig) ([]float64, float64, error) {
	// A values-only evaluation (the line search's) solves EP alone, and
	// keeps it for the gradient at the point the search accepts.
	var lastX []float64
	var last *core.EP
	ev := func(x []float64, grad bool) (float64, []float64, error) {
		e := last
		if e == nil || !floatsEqual(x, lastX) {
			var err error
			if e, err = core.NewEPTol(s.box(x), s.Jitter, EPFitTol); err != nil {
				return 0, nil, err
			}
			lastX, last = append(lastX[:0], x...), e
		}
		if !grad {
			return e.LogEvidence(), nil, nil
		}
		g, err := s.epGrad(e, x)
		return e.LogEvidence(), g, err
	}
	x, lz, err := MaximizeEvidence(ctx, theta0, ev, "ep", cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("fit: EP stage: %w", err)
	}
	return x, lz, nil
}

// SnapTol is the most EP's evidence (plus the log prior) may fall when
// snapOff moves hyperparameters to the edge of their box.
const SnapTol = 1e-5

// SnapProbe is the step in each log-hyperparameter, towards the box's
// edge, at which the run-off check first looks (snapOff).
const SnapProbe = 1.0

// snapOff moves the hyperparameters at theta (the optimum of the evidence
// ev: EP's, in Fit) whose gradient points out of the box to the edge it
// points to, if the evidence (plus the log prior) there, and at a probe
// SnapProbe towards it, is within SnapTol of theta's: the
// likelihood is then flat or still rising from theta to the edge (beta
// when the classes separate, the length scale of a feature that no longer
// counts), and where the search left them would depend only on when it
// stopped, its gains having fallen below its tolerance. All such are
// tried at once, and if that costs more than SnapTol, each alone, the one
// nearest its edge first. It returns the point and the evidence there
// (without the prior).
func snapOff(theta []float64, ev Evidence, cfg FitConfig) ([]float64, float64, error) {
	objective := func(x []float64) (float64, float64, []float64, error) {
		lz, g, err := ev(x, true)
		if err != nil {
			return 0, 0, nil, err
		}
		return lz + cfg.Prior.logDensityGrad(x, g), lz, g, nil
	}
	f0, lz0, g, err := objective(theta)
	if err != nil || cfg.Upper == nil || cfg.Lower == nil {
		return theta, lz0, err
	}
	edge := make([]float64, len(theta))
	var out []int
	for j, t := range theta {
		switch {
		case cfg.Lower[j] == cfg.Upper[j]:
		case g[j] > 0 && t < cfg.Upper[j]:
			edge[j] = cfg.Upper[j]
			out = append(out, j)
		case g[j] < 0 && t > cfg.Lower[j]:
			edge[j] = cfg.Lower[j]
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		return theta, lz0, nil
	}
	// value is the objective at y by the evidence's value alone: an edge
	// is taken or not by it (a gradient there would cost as much again,
	// and more where it is taken by differences).
	value := func(y []float64) (float64, float64, bool) {
		lz, _, err := ev(y, false)
		return lz + cfg.Prior.LogDensityOrZero(y), lz, err == nil
	}
	try := func(x []float64, js []int) ([]float64, float64, bool) {
		// First a probe SnapProbe towards the edge: where the objective
		// has fallen by more than SnapTol there, the likelihood is not
		// flat or rising up to the edge, and the edge (an extreme kernel,
		// whose evaluation can cost many times an ordinary one's) is not
		// evaluated.
		probe, y := append([]float64(nil), x...), append([]float64(nil), x...)
		far := false
		for _, j := range js {
			y[j] = edge[j]
			if d := edge[j] - x[j]; math.Abs(d) > SnapProbe {
				probe[j] = x[j] + math.Copysign(SnapProbe, d)
				far = true
			} else {
				probe[j] = edge[j]
			}
		}
		if far {
			if f, _, ok := value(probe); !ok || f < f0-SnapTol {
				return y, 0, false
			}
		}
		f, lz, ok := value(y)
		return y, lz, ok && f >= f0-SnapTol
	}
	if y, lz, ok := try(theta, out); ok {
		return y, lz, nil
	}
	slices.SortStableFunc(out, func(a, b int) int {
		return cmp.Compare(math.Abs(edge[a]-theta[a]), math.Abs(edge[b]-theta[b]))
	})
	x, lz := theta, lz0
	for _, j := range out {
		if y, l, ok := try(x, []int{j}); ok {
			x, lz = y, l
		}
	}
	return x, lz, nil
}

// defaultIterations is FitConfig.MaxIterations' default for k
// hyperparameters.
func defaultIterations(k int) int { return 100 + 5*k }

// LogDensityOrZero is LogDensity, or 0 for a prior with no Mu.
func (p LogNormalPrior) LogDensityOrZero(theta []float64) float64 {
	if p.Mu == nil {
		return 0
	}
	return p.LogDensity(theta)
}

// logDensityGrad adds the prior's gradient to grad and returns its log
// density; 0 and nothing added for a prior with no Mu.
func (p LogNormalPrior) logDensityGrad(theta, grad []float64) float64 {
	if p.Mu == nil {
		return 0
	}
	for j, t := range theta {
		grad[j] -= (t - p.Mu[j]) / (p.SD[j] * p.SD[j])
	}
	return p.LogDensity(theta)
}

// hessStep is the central-difference step of the Hessian in log units.
const hessStep = 0.05

// Hessian sets out.Hessian by central differences of smp's gradient (with
// the prior's) at out.Theta, FinalSamples particles on the final seed
// (common random numbers), and out.MCSE from it and out.Final.Cov.
func Hessian(ctx context.Context, smp Sampler, out *FitResult, cfg FitConfig) error {
	k := len(out.Theta)
	cfg = cfg.exactDefaults(k)
	prior := cfg.Prior.logDensityGrad
	h := make([]float64, k*k)
	seed := cfg.Seed + uint64(cfg.Rounds)
	for j := range k {
		var gs [2][]float64
		for side, sign := range []float64{1, -1} {
			x := append([]float64(nil), out.Theta...)
			x[j] += sign * hessStep
			g, _, err := smp.Estimate(ctx, x, cfg.FinalSamples, seed, true)
			if err != nil {
				return fmt.Errorf("fit: Hessian: %w", err)
			}
			prior(x, g.Grad)
			gs[side] = g.Grad
		}
		for i := range k {
			h[i*k+j] = (gs[0][i] - gs[1][i]) / (2 * hessStep)
		}
	}
	sym := mat.NewSymDense(k, nil)
	for i := range k {
		for j := i; j < k; j++ {
			sym.SetSym(i, j, (h[i*k+j]+h[j*k+i])/2)
		}
	}
	out.Hessian = h
	out.MCSE = make([]float64, k)
	neg := mat.NewSymDense(k, nil)
	neg.ScaleSym(-1, sym)
	var ch mat.Cholesky
	if !ch.Factorize(neg) {
		for j := range out.MCSE {
			out.MCSE[j] = math.NaN()
		}
		return nil
	}
	var hinv mat.SymDense
	if err := ch.InverseTo(&hinv); err != nil {
		return err
	}
	cov := mat.NewDense(k, k, append([]float64(nil), out.Final.Cov...))
	var t, c mat.Dense
	t.Mul(&hinv, cov)
	c.Mul(&t, &hinv)
	for j := range k {
		out.MCSE[j] = math.Sqrt(c.At(j, j))
	}
	return nil
}

func floatsEqual(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// FitCandidate is Fit's default estimator: MethodEP in the greedy order,
// the first of core.AutoCandidates, whose weights stay even where the
// classes nearly separate (large beta), and which common random numbers
// keep smooth in theta (its resampling is rare).
var FitCandidate = core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy}

// NewFitSurface is NewSurface for Fit with one candidate, whose method must
// give a gradient (MethodSMC, MethodMET or MethodEP; core.ErrScoreMethod).
func NewFitSurface(ctx context.Context, data gp.Model, kernel gp.Kernel, params []gp.Hyper, theta0 []float64, cand core.Candidate, jitter float64, cfg core.Config) (*Surface, error) {
	if cand.Method != core.MethodSMC && cand.Method != core.MethodMET && cand.Method != core.MethodEP {
		return nil, core.ErrScoreMethod
	}
	s, _, _, err := NewSurface(ctx, data, kernel, params, theta0, []core.Candidate{cand}, jitter, cfg)
	return s, err
}

// ARDPriorSD is the standard deviation of the default prior of an ard
// kernel's fit (DefaultPriorSD): a normal on each log-hyperparameter,
// centred on the starting point, that puts 95 % of its mass within a
// factor exp(2 ARDPriorSD), about 400, either way of it. It is chosen a
// priori, not on any data set's test split: for standardized features
// and the usual start (length scales sqrt(D), beta 10) it spans length
// scales from far below any distance between points to far above them
// (a feature switched off) and latent scales from 0.025 to 4000, so it
// rules nothing plausible out; what it does is keep D + 1 hyperparameters
// fitted on N points from running off along directions where the
// marginal likelihood is nearly flat (type-II maximum likelihood with one
// length scale per feature overfits: Rasmussen and Williams 2006, section
// 5.4; Cawley and Talbot 2010).
//
// References: C. E. Rasmussen and C. K. I. Williams (2006), Gaussian
// Processes for Machine Learning, MIT Press; G. C. Cawley and N. L. C.
// Talbot (2010), "On over-fitting in model selection and subsequent
// selection bias in performance evaluation", JMLR 11:2079-2107.
const ARDPriorSD = 3

// DefaultPriorSD is the standard deviation of gpc-fit's default prior on
// the log-hyperparameters of a kernel kind: ARDPriorSD for the ard kernel,
// whose D + 1 hyperparameters need it, and 0 (no prior: type-II maximum
// likelihood) for the others, whose two or three hyperparameters the
// marginal likelihood determines well.
func DefaultPriorSD(kind gp.KernelKind) float64 {
	if kind == gp.KernelARD {
		return ARDPriorSD
	}
	return 0
}

// NewLogNormalPrior returns the prior with mean mu and standard deviation
// sd on every log-hyperparameter, or no prior (a zero LogNormalPrior) if
// sd is 0.
func NewLogNormalPrior(mu []float64, sd float64) LogNormalPrior {
	if sd == 0 {
		return LogNormalPrior{}
	}
	p := LogNormalPrior{Mu: append([]float64(nil), mu...), SD: make([]float64, len(mu))}
	for j := range p.SD {
		p.SD[j] = sd
	}
	return p
}

// LogPDF is the prior's normalized log density of theta (LogDensity and
// the normal's constant), 0 for a prior with no Mu: the log posterior of a
// fit is its log marginal likelihood plus LogPDF, up to the evidence.
func (p LogNormalPrior) LogPDF(theta []float64) float64 {
	if p.Mu == nil {
		return 0
	}
	return p.LogDensity(theta) - 0.5*float64(len(theta))*math.Log(2*math.Pi)
}
