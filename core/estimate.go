package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Method is a sequential Monte Carlo estimator of a box probability.
type Method int

const (
	// MethodSMC is the fully adapted particle filter: each variable is drawn
	// from its conditional normal truncated to its interval, the particle is
	// weighted by that interval's conditional probability, and the particles
	// are resampled (systematic) when the effective sample size falls below
	// Config.ESSThreshold. The draws' uniforms are stratified among copies
	// of one particle and Latin within blocks of neighbours (drawUniforms).
	// The estimate is the product of the mean incremental weights, unbiased
	// for P.
	MethodSMC Method = iota
	// MethodPaperHard is the paper's Algorithm GPC-MC (section 5.7): blind
	// draws, rejection, refill by sampling with replacement from the
	// survivors, estimate = product of acceptance fractions (eq. RATIO-MS).
	MethodPaperHard
	// MethodPaperSoft is the same algorithm with the soft count of section
	// 5.8 (eq. RATIO-MS-2): the estimate is the product of the mean
	// conditional probabilities instead of the acceptance fractions.
	MethodPaperSoft
)

var methodNames = [...]string{"smc", "paper-hard", "paper-soft"}

func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod returns the Method called name.
func ParseMethod(name string) (Method, bool) {
	for i, s := range methodNames {
		if s == name {
			return Method(i), true
		}
	}
	return 0, false
}

// Defaults of Config's zero fields.
const (
	DefaultESSThreshold = 0.5
	DefaultBlockSize    = 64
)

// DefaultGroups returns the number of independent particle groups used when
// Config.Groups is 0: for MethodSMC, 32 groups (so that the standard error
// has 31 degrees of freedom) as long as each keeps at least
// MinGroupSamples particles; for the paper's methods, 1, since the paper
// runs one population.
func DefaultGroups(method Method, samples int) int {
	if method != MethodSMC {
		return 1
	}
	return max(1, min(32, samples/MinGroupSamples))
}

// MinGroupSamples is the fewest particles DefaultGroups puts in a group.
const MinGroupSamples = 250

// Config holds the tunables of Estimate. The zero value of every field but
// Samples selects its default.
type Config struct {
	Method  Method
	Samples int // total number of particles M, at least 2 per group
	// Groups is the number of independent particle groups G the M particles
	// are split into (sizes differ by at most one); 0 selects
	// DefaultGroups. The estimate is the size-weighted mean of the G group
	// estimates and its standard error comes from their spread.
	Groups int
	Seed   uint64
	// Threads is the number of groups run at once; 0 means GOMAXPROCS. The
	// result does not depend on it.
	Threads int
	// ESSThreshold is the fraction of the particles below which the
	// effective sample size triggers resampling (MethodSMC), in (0, 1].
	ESSThreshold float64
	// BlockSize is the number of variables propagated per matrix product.
	BlockSize int
	// Progress, if not nil, is called from the workers with the number of
	// particle-steps (particles times variables) just completed; the total
	// is Samples * N. It must be safe for concurrent use.
	Progress func(particleSteps int64)
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Groups == 0 {
		c.Groups = DefaultGroups(c.Method, c.Samples)
	}
	if c.Threads <= 0 {
		c.Threads = runtime.GOMAXPROCS(0)
	}
	if c.ESSThreshold == 0 {
		c.ESSThreshold = DefaultESSThreshold
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	return c
}

// Validate reports a Config that Estimate cannot run.
func (c Config) Validate() error {
	d := c.withDefaults()
	switch {
	case c.Method < 0 || int(c.Method) >= len(methodNames):
		return fmt.Errorf("core: unknown method %d", int(c.Method))
	case c.Samples < 2:
		return fmt.Errorf("core: %d samples: at least 2 are needed", c.Samples)
	case c.Groups < 0:
		return fmt.Errorf("core: %d groups: must be positive", c.Groups)
	case d.Samples/d.Groups < 2:
		return fmt.Errorf("core: %d samples in %d groups leave fewer than 2 particles per group", c.Samples, d.Groups)
	case !(d.ESSThreshold > 0 && d.ESSThreshold <= 1):
		return fmt.Errorf("core: ESS threshold %v is not in (0, 1]", c.ESSThreshold)
	case d.BlockSize < 1:
		return fmt.Errorf("core: block size %d is not positive", c.BlockSize)
	}
	return nil
}

// Result is an estimate of log P with its diagnostics.
type Result struct {
	// LogP is the log of the estimate of P, the size-weighted mean of the
	// group estimates: unbiased for P (not for log P, which it
	// underestimates by about SE^2/2).
	LogP float64
	// SE is the standard error of LogP: the delta-method error of the mean
	// of G independent group estimates, sqrt(c/M)/I with
	// c = sum_g n_g (I_g - I)^2 / (G - 1) (for equal groups, the
	// sample standard deviation of the I_g over sqrt(G), relative to I).
	// NaN when G = 1 or P is estimated as 0.
	SE float64
	// Samples and Groups are the particle count and group count used.
	Samples, Groups int
	// GroupLogP holds each group's estimate of log P.
	GroupLogP []float64
	// MinESS is the smallest effective sample size of the incremental
	// weights met in any group at any variable, as a fraction of the group
	// size (for the paper's methods, the smallest acceptance fraction).
	MinESS float64
	// MinESSParticles is MinESS in particles.
	MinESSParticles float64
	// Resamples is the number of resampling steps, summed over the groups.
	Resamples int
	// EffectiveGroups is the effective number of groups in the mean,
	// (sum_g n_g I_g)^2 / sum_g (n_g I_g)^2 (for equal sizes
	// (sum I_g)^2 / sum I_g^2): G when the groups agree, 1 when one
	// dominates.
	EffectiveGroups float64
	// DeadGroups counts the groups whose estimate was P = 0 (every particle
	// failed a variable: possible only for the paper's methods or a box of
	// probability zero); DeadAt is the first such variable, in the
	// estimator's order, or -1.
	DeadGroups, DeadAt int
}

// Trust reports whether the standard error can be relied on and, if not,
// why, in words for the user.
func (r *Result) Trust() (ok bool, why string) {
	switch {
	case r.Groups == 1:
		return false, "one particle group gives no standard error (use more groups)"
	case math.IsInf(r.LogP, -1):
		return false, fmt.Sprintf("every group estimated P = 0: all particles failed variable %d of the estimator's order", r.DeadAt)
	case r.DeadGroups > 0:
		return false, fmt.Sprintf("%d of %d groups estimated P = 0 (all their particles failed variable %d): the estimate rests on rare successes", r.DeadGroups, r.Groups, r.DeadAt)
	case r.EffectiveGroups < float64(r.Groups)/2:
		return false, fmt.Sprintf("the group estimates are heavy-tailed (effectively %.1f of %d groups carry the mean)", r.EffectiveGroups, r.Groups)
	case r.MinESSParticles < 10:
		return false, fmt.Sprintf("the effective sample size fell to %.1f particles in a group (weight degeneracy)", r.MinESSParticles)
	}
	return true, ""
}

// Estimate estimates log P for the box prepared in f with the method and
// particle count of cfg. The work is split into cfg.Groups independent
// groups, each with its own random stream derived from (cfg.Seed, group), run
// cfg.Threads at a time; the result is identical for any thread count.
// It returns ctx.Err() if ctx is cancelled, and an error if cfg is invalid.
//
// References: Pitt and Shephard (1999), "Filtering via simulation:
// auxiliary particle filters", JASA 94:590-599; Atiya, Fayed and
// Abdel-Gawad (2013), arXiv 1302.7220, section 5.
func Estimate(ctx context.Context, f *Factor, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.withDefaults()
	g := cfg.Groups
	sizes := make([]int, g)
	for k := range sizes {
		sizes[k] = cfg.Samples / g
		if k < cfg.Samples%g {
			sizes[k]++
		}
	}
	type groupOut struct {
		logZ      float64
		minESS    float64
		resamples int
		deadAt    int
	}
	outs := make([]groupOut, g)
	work := make(chan int, g)
	for k := range g {
		work <- k
	}
	close(work)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Threads)
	for t := range min(cfg.Threads, g) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fl := newFilter(f, &cfg, sizes[0])
			for k := range work {
				err := fl.run(ctx, sizes[k], NewStream(cfg.Seed, domainGroup, uint64(k)), cfg.Progress)
				if err != nil {
					errs[t] = err
					cancel()
					return
				}
				outs[k] = groupOut{fl.logZ, fl.minESS, fl.resamples, fl.deadAt}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if perr := parent.Err(); perr != nil {
			return Result{}, perr
		}
		return Result{}, err
	}

	res := Result{Samples: cfg.Samples, Groups: g, GroupLogP: make([]float64, g), MinESS: 1, DeadAt: -1}
	res.MinESSParticles = math.Inf(1)
	for k, o := range outs {
		res.GroupLogP[k] = o.logZ
		res.Resamples += o.resamples
		res.MinESS = math.Min(res.MinESS, o.minESS)
		res.MinESSParticles = math.Min(res.MinESSParticles, o.minESS*float64(sizes[k]))
		if o.deadAt >= 0 {
			res.DeadGroups++
			if res.DeadAt < 0 || o.deadAt < res.DeadAt {
				res.DeadAt = o.deadAt
			}
		}
	}
	res.LogP, res.SE, res.EffectiveGroups = combine(res.GroupLogP, sizes)
	return res, nil
}

// combine returns the log of the size-weighted mean of the group estimates
// exp(logZ[g]), the delta-method standard error of that log, and the
// effective number of groups. Everything is computed relative to the largest
// group estimate, so nothing overflows or underflows.
func combine(logZ []float64, sizes []int) (logP, se, effGroups float64) {
	mx := math.Inf(-1)
	total := 0
	for k, l := range logZ {
		mx = math.Max(mx, l)
		total += sizes[k]
	}
	if math.IsInf(mx, -1) {
		return mx, math.NaN(), 0
	}
	var mean, sum2 float64
	r := make([]float64, len(logZ))
	for k, l := range logZ {
		r[k] = math.Exp(l - mx)
		w := float64(sizes[k]) / float64(total)
		mean += w * r[k]
		sum2 += w * w * r[k] * r[k]
	}
	logP = mx + math.Log(mean)
	effGroups = mean * mean / sum2
	if len(logZ) < 2 {
		return logP, math.NaN(), effGroups
	}
	c := 0.0
	for k := range r {
		d := r[k] - mean
		c += float64(sizes[k]) * d * d
	}
	c /= float64(len(logZ) - 1)
	se = math.Sqrt(c/float64(total)) / mean
	return logP, se, effGroups
}

// AutoCandidates are the orders ChooseOrder chooses among by default, in
// order of preference.
var AutoCandidates = []OrderKind{OrderSharp, OrderGreedy}

// Pilot is the outcome of one candidate order's pilot run.
type Pilot struct {
	Order  OrderKind
	Factor *Factor
	Result Result
	Err    error // a failed factorisation or run
}

// ChooseOrder picks the variable order for box by measurement: it factorises
// box in each candidate order, runs a pilot estimate of cfg.Method with
// PilotSamples(cfg.Samples) particles in 8 groups for each, and returns the
// factor of the best pilot (betterPilot), together with every pilot. The
// pilots use their own random streams, derived from cfg.Seed and the
// candidate, never the main run's.
//
// No single order is best. On one-factor covariances (the paper's
// Experiment 1, N = 200 and 500, M = 10^4) OrderSharp's standard errors are
// 3-5x smaller than OrderVariance's and 10x smaller than OrderGreedy's; on
// GP-classification covariances with a large latent scale (RBF, beta = 10,
// N = 200) OrderGreedy's are 2x smaller than OrderSharp's.
func ChooseOrder(ctx context.Context, box Box, cands []OrderKind, jitter float64, cfg Config) (*Factor, []Pilot, error) {
	seed := cfg.Seed
	pcfg := cfg
	pcfg.Samples = PilotSamples(cfg.Samples)
	pcfg.Groups = min(8, pcfg.Samples/2)
	pcfg.Progress = nil
	pilots := make([]Pilot, len(cands))
	best := -1
	for k, kind := range cands {
		p := &pilots[k]
		p.Order = kind
		p.Factor, p.Err = NewFactor(box, Ordering{Kind: kind, Seed: seed}, jitter)
		if p.Err != nil {
			// Every candidate sees the same matrix: a data error is final.
			return nil, pilots, p.Err
		}
		pcfg.Seed = splitmix64(seed ^ splitmix64(domainPilot^splitmix64(uint64(k))))
		p.Result, p.Err = Estimate(ctx, p.Factor, pcfg)
		if p.Err != nil {
			return nil, pilots, p.Err
		}
		if best < 0 || betterPilot(&p.Result, &pilots[best].Result) {
			best = k
		}
	}
	return pilots[best].Factor, pilots, nil
}

// betterPilot reports whether pilot a, of a later candidate, beats pilot b,
// the best so far. Both estimate the same P without bias, but log P-hat
// falls below log P by about half its variance, and by more when the
// weights are heavy-tailed, so an estimate higher by more than twice the
// combined standard error marks the better order. Otherwise a needs a
// standard error below half of b's: pilots are small, their standard
// errors are rough (8 groups), and the earlier candidates are preferred for
// what they measured on full-size runs. A pilot that estimated P = 0 or has
// no standard error loses.
func betterPilot(a, b *Result) bool {
	an, bn := math.IsNaN(a.SE) || math.IsInf(a.LogP, -1), math.IsNaN(b.SE) || math.IsInf(b.LogP, -1)
	if an || bn {
		return !an && bn || an && bn && a.LogP > b.LogP
	}
	if d := a.LogP - b.LogP; math.Abs(d) > 2*math.Hypot(a.SE, b.SE) {
		return d > 0
	}
	return a.SE < b.SE/2
}

// PilotSamples is the particle count of each pilot run of ChooseOrder for a
// main run of m particles: m/16, at least 1000 (or m if smaller) and at
// most 20000.
func PilotSamples(m int) int {
	return min(m, max(1000, min(20000, m/16)))
}
