package fit

import (
	"context"
	"math"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// Evidence is a deterministic approximation of the log marginal
// likelihood as a function of the log-hyperparameters theta, exact in
// theta and smooth: EP's evidence on the dense path (Surface.MaximizeEP),
// the Vecchia model's Laplace evidence on the Vecchia path. It returns the
// value at theta and, when grad is set, the gradient (its own slice,
// which the caller may change). An error away from the search's start
// counts as a worse point (the search steps back).
type Evidence func(theta []float64, grad bool) (f float64, g []float64, err error)

// MaximizeEvidence is Fit's deterministic first stage on any evidence ev:
// L-BFGS (maximize: steps of at most MaxStep, inside the box of cfg.Lower
// and cfg.Upper, the curvature pairs kept only where s'y > 0) on ev plus
// cfg.Prior from theta0 (moved into the box), with cfg's MaxIterations and
// Progress (stage names the stage, the particle count is 0), stopping at
// a gradient norm of 1e-5 or a gain of 1e-8 nats over 3 iterations; then
// every hyperparameter whose gradient points out of the box is moved to
// the edge it points to where the evidence (plus the log prior) falls by
// at most SnapTol (snapOff). It returns the optimum and the evidence
// there, without the prior.
func MaximizeEvidence(ctx context.Context, theta0 []float64, ev Evidence, stage string, cfg FitConfig) ([]float64, float64, error) {
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = defaultIterations(len(theta0))
	}
	theta0 = cfg.clip(theta0)
	eval := func(x []float64, grad bool) (float64, []float64, error) {
		f, g, err := ev(x, grad)
		if err != nil {
			return 0, nil, err
		}
		if grad {
			f += cfg.Prior.logDensityGrad(x, g)
		} else {
			f += cfg.Prior.LogDensityOrZero(x)
		}
		if cfg.Progress != nil {
			cfg.Progress(stage, 0, x, f)
		}
		return f, g, nil
	}
	gtol := epGTol
	if cfg.GTol > 0 {
		gtol = cfg.GTol
	}
	x, _, err := maximize(ctx, theta0, eval, search{maxIter: cfg.MaxIterations, ftol: epFTol, gtol: gtol, lower: cfg.Lower, upper: cfg.Upper})
	if err != nil {
		return nil, 0, err
	}
	return snapOff(x, ev, cfg)
}

// DrawRestart returns FitStarts' starting point of restart r (r >= 1)
// around theta0: theta0 + RestartSD z, z standard normal from the stream
// of (cfg.Seed, r), moved into the box of cfg.Lower and cfg.Upper, drawn
// again (at most 100 times) while trapped, if not nil, returns an error
// for it (a start in a Trap); it returns the last draw's error if every
// draw is trapped.
func DrawRestart(theta0 []float64, r int, cfg FitConfig, trapped func(theta []float64) error) ([]float64, error) {
	rng := core.NewStream(cfg.Seed, domainRestarts, uint64(r))
	var err error
	for range maxRedraws {
		th := make([]float64, len(theta0))
		for j := range th {
			th[j] = theta0[j] + RestartSD*rng.NormFloat64()
		}
		th = cfg.clip(th)
		if trapped == nil {
			return th, nil
		}
		if err = trapped(th); err == nil {
			return th, nil
		}
	}
	return nil, err
}

// KernelFrom returns a copy of kernel k with each hyperparameter params[j]
// (of class 0: one kernel) set to exp(theta[j]) rounded to 15 significant
// digits, as Surface's kernels are: a value the user gave is the value
// used. It panics if theta and params differ in length.
func KernelFrom(k gp.Kernel, params []gp.Hyper, theta []float64) *gp.Kernel {
	if len(theta) != len(params) {
		panic("fit: KernelFrom: theta and params differ in length")
	}
	out := k
	out.Alpha = append([]float64(nil), k.Alpha...)
	for j, h := range params {
		h.Set(&out, round15(math.Exp(theta[j])))
	}
	return &out
}

// Clip returns theta moved into the box of cfg.Lower and cfg.Upper (a
// copy).
func (cfg *FitConfig) Clip(theta []float64) []float64 { return cfg.clip(theta) }
