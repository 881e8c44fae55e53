package core

import (
	"context"
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
//	                                         smc/sharp  met/sharp  met/greedy
//	one-factor (paper's Exp. 1), N = 200      0.00087%   0.00062%   0.00138%
//	one-factor (paper's Exp. 1), N = 500      0.00077%   0.00019%   0.00052%
//	linear-kernel GPC (Exp. 2, problem 3)     0.032%     0.0031%    0.0040%, heavy-tailed
//	RBF GPC, beta = 10, N = 200 (sd, nats)    0.38       0.29       0.029
//	RBF GPC, beta = 10, N = 500 (sd, nats)    ~1         0.15       0.059
//
// smc/sharp is never the best, so it is not a candidate.
var AutoCandidates = []Candidate{{MethodMET, OrderSharp}, {MethodMET, OrderGreedy}}

// Prepare orders and factorises box for candidate c (tilting it for
// MethodMET), as NewFactor and Factor.Tilt do.
func Prepare(box Box, c Candidate, seed uint64, jitter float64) (*Factor, error) {
	f, err := NewFactor(box, Ordering{Kind: c.Order, Seed: seed}, jitter)
	if err != nil {
		return nil, err
	}
	if c.Method == MethodMET {
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

// Pilot is the outcome of one candidate's pilot run.
type Pilot struct {
	Candidate Candidate
	Factor    *Factor
	Result    Result
}

// Choose picks how to run the estimator on box by measurement: for each
// candidate it prepares the factor (order, factorisation, tilt) and runs a
// pilot estimate with PilotSamples(cfg.Samples) particles in 8 groups, then
// returns the best candidate's factor (betterPilot), the candidate, and
// every pilot. The pilots use their own random streams, derived from
// cfg.Seed and the candidate's position, never the main run's. cfg.Method
// is ignored: each candidate brings its own.
func Choose(ctx context.Context, box Box, cands []Candidate, jitter float64, cfg Config) (*Factor, Candidate, []Pilot, error) {
	if len(cands) == 0 {
		panic("core: Choose needs a candidate")
	}
	pcfg := cfg
	pcfg.Samples = PilotSamples(cfg.Samples)
	pcfg.Groups = min(8, pcfg.Samples/2)
	pcfg.Progress = nil
	pcfg.Keep = false
	pcfg.ESSThreshold = 0
	pilots := make([]Pilot, len(cands))
	best := 0
	for k, c := range cands {
		p := &pilots[k]
		p.Candidate = c
		var err error
		if p.Factor, err = Prepare(box, c, cfg.Seed, jitter); err != nil {
			// Every candidate sees the same matrix: a data error is final.
			return nil, c, pilots, err
		}
		pcfg.Method = c.Method
		pcfg.Seed = splitmix64(cfg.Seed ^ splitmix64(domainPilot^splitmix64(uint64(k))))
		if p.Result, err = Estimate(ctx, p.Factor, pcfg); err != nil {
			return nil, c, pilots, err
		}
		if k > 0 && betterPilot(&p.Result, &pilots[best].Result) {
			best = k
		}
	}
	return pilots[best].Factor, pilots[best].Candidate, pilots, nil
}

// betterPilot reports whether pilot a, of a later candidate, beats pilot b,
// the best so far. Both estimate the same P without bias, but log P-hat
// falls below log P by about half its variance, and by more when the
// weights are heavy-tailed, so an estimate higher by more than twice the
// combined standard error marks the better candidate. Otherwise a needs a
// standard error below PilotMargin times b's: pilots are small, their
// standard errors rough (8 groups), and the earlier candidates are preferred
// for what they measured on full-size runs. A pilot that estimated P = 0 or
// has no standard error loses.
func betterPilot(a, b *Result) bool {
	an, bn := math.IsNaN(a.SE) || math.IsInf(a.LogP, -1), math.IsNaN(b.SE) || math.IsInf(b.LogP, -1)
	if an || bn {
		return !an && bn || an && bn && a.LogP > b.LogP
	}
	if d := a.LogP - b.LogP; math.Abs(d) > 2*math.Hypot(a.SE, b.SE) {
		return d > 0
	}
	return a.SE < PilotMargin*b.SE
}

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
