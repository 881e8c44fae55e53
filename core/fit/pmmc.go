package fit

import (
	"context"
	"errors"
	"github.com/gpc-mc/gpc/core"
	"math"
	"runtime"
	"sync"
)

// domainMCMC is the random stream of a pseudo-marginal chain's own draws
// (proposals, acceptances, the groups' seeds); the estimates draw from the
// streams of their groups' seeds.
const domainMCMC uint64 = 101

// LogNormalPrior is a prior on hyperparameters that makes their logs
// independent normals: theta_j = log h_j ~ N(Mu[j], SD[j]^2), i.e. h_j
// log-normal with median exp(Mu[j]).
type LogNormalPrior struct {
	Mu, SD []float64
}

// LogDensity returns the log prior density of theta (of the logs, up to a
// constant).
func (p LogNormalPrior) LogDensity(theta []float64) float64 {
	s := 0.0
	for j, t := range theta {
		z := (t - p.Mu[j]) / p.SD[j]
		s -= 0.5*z*z + math.Log(p.SD[j])
	}
	return s
}

// EvalSeeds estimates f(theta) with one random stream per group: group g
// has sizes[g] particles (as Estimate splits samples into len(seeds)
// groups) and draws from the stream of seeds[g], so that a chain can renew
// the random numbers of some groups and keep the others'. The groups run
// Config.Threads at a time; the result does not depend on it.
func (s *Surface) EvalSeeds(ctx context.Context, theta []float64, samples int, seeds []uint64, keep bool) (core.Result, *core.Factor, error) {
	f, err := s.Factor(theta)
	if err != nil {
		return core.Result{}, nil, err
	}
	g := len(seeds)
	if samples/g < 2 {
		panic("fit: fewer than 2 particles per group")
	}
	sizes := groupSizes(samples, g)
	outs := make([]core.Result, g)
	errs := make([]error, g)
	threads := s.Config.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	work := make(chan int, g)
	for k := range g {
		work <- k
	}
	close(work)
	var wg sync.WaitGroup
	for range min(threads, g) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				cfg := s.Config
				cfg.Method, cfg.Samples, cfg.Groups, cfg.Seed, cfg.Threads, cfg.Keep = s.Method, sizes[k], 1, seeds[k], 1, keep
				cfg.Progress = nil
				outs[k], errs[k] = core.Estimate(ctx, f, cfg)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return core.Result{}, nil, ctx.Err()
		}
		return core.Result{}, nil, err
	}
	res := core.Result{Samples: samples, Groups: g, GroupLogP: make([]float64, g), MinESS: 1, DeadAt: -1, MinESSParticles: math.Inf(1), ResampleESS: math.Inf(1)}
	if keep {
		res.Cloud = &core.Cloud{N: f.N, Groups: make([]core.CloudGroup, g)}
	}
	for k, o := range outs {
		res.GroupLogP[k] = o.LogP
		res.Resamples += o.Resamples
		res.Ancestors += o.Ancestors
		res.MinESS = math.Min(res.MinESS, o.MinESS)
		res.MinESSParticles = math.Min(res.MinESSParticles, o.MinESSParticles)
		res.ResampleESS = math.Min(res.ResampleESS, o.ResampleESS)
		if o.DeadGroups > 0 {
			res.DeadGroups++
			if res.DeadAt < 0 || o.DeadAt < res.DeadAt {
				res.DeadAt = o.DeadAt
			}
		}
		if keep {
			res.Cloud.Groups[k] = o.Cloud.Groups[0]
		}
	}
	res.LogP, res.SE, res.EffectiveGroups = core.CombineGroups(res.GroupLogP, sizes)
	return res, f, nil
}

// MCMCConfig holds the tunables of Surface.PseudoMarginal.
type MCMCConfig struct {
	// Iterations are kept after Burn iterations of burn-in, in which the
	// proposal adapts; every Thin-th (default 1) is visited.
	Iterations, Burn, Thin int
	// Samples and Groups are each estimate's particles and groups
	// (Groups 0: DefaultGroups).
	Samples, Groups int
	// Refresh is how many groups get new random streams at each
	// iteration (the block pseudo-marginal method); 0, or Groups or more,
	// renews all of them (the standard pseudo-marginal method).
	Refresh int
	// Step is the initial proposal's standard deviation in each log-
	// hyperparameter (default 0.3).
	Step float64
	// Seed seeds the chain's own stream and, through it, the groups'.
	Seed uint64
	// Keep makes every estimate keep its particle cloud, which Visit then
	// gets with the state (for prediction).
	Keep bool
	// Visit, if not nil, is called with every visited state after burn-in
	// (in order); an error it returns stops the chain.
	Visit func(st *MCMCState) error
}

// MCMCState is a state of the chain.
type MCMCState struct {
	// Iteration counts from 0 at the first iteration after burn-in.
	Iteration int
	Theta     []float64
	// Result is the estimate of log ML at Theta the chain holds (with its
	// cloud when MCMCConfig.Keep), and Factor the factor it was drawn
	// with.
	Result core.Result
	Factor *core.Factor
	// Accepted reports whether this iteration's proposal was accepted.
	Accepted bool
}

// MCMCStats summarizes a chain after burn-in.
type MCMCStats struct {
	Proposed, Accepted int
	// Failed counts the proposals whose estimate failed (EP broke down),
	// rejected as if the estimate were 0.
	Failed int
	// VarLogML is the mean, over the estimates made, of their variance
	// SE^2: the variance of the log marginal likelihood estimator along the
	// chain. VarLogRatio is the mean square of the noise in the acceptance
	// ratio's log ML difference that comes from the random numbers,
	// estimated by the paired groups (DiffSE^2 for the groups kept, plus
	// both estimates' share for the renewed ones).
	VarLogML, VarLogRatio float64
	// Step and Shape are the proposal after burn-in: theta' = theta +
	// Step * Shape eps, eps ~ N(0, I), Shape lower triangular (k x k).
	Step  float64
	Shape []float64
}

// AcceptanceRate returns Accepted / Proposed.
func (s *MCMCStats) AcceptanceRate() float64 {
	return float64(s.Accepted) / float64(s.Proposed)
}

// MCMCTargetAcceptance is the acceptance rate the burn-in adapts the
// proposal's scale towards: near the optimum of random-walk Metropolis in
// a few dimensions (0.44 in one, 0.23 in many; Roberts and Rosenthal 2001).
const MCMCTargetAcceptance = 0.3

// PseudoMarginal samples the posterior of the log-hyperparameters,
//
//	pi(theta | y) ∝ prior(theta) p(y | X, theta),
//
// by random-walk Metropolis in which p(y | X, theta) is replaced by its
// estimate: the estimate of P (not of log P) is unbiased, so the chain on
// (theta, random numbers u) has the exact posterior as its theta-marginal
// (Andrieu and Roberts 2009). The random numbers u are the seeds of the
// estimate's groups; each iteration renews cfg.Refresh of them and keeps
// the rest, so that the estimates at theta and at the proposal share most
// of their random numbers and the noise in the acceptance ratio shrinks
// (block pseudo-marginal; Tran, Kohn, Quiroz and Villani 2016, a form of
// the correlated pseudo-marginal method of Deligiannidis, Doucet and Pitt
// 2018). The move on (theta, u) proposes theta' from a symmetric random
// walk and the renewed seeds from their own distribution, so it is
// accepted with probability
//
//	min(1, prior(theta') L-hat(theta', u') / (prior(theta) L-hat(theta, u))).
//
// During burn-in the proposal adapts (its scale towards
// MCMCTargetAcceptance, its shape to the burn-in's covariance); afterwards
// it is fixed, so the kept chain is a valid Metropolis-Hastings chain.
//
// References: C. Andrieu and G. O. Roberts (2009), Ann. Statist. 37:697-725;
// M. Filippone and M. Girolami (2014), IEEE TPAMI 36:2214-2226;
// M.-N. Tran, R. Kohn, M. Quiroz and M. Villani (2016), arXiv 1603.02485;
// G. Deligiannidis, A. Doucet and M. K. Pitt (2018), JRSS B 80:839-870;
// C. Sherlock, A. H. Thiery, G. O. Roberts and J. S. Rosenthal (2015),
// Ann. Statist. 43:238-275.
func (s *Surface) PseudoMarginal(ctx context.Context, theta0 []float64, prior LogNormalPrior, cfg MCMCConfig) (MCMCStats, error) {
	k := len(s.Params)
	if len(theta0) != k || len(prior.Mu) != k || len(prior.SD) != k {
		panic("fit: theta0 and the prior must have one entry per parameter")
	}
	g := cfg.Groups
	if g == 0 {
		g = core.DefaultGroups(s.Method, cfg.Samples)
	}
	refresh := cfg.Refresh
	if refresh <= 0 || refresh > g {
		refresh = g
	}
	thin := max(cfg.Thin, 1)
	st := MCMCStats{Step: cfg.Step, Shape: make([]float64, k*k)}
	if st.Step == 0 {
		st.Step = 0.3
	}
	for j := range k {
		st.Shape[j*k+j] = 1
	}
	r := core.NewStream(cfg.Seed, domainMCMC, 0)
	seeds := make([]uint64, g)
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	theta := append([]float64(nil), theta0...)
	cur, f, err := s.EvalSeeds(ctx, theta, cfg.Samples, seeds, cfg.Keep)
	if err != nil {
		return st, err
	}
	if math.IsInf(cur.LogP, -1) {
		return st, errors.New("fit: the chain's starting point has an estimated likelihood of 0")
	}
	curPost := prior.LogDensity(theta) + cur.LogP
	var hist [][]float64 // burn-in states, for the proposal's shape
	prop := make([]float64, k)
	eps := make([]float64, k)
	newSeeds := make([]uint64, g)
	pick := make([]int, g)
	var nVar int
	total := cfg.Burn + cfg.Iterations
	for it := range total {
		burn := it < cfg.Burn
		for j := range eps {
			eps[j] = r.NormFloat64()
		}
		for j := range k {
			prop[j] = theta[j]
			for l := 0; l <= j; l++ {
				prop[j] += st.Step * st.Shape[j*k+l] * eps[l]
			}
		}
		copy(newSeeds, seeds)
		if refresh == g {
			for i := range newSeeds {
				newSeeds[i] = r.Uint64()
			}
		} else {
			for i := range pick {
				pick[i] = i
			}
			for i := range refresh { // a partial Fisher-Yates shuffle
				j := i + r.IntN(g-i)
				pick[i], pick[j] = pick[j], pick[i]
				newSeeds[pick[i]] = r.Uint64()
			}
		}
		u := r.Float64()
		next, nf, err := s.EvalSeeds(ctx, prop, cfg.Samples, newSeeds, cfg.Keep)
		accepted := false
		switch {
		case err != nil && ctx.Err() != nil:
			return st, ctx.Err()
		case err != nil:
			if !burn {
				st.Failed++
			}
		case !math.IsInf(next.LogP, -1):
			if !burn {
				st.VarLogML += next.SE * next.SE
				st.VarLogRatio += ratioNoise(&cur, &next, seeds, newSeeds)
				nVar++
			}
			post := prior.LogDensity(prop) + next.LogP
			if math.Log(u) < post-curPost {
				accepted = true
				copy(theta, prop)
				copy(seeds, newSeeds)
				cur, f, curPost = next, nf, post
			}
		}
		if burn {
			// Robbins-Monro on the log scale, then the shape from the
			// first half of the burn-in.
			a := 0.0
			if accepted {
				a = 1
			}
			st.Step *= math.Exp((a - MCMCTargetAcceptance) / math.Sqrt(float64(it%max(cfg.Burn/2, 1)+1)))
			hist = append(hist, append([]float64(nil), theta...))
			if it+1 == cfg.Burn/2 && cfg.Burn >= 20*k {
				if sh, ok := empiricalShape(hist[len(hist)/2:], k); ok {
					st.Shape = sh
					st.Step = 2.38 / math.Sqrt(float64(k))
				}
			}
			continue
		}
		st.Proposed++
		if accepted {
			st.Accepted++
		}
		if cfg.Visit != nil && (it-cfg.Burn)%thin == 0 {
			state := &MCMCState{Iteration: it - cfg.Burn, Theta: append([]float64(nil), theta...), Result: cur, Factor: f, Accepted: accepted}
			if err := cfg.Visit(state); err != nil {
				return st, err
			}
		}
	}
	if nVar > 0 {
		st.VarLogML /= float64(nVar)
		st.VarLogRatio /= float64(nVar)
	}
	return st, nil
}

// ratioNoise estimates the variance of log L-hat(b) - log L-hat(a) that
// comes from the random numbers, for two estimates whose groups share the
// seeds that are equal in sa and sb: the delta method of DiffSE over the
// groups, where a renewed group contributes both its deviations as
// independent terms.
func ratioNoise(a, b *core.Result, sa, sb []uint64) float64 {
	if a.Groups < 2 {
		return math.NaN()
	}
	sizes := groupSizes(a.Samples, a.Groups)
	ca, cb := relGroups(a), relGroups(b)
	v := 0.0
	for q := range ca {
		n := float64(sizes[q])
		if sa[q] == sb[q] {
			d := cb[q] - ca[q]
			v += n * d * d
		} else {
			v += n * ((ca[q]-1)*(ca[q]-1) + (cb[q]-1)*(cb[q]-1))
		}
	}
	return v / float64(a.Groups-1) / float64(a.Samples)
}

// empiricalShape returns the lower Cholesky factor of the sample
// covariance of the states, or ok = false if it is not positive definite
// (the chain has not moved in some direction).
func empiricalShape(states [][]float64, k int) ([]float64, bool) {
	n := float64(len(states))
	mean := make([]float64, k)
	for _, s := range states {
		for j := range k {
			mean[j] += s[j] / n
		}
	}
	cov := make([]float64, k*k)
	for _, s := range states {
		for j := range k {
			for l := range k {
				cov[j*k+l] += (s[j] - mean[j]) * (s[l] - mean[l]) / (n - 1)
			}
		}
	}
	return smallCholesky(cov, k, 1e-12)
}
