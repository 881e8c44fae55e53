package core

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Candidate is one way to run the estimator on a box: a method and a
// variable order.
type Candidate struct {
	Method Method
	Order  OrderKind
}

func (c Candidate) String() string { return c.Method.String() + "/" + c.Order.String() }

// AutoCandidates are the candidates Choose picks among by default, in order
// of preference. Measured at M = 10^4 (MAPE of log P, or the standard
// deviation of log P over seeds where no exact value is known):
//
//	                                      ep/greedy   met/sharp  met/greedy
//	one-factor (paper's Exp. 1), N = 500   0.000001%   0.00019%   0.00052%
//	RBF GPC, beta = 10, N = 200 (sd, nats)  0.0026      0.029      0.029
//	RBF GPC, beta = 10, N = 500 (sd, nats)  0.0039      0.21       0.054
//	equicorrelated 1/2, N = 1000 (SE)       0.0079      0.0080     0.0080
//
// (bench.TestAccuracyStudy). EP's Gaussian is a poor fit where the
// truncated normal is far from Gaussian; met/sharp is the candidate for
// those.
var AutoCandidates = []Candidate{{MethodEP, OrderGreedy}, {MethodMET, OrderSharp}}

// Prepare orders and factorises box for candidate c (tilting it for
// MethodMET, twisting it by EP for MethodEP), as NewFactor, Factor.Tilt and
// PrepareEP do.
func Prepare(box Box, c Candidate, seed uint64, jitter float64) (*Factor, error) {
	return PrepareTrace(box, c, seed, jitter, nil)
}

// PrepareTrace is Prepare telling tr of its phases (see Trace).
func PrepareTrace(box Box, c Candidate, seed uint64, jitter float64, tr Trace) (*Factor, error) {
	ord := Ordering{Kind: c.Order, Seed: seed}
	if c.Method == MethodEP {
		e, err := newEP(box, jitter, EPTol, tr, lazyEP(box.N), widenProposal)
		if err != nil {
			return nil, err
		}
		return e.factorTrace(ord, box.Labels, tr, true)
	}
	tr.printf("%s: ordering and factorising", c)
	f, err := NewFactor(box, ord, jitter)
	if err != nil {
		return nil, err
	}
	if c.Method == MethodMET {
		tr.printf("%s: tilting solve", c)
		st, err := f.Tilt(MaxTiltIterations)
		f.TiltStats = st
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// MaxTiltIterations bounds the Newton iterations of Prepare's tilting solve.
const MaxTiltIterations = 200

// Pilot is the outcome of one candidate's pilot run; Err is set, and the
// rest empty, when the candidate could not be prepared (the tilting solve
// did not converge, EP broke down).
type Pilot struct {
	Candidate Candidate
	Factor    *Factor
	Result    Result
	Err       error
}

// Choose picks how to run the estimator on box by measurement: for each
// candidate it prepares the factor (order, factorisation, tilt) and runs a
// pilot estimate with PilotSamples(cfg.Samples) particles in 8 groups, then
// returns the best candidate's factor (betterPilot), the candidate, and
// every pilot. The pilots use their own random streams, derived from
// cfg.Seed and the candidate's position, never the main run's. cfg.Method
// is ignored: each candidate brings its own.
//
// From EPLargeN variables on, where each candidate's preparation costs
// O(N^3), Choose stops at the first candidate whose pilot is trusted
// (Result.Trust): the later candidates are the fallback where it is not.
// A later candidate wins only with half the standard error (betterPilot),
// which none did where the first was trusted (AutoCandidates' table), and
// its preparation costs a large share of the run: on the large-N issue's
// problem (RBF, alpha 1, beta 10) met/sharp's (the leave-one-out
// variances, n^3/2 multiply-adds, a pivoted factorisation, n^3/6, the
// tilting solve) and pilot took a sixth of the CPU time at N = 5000 and a
// quarter at N = 2000, M = 10^3. The pilots returned are those run.
func Choose(ctx context.Context, box Box, cands []Candidate, jitter float64, cfg Config) (*Factor, Candidate, []Pilot, error) {
	if len(cands) == 0 {
		panic("core: Choose needs a candidate")
	}
	pcfg := cfg
	pcfg.Samples = PilotSamples(cfg.Samples)
	pcfg.Groups = min(8, pcfg.Samples/2)
	pcfg.Progress, pcfg.Trace = nil, nil
	pcfg.Keep, pcfg.Sink = false, nil
	pcfg.ESSThreshold = 0
	pilots := make([]Pilot, len(cands))
	var ep *EP
	var epErr error
	lastEP := -1 // the last EP candidate, whose factor may take EP's storage
	for k, c := range cands {
		if c.Method == MethodEP {
			lastEP = k
		}
	}
	prepare := func(k int, c Candidate) (*Factor, error) {
		if c.Method != MethodEP {
			return PrepareTrace(box, c, cfg.Seed, jitter, cfg.Trace)
		}
		if ep == nil && epErr == nil {
			// One EP solve serves every order.
			ep, epErr = newEP(box, jitter, EPTol, cfg.Trace, lazyEP(box.N), widenProposal)
		}
		if epErr != nil {
			return nil, epErr
		}
		return ep.factorTrace(Ordering{Kind: c.Order, Seed: cfg.Seed}, box.Labels, cfg.Trace, k == lastEP)
	}
	best := -1
	for k, c := range cands {
		p := &pilots[k]
		p.Candidate = c
		var err error
		if p.Factor, err = prepare(k, c); err != nil {
			// Every candidate sees the same matrix: a data error is final.
			// A candidate that cannot be prepared leaves the others.
			var ie *InputError
			if errors.As(err, &ie) {
				return nil, c, pilots, err
			}
			p.Err = err
			continue
		}
		pcfg.Method = c.Method
		pcfg.Seed = splitmix64(cfg.Seed ^ splitmix64(domainPilot^splitmix64(uint64(k))))
		cfg.Trace.printf("pilot %d of at most %d: %s, %d particles", k+1, len(cands), c, pcfg.Samples)
		if p.Result, err = Estimate(ctx, p.Factor, pcfg); err != nil {
			return nil, c, pilots, err
		}
		if best < 0 || betterPilot(&p.Result, &pilots[best].Result) {
			best = k
		}
		if box.N >= EPLargeN && k+1 < len(cands) {
			if ok, _ := pilots[best].Result.Trust(); ok {
				pilots = pilots[:k+1]
				break
			}
		}
	}
	if best < 0 {
		return nil, cands[0], pilots, pilots[0].Err
	}
	return pilots[best].Factor, pilots[best].Candidate, pilots, nil
}

// betterPilot reports whether pilot a, of a later candidate, beats pilot b,
// the best so far. Both estimate the same P without bias, but log P-hat
// falls below log P by about half its variance, and by more when the
// weights are heavy-tailed, so an estimate higher by more than PilotZ
// combined standard errors marks the better candidate. Otherwise a needs a
// standard error below PilotMargin times b's: pilots are small, their
// standard errors rough (8 groups), and the earlier candidates are preferred
// for what they measured on full-size runs. A pilot that estimated P = 0 or
// has no standard error loses.
func betterPilot(a, b *Result) bool {
	an, bn := math.IsNaN(a.SE) || math.IsInf(a.LogP, -1), math.IsNaN(b.SE) || math.IsInf(b.LogP, -1)
	if an || bn {
		return !an && bn || an && bn && a.LogP > b.LogP
	}
	if d := a.LogP - b.LogP; math.Abs(d) > PilotZ*math.Hypot(rawSE(a), rawSE(b)) {
		return d > 0
	}
	return a.SE < PilotMargin*b.SE
}

// rawSE is r's standard error without StudentScale: the pilots' threshold
// (PilotZ) was set on it.
func rawSE(r *Result) float64 { return r.SE / StudentScale(r.Groups) }

// PilotZ is how many combined standard errors apart two pilot estimates
// must be for the higher to win. The pilots' standard errors come from 8
// groups (a t distribution with 7 degrees of freedom, P(t > 3) = 1 %), and
// a heavy-tailed candidate's are too small: at 2, met/sharp displaced
// ep/greedy on 2 of the 10 one-factor problems of Experiment 1 at N = 200,
// whose exact values showed ep/greedy 30 times more accurate.
const PilotZ = 3

// PilotMargin is how much smaller a later candidate's pilot standard error
// must be to displace an earlier one. Pilot standard errors from 8 groups
// of 125 particles vary by a factor 1.5 between seeds, and a heavy-tailed
// candidate's look small; where the choice matters the standard errors
// differ by a factor 3-5.
const PilotMargin = 0.5

// PilotSamples is the particle count of each pilot run of Choose for a
// main run of m particles: m/16, at least 1000 (or m if smaller) and at
// most 20000.
func PilotSamples(m int) int {
	return min(m, max(1000, min(20000, m/16)))
}

// String describes a tilting solve for metadata and messages.
func (s TiltStats) String() string {
	return fmt.Sprintf("newton=%d krylov=%d residual=%.3g bound=%.17g", s.Iterations, s.Krylov, s.Residual, s.LogBound)
}

// PrepareOrdered prepares box for method in the fixed order perm (as
// Prepare does for a candidate, but without choosing the order): for
// MethodEP one EP solve then EP.Factor in that order, for MethodMET the
// factor then its tilt. It serves a fit, which estimates log P at many
// hyperparameters on common random numbers: below EPLargeN variables its
// EP keeps its own sites, rather than letting a pilot widen them at some
// hyperparameters and not at others (widenPiloted), which would make the
// estimate jump where the choice flips; from EPLargeN on it widens them,
// as Prepare does.
func PrepareOrdered(box Box, method Method, perm []int, jitter float64) (*Factor, error) {
	ord := Ordering{Kind: OrderGiven, Perm: perm}
	if method == MethodEP {
		e, err := newEP(box, jitter, EPTol, nil, lazyEP(box.N), widenLarge)
		if err != nil {
			return nil, err
		}
		return e.factor(ord, true)
	}
	f, err := NewFactor(box, ord, jitter)
	if err != nil {
		return nil, err
	}
	if method == MethodMET {
		st, err := f.Tilt(MaxTiltIterations)
		f.TiltStats = st
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}
