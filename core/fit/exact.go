package fit

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
)

// Sampler is a Monte Carlo estimate of f(theta) = log p(y | X, theta) and
// of its gradient by Fisher's identity, on common random numbers: for a
// particle count and a seed the estimate is a function of theta, which
// the exact stage's search follows (Exact). The dense path's Surface is
// one (Fit); core/vecchia/vfit's Sampler is the Vecchia path's.
type Sampler interface {
	// Estimate returns the estimate at theta with samples particles on
	// the random streams of seed and, if grad, its gradient (Grad, SE
	// and Cov; without grad only Theta and Result need be set). fresh
	// reports that it estimated anew, rather than taking the last call's
	// estimate at the same theta, samples and seed (a values-only
	// estimate kept for the gradient a line search asks for next).
	Estimate(ctx context.Context, theta []float64, samples int, seed uint64, grad bool) (g *Gradient, fresh bool, err error)
}

// exactDefaults returns cfg with the exact stage's defaults of a fit of
// k hyperparameters set: 2 rounds, FinalSamples 4 Samples, MaxIterations
// defaultIterations(k).
func (cfg FitConfig) exactDefaults(k int) FitConfig {
	if cfg.Rounds == 0 {
		cfg.Rounds = 2
	}
	if cfg.FinalSamples == 0 {
		cfg.FinalSamples = 4 * cfg.Samples
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = defaultIterations(k)
	}
	return cfg
}

// Exact runs a fit's exact stage on smp from theta: cfg.Rounds rounds of
// the quasi-Newton search on the estimate (plus cfg.Prior), round r with
// Samples / 4^(Rounds-1-r) particles (at least MinFitSamples) on seed
// cfg.Seed + r, within cfg's box, then the final estimate and gradient
// with FinalSamples particles on seed cfg.Seed + Rounds. Where start (the
// deterministic stage's optimum: EP's for the dense fit, Laplace's for
// the Vecchia fit) is not nil, the result is start unless the exact
// stage's point is better by more than MinGain and KeepMargin standard
// errors of the difference, both estimated on the final seed (KeepEP). It
// sets out's Theta, Final (its gradient with the prior's), Gain, SEGain,
// KeptEP, Evals, Iterations, GradNorm and NoiseNorm, and reports whether
// the last round ran out of iterations. cfg.Samples must be set; its
// other counts default as Fit's do.
func Exact(ctx context.Context, smp Sampler, theta, start []float64, cfg FitConfig, out *FitResult) (limited bool, err error) {
	k := len(theta)
	cfg = cfg.exactDefaults(k)
	prior := cfg.Prior.logDensityGrad
	for r := range cfg.Rounds {
		m := max(MinFitSamples, cfg.Samples>>(2*(cfg.Rounds-1-r)))
		seed := cfg.Seed + uint64(r)
		var lastSE []float64 // the standard errors of the last gradient
		eval := func(x []float64, grad bool) (float64, []float64, error) {
			g, fresh, err := smp.Estimate(ctx, x, m, seed, grad)
			if fresh {
				out.Evals++
			}
			if err != nil {
				return 0, nil, err
			}
			f, gr := g.Result.LogP, g.Grad
			if grad {
				lastSE = g.SE
				f += prior(x, gr)
			} else {
				f += cfg.Prior.LogDensityOrZero(x)
			}
			if cfg.Progress != nil {
				cfg.Progress("exact", m, x, f)
			}
			return f, gr, nil
		}
		sc := search{maxIter: cfg.MaxIterations, ftol: exactFTol, lower: cfg.Lower, upper: cfg.Upper,
			noise: func() []float64 { return lastSE }}
		x, it, err := maximize(ctx, theta, eval, sc)
		limited = it < 0
		if limited {
			it = -it - 1
		}
		out.Iterations += it
		if err != nil {
			return false, fmt.Errorf("fit: exact stage (%d particles): %w", m, err)
		}
		theta = x
	}

	finalSeed := cfg.Seed + uint64(cfg.Rounds)
	fin, _, err := smp.Estimate(ctx, theta, cfg.FinalSamples, finalSeed, true)
	if err != nil {
		return false, fmt.Errorf("fit: final estimate: %w", err)
	}
	out.Theta, out.Final = theta, fin
	out.Gain, out.SEGain = math.NaN(), math.NaN()
	if start != nil && floatsEqual(theta, start) {
		out.Gain, out.SEGain, out.KeptEP = 0, 0, true // the exact stage did not move
	} else if start != nil {
		// Keep the deterministic stage's optimum unless the exact stage's
		// point is better by more than MinGain and by more than KeepMargin
		// standard errors of the difference, both estimated on the final
		// seed (common random numbers).
		st, _, err := smp.Estimate(ctx, start, cfg.FinalSamples, finalSeed, true)
		if err != nil {
			return false, fmt.Errorf("fit: final estimate at the first stage's optimum: %w", err)
		}
		out.Gain = fin.Result.LogP + cfg.Prior.LogDensityOrZero(theta) - st.Result.LogP - cfg.Prior.LogDensityOrZero(start)
		out.SEGain = DiffSE(&st.Result, &fin.Result)
		if KeepEP(out.Gain, out.SEGain) {
			out.Theta, out.Final, out.KeptEP = append([]float64(nil), start...), st, true
			theta, fin = out.Theta, st
		}
	}
	if !allFinite(fin.Grad) {
		return false, fmt.Errorf("fit: final estimate: %w", ErrNonFinite)
	}
	if cfg.Prior.Mu != nil {
		prior(theta, fin.Grad)
	}
	out.GradNorm, out.NoiseNorm = 0, 0
	for j := range k {
		out.GradNorm += fin.Grad[j] * fin.Grad[j]
		out.NoiseNorm += fin.SE[j] * fin.SE[j]
	}
	out.GradNorm, out.NoiseNorm = math.Sqrt(out.GradNorm), math.Sqrt(out.NoiseNorm)
	return limited, nil
}

// PinEdges returns cfg with its box pinned (Lower equal to Upper) at
// every hyperparameter on the box's edge at theta, the first stage's
// optimum (run off, or moved there by snapOff: the deterministic
// evidence is flat or rising from its optimum to the edge): it stays
// there in the exact stage, where its gradient is Monte Carlo noise.
// cfg's own box is not modified.
func PinEdges(cfg FitConfig, theta []float64) FitConfig {
	cfg.Lower, cfg.Upper = slices.Clone(cfg.Lower), slices.Clone(cfg.Upper)
	for j, t := range theta {
		if cfg.Upper != nil && t >= cfg.Upper[j] {
			cfg.Lower[j] = cfg.Upper[j]
		}
		if cfg.Lower != nil && t <= cfg.Lower[j] {
			cfg.Upper[j] = cfg.Lower[j]
		}
	}
	return cfg
}

// BoundOf returns, per hyperparameter of theta, -1 or +1 where it is on
// the lower or upper edge of the box (FitResult.Bound), 0 inside it or
// where the box is nil or pins it (lower equal to upper).
func BoundOf(theta, lower, upper []float64) []int {
	b := make([]int, len(theta))
	for j, t := range theta {
		switch {
		case lower == nil || lower[j] == upper[j]:
		case t <= lower[j]:
			b[j] = -1
		case t >= upper[j]:
			b[j] = 1
		}
	}
	return b
}

// surfaceSampler is the dense Surface as the exact stage's Sampler: a
// values-only estimate keeps its cloud, so that the gradient at the
// point a line search accepts (asked for next) costs the score alone,
// not a second preparation and estimate.
type surfaceSampler struct {
	s        *Surface
	lastX    []float64
	lastM    int
	lastSeed uint64
	lastRes  core.Result
	lastF    *core.Factor
}

// Estimate is Sampler's.
func (d *surfaceSampler) Estimate(ctx context.Context, x []float64, m int, seed uint64, grad bool) (*Gradient, bool, error) {
	if grad {
		var g *Gradient
		var err error
		fresh := true
		if d.lastF != nil && floatsEqual(x, d.lastX) && m == d.lastM && seed == d.lastSeed {
			g, err = d.s.gradFrom(d.lastRes, d.lastF, x)
			fresh = false
		} else {
			g, err = d.s.Grad(ctx, x, m, seed)
		}
		d.lastF, d.lastRes.Cloud = nil, nil
		return g, fresh, err
	}
	d.lastF, d.lastRes.Cloud = nil, nil
	res, fac, err := d.s.Eval(ctx, x, m, seed, true)
	if err != nil {
		return nil, true, err
	}
	d.lastX, d.lastM, d.lastSeed, d.lastRes, d.lastF = append(d.lastX[:0], x...), m, seed, res, fac
	return &Gradient{Theta: append([]float64(nil), x...), Result: res}, true, nil
}
