package vfit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// The exact stage on the Vecchia path: the Vecchia model's own log
// marginal likelihood, estimated as gpc-train estimates it, and its
// gradient by Fisher's identity (vecchia.Prepared.Score), followed by the
// dense fit's search (fit.Exact) from the Laplace stage's optimum. The
// structure (the ordering and the neighbours) is the Laplace stage's last
// one and stays fixed through the stage, so that the estimates at
// different hyperparameters share their random numbers: an ard kernel's
// metric is the structure's (Evidence.Scales), as gpc-kernel's would be
// within RestructureFactor.

// ErrExactClasses is returned for a multi-class problem: the exact stage
// is built for two classes.
var ErrExactClasses = errors.New("vfit: the exact stage is built for two classes only (the multi-class estimator keeps no Fisher score yet)")

// Sampler is the Vecchia estimator as the exact stage's fit.Sampler: at
// theta the model of problem P with kernel Kernel (Params at theta) on the
// fixed structure S, prepared by vecchia.Prepare as gpc-train prepares it
// (Laplace, EP, the proposal), estimated by core's driver (core.Estimate)
// with the groups, resampling threshold and streams gpc-train uses, each
// group's Fisher score combined by the groups' estimates of P as the dense
// path's are (core.GroupWeights, fit.GradientOf). It is not safe for
// concurrent use.
type Sampler struct {
	P      *Problem
	Kernel gp.Kernel
	Params []gp.Hyper
	S      *vecchia.Structure

	// The last estimate, for a gradient asked for at the same point: the
	// score comes with every estimate.
	last      *fit.Gradient
	lastM     int
	lastSeed  uint64
	lastTheta []float64
}

// NewSampler returns the Sampler of ev's problem, kernel and structure
// (the Laplace stage's final Evidence), or ErrExactClasses.
func NewSampler(ev *Evidence) (*Sampler, error) {
	if ev.P.multi() {
		return nil, ErrExactClasses
	}
	return &Sampler{P: ev.P, Kernel: ev.Kernel, Params: slices.Clone(ev.Params), S: ev.S}, nil
}

// Estimate is fit.Sampler's: the gradient comes with every estimate.
func (s *Sampler) Estimate(ctx context.Context, theta []float64, samples int, seed uint64, grad bool) (*fit.Gradient, bool, error) {
	fresh := !(s.last != nil && slices.Equal(theta, s.lastTheta) && samples == s.lastM && seed == s.lastSeed)
	if fresh {
		s.last = nil
		g, err := s.estimate(ctx, theta, samples, seed)
		if err != nil {
			return nil, true, err
		}
		s.last, s.lastM, s.lastSeed, s.lastTheta = g, samples, seed, slices.Clone(theta)
	}
	// A copy: the search adds the prior's gradient to what it is given.
	g := *s.last
	g.Grad, g.SE, g.Cov = slices.Clone(g.Grad), slices.Clone(g.SE), slices.Clone(g.Cov)
	return &g, fresh, nil
}

// estimate is Estimate without the last estimate's reuse.
func (s *Sampler) estimate(ctx context.Context, theta []float64, samples int, seed uint64) (*fit.Gradient, error) {
	p := s.P
	k := fit.KernelFrom(s.Kernel, s.Params, theta)
	md, err := vecchia.NewClassifier(s.S, k, p.X, p.Y, p.nugget(), nil, nil, p.Threads)
	if err != nil {
		return nil, err
	}
	prep, err := vecchia.Prepare(ctx, md, nil)
	if err != nil {
		return nil, err
	}
	if prep.Score, err = s.S.ConditionalDerivs(k, s.Params, p.X, p.nugget(), p.Threads); err != nil {
		return nil, err
	}
	np := len(s.Params)
	var mo []float64 // the groups' score moments
	cfg := core.Config{Samples: samples, Seed: seed, Threads: p.Threads,
		Sink: func(g int, _ core.GroupResult, grp *core.CloudGroup) error {
			if g*np*vecchia.ScoreMoments != len(mo) || len(grp.Score) != np*vecchia.ScoreMoments {
				return fmt.Errorf("vfit: group %d's score missing or out of order", g)
			}
			mo = append(mo, grp.Score...)
			return nil
		}}
	res, err := vecchia.Estimate(ctx, prep, cfg, nil)
	if err != nil {
		return nil, err
	}
	if len(mo) != np*vecchia.ScoreMoments*res.Groups || len(res.GroupLogP) != res.Groups {
		return nil, fmt.Errorf("vfit: %d groups' scores for %d groups", len(mo)/(np*vecchia.ScoreMoments), res.Groups)
	}
	w, err := core.GroupWeights(core.GroupSizes(res.Samples, res.Groups), res.GroupLogP)
	if err != nil {
		return nil, err
	}
	tg, _ := vecchia.GroupScores(mo, np, w)
	g := fit.GradientOf(theta, &core.Score{Weight: w}, tg)
	g.Result = res
	return g, nil
}

// Exact runs the exact stage (fit.Exact) on the Vecchia model of ev's
// problem and final structure from the Laplace stage's optimum theta, with
// cfg's box, prior, Samples, Rounds, FinalSamples, Seed, MaxIterations,
// Hessian and Progress (stage "exact"); the result keeps theta unless the
// exact stage's point is better by more than fit.MinGain and
// fit.KeepMargin standard errors (FitResult.KeptEP, EPTheta theta, EPLogZ
// the Laplace evidence lz there). It returns *fit.ErrNotConverged, with
// the result, as fit's Fit does, and a *fit.TrapError, with the result,
// if the end is in a trap. It releases ev's evaluator first (the Laplace
// stage's factors: ev.At fails after it), so that the two stages' memory
// does not add up.
func Exact(ctx context.Context, ev *Evidence, theta []float64, lz float64, cfg fit.FitConfig) (*fit.FitResult, error) {
	smp, err := NewSampler(ev)
	if err != nil {
		return nil, err
	}
	ev.release()
	out := &fit.FitResult{EPTheta: slices.Clone(theta), EPLogZ: lz}
	box := cfg
	cfg = fit.PinEdges(cfg, theta)
	limited, err := fit.Exact(ctx, smp, theta, out.EPTheta, cfg, out)
	if err != nil {
		return nil, err
	}
	if cfg.Hessian {
		if err := fit.Hessian(ctx, smp, out, cfg); err != nil {
			return nil, err
		}
	}
	out.Bound = fit.BoundOf(out.Theta, box.Lower, box.Upper)
	if err := trapAt(ev.P, ev.KernelAt(out.Theta), true); err != nil {
		return out, err
	}
	if limited && !(out.GradNorm <= fit.ConvergedRatio*out.NoiseNorm) {
		return out, &fit.ErrNotConverged{GradNorm: out.GradNorm, NoiseNorm: out.NoiseNorm, Iterations: out.Iterations}
	}
	return out, nil
}
