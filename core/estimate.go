package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
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
	// MethodMET is MethodSMC with Botev's minimax exponentially tilted
	// proposal (Factor.Tilt): each variable is drawn from a normal shifted
	// by Factor.Mu and truncated to its interval, and weighted by the
	// interval's probability under the shift times exp(mu^2/2 - mu z). The
	// tilt makes the weights of a whole path nearly constant, while a single
	// step's are noisy, so it resamples only when the effective sample size
	// collapses (METESSThreshold).
	MethodMET
	// MethodEP is MethodSMC on the EP-twisted model (PrepareEP): the
	// particles are propagated under expectation propagation's Gaussian
	// approximation of the truncated normal and weighted by the exact
	// target over it, step by step, so that the weights see the constraints
	// still ahead.
	MethodEP
)

var methodNames = [...]string{"smc", "paper-hard", "paper-soft", "met", "ep"}

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
	// DefaultESSThreshold is MethodSMC's resampling threshold.
	DefaultESSThreshold = 0.5
	// METESSThreshold is MethodMET's. Measured on GP-classification
	// covariances (RBF, beta = 10, N = 200, M = 10^4): standard deviation of
	// log P 0.17 nats at 0.2, 0.083 at 0.01, 0.029 at 0.001; resampling on a
	// tilted path's intermediate weights selects noise.
	METESSThreshold  = 0.001
	DefaultBlockSize = 64
	// EPLargeESSThreshold is MethodEP's resampling threshold from EPLargeN
	// variables on. There the EP-twisted weights drift apart slowly over
	// thousands of steps (at 0.5 a group of 312 particles resamples about
	// once in 5000 variables) and now and then one particle's weight runs
	// away, a heavy tail in the group estimates. Measured on the large-N
	// issue's problem (RBF, alpha 1, beta 10, M = 10^4, seeds 1-20, core's
	// TestLargeNSEStudy), 0.5 against 0.8: at N = 5000 in 64 groups
	// (DefaultGroups) median standard error of log P 0.027 against 0.020
	// (4 and 11 seeds of 20 at most 0.02), in 32 groups root mean square
	// 0.042 against 0.027; at N = 1000 and 2000 (32 groups) 0.0158 against
	// 0.0143 and 0.0203 against 0.0191; the same CPU time.
	EPLargeESSThreshold = 0.8
)

// DefaultGroups returns the number of independent particle groups used when
// Config.Groups is 0: for MethodSMC and MethodMET, 32 groups (so that the
// standard error has 31 degrees of freedom) as long as each keeps at least
// MinGroupSamples particles; for MethodEP, up to 64 groups of at least
// MinEPGroupSamples (64 from M = 8000 on); for smaller runs 8 groups of at
// least 16 particles (or as many as fit); for the paper's methods, 1,
// since the paper runs one population.
//
// Why more, smaller groups for EP: its group estimates can be heavy-tailed
// (EP's Gaussian is lighter-tailed than the truncated normal in some
// direction), and the spread of few of them then varies so much from run
// to run that the standard error is optimistic. The calibration study
// (bench/repro --calibration, docs/calibration.md) measured ep/greedy at
// M = 8000 in 32 groups at 90.5 % coverage of nominal 95 % intervals (rms
// z 1.20) on a strongly correlated 3-D box and 91.0 % (1.08) on
// Experiment 2's problem 1, and in 64 groups within 93-97 % on all eight
// of its families; at M = 4000, in 16 groups of 250, at 91.3 % for
// problem 3's posteriors, and in 32 of 125 within the band. The estimate's
// own standard deviation grows by 0-12 % on the classification families
// (about 15 % on RBF GPC at beta 10, N = 200, M = 10^4) and by 15-50 % on
// the 3-D boxes, where the first variable's stratification over a group
// matters most, and the CPU time by 4-7 %.
// smc's standard errors got worse in 64 groups (RBF classification), so
// the other methods keep groups of 250.
func DefaultGroups(method Method, samples int) int {
	switch method {
	case MethodPaperHard, MethodPaperSoft:
		return 1
	case MethodEP:
		return max(1, min(64, max(samples/MinEPGroupSamples, min(8, samples/16))))
	}
	return max(1, min(32, max(samples/MinGroupSamples, min(8, samples/16))))
}

// MinGroupSamples is the fewest particles DefaultGroups puts in each of 32
// groups, MinEPGroupSamples in each of MethodEP's 64.
const (
	MinGroupSamples   = 250
	MinEPGroupSamples = 125
)

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
	// effective sample size triggers resampling (MethodSMC and MethodMET),
	// in (0, 1]; 0 selects the method's default.
	ESSThreshold float64
	// BlockSize is the number of variables propagated per matrix product.
	BlockSize int
	// Progress, if not nil, is called from the workers with the number of
	// particle-steps (particles times variables) just completed; the total
	// is Samples * N. It must be safe for concurrent use.
	Progress func(particleSteps int64)
	// Trace, if not nil, is told of Choose's preparation phases (see
	// Trace); Estimate does not use it.
	Trace Trace
	// Keep asks Estimate to return the groups' outputs (Result.Cloud):
	// for a Factor, the final particles for prediction, Samples x N
	// float64 values. Without it only one group per thread is in memory
	// at a time.
	Keep bool
	// Sink, if not nil, receives each group's outcome and output (a
	// Factor's: its final particles, CloudGroup's Z, LogW and LogZ) as soon
	// as the group and every group before it are done: in group order, one
	// call at a time, from a goroutine of the driver's (driver.go). grp is
	// valid during the call only: its memory is reused for a later group.
	// An error from Sink stops the estimate, which returns it. A streamed
	// cloud takes one group's particles besides the running groups'
	// (gpc-train writes the cloud this way, never holding it). Sink and
	// Keep exclude each other.
	Sink Sink
	// SinkAhead is how many finished groups' particles may wait for Sink
	// while the workers go on (1 if 0): more lets the estimate run ahead
	// of a Sink that is slow to start (gpc-train's waits for the cloud's
	// head to be written). Their arrays are allocated only when the
	// workers get that far ahead. The planned configuration (Plan) holds
	// what fits in MaxMemory beside the running groups, at least 1.
	SinkAhead int
	// Alloc, if not nil, allocates the particles' arrays of draws (n
	// values, which the filter overwrites): the tools pass one that commits
	// the memory at once, which costs a fifth of a page fault per page on
	// the virtual machines we measured.
	Alloc func(n int) []float64
	// MaxMemory, if positive, bounds the bytes the particles may take
	// (memory.go): Estimate runs fewer groups at once, or, when the default
	// group count leaves a single group too large, splits the particles
	// into more groups; with Keep, a cloud that does not fit is a
	// *MemoryError (a Sink takes the groups one at a time instead).
	MaxMemory int64
}

// alloc returns n float64 values from c.Alloc, or make.
func (c *Config) alloc(n int) []float64 {
	if c.Alloc != nil {
		return c.Alloc(n)[:n]
	}
	return make([]float64, n)
}

// withDefaults returns c with zero fields replaced by their defaults, those
// of a problem below EPLargeN variables (withDefaultsFor).
func (c Config) withDefaults() Config { return c.withDefaultsFor(0) }

// withDefaultsFor returns c with zero fields replaced by their defaults for
// a Factor in n variables: MethodEP's resampling threshold is
// EPLargeESSThreshold from EPLargeN variables on.
func (c Config) withDefaultsFor(n int) Config {
	if c.Groups == 0 {
		c.Groups = DefaultGroups(c.Method, c.Samples)
	}
	if c.Threads <= 0 {
		c.Threads = runtime.GOMAXPROCS(0)
	}
	if c.ESSThreshold == 0 {
		c.ESSThreshold = DefaultESSThreshold
		if c.Method == MethodMET {
			c.ESSThreshold = METESSThreshold
		}
		if c.Method == MethodEP && n >= EPLargeN {
			c.ESSThreshold = EPLargeESSThreshold
		}
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
	case c.Keep && c.Sink != nil:
		return errors.New("core: Keep and Sink exclude each other")
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
	// sample standard deviation of the I_g over sqrt(G), relative to I),
	// scaled by StudentScale(G) so that LogP +- 1.96 SE is the 95 %
	// Student t interval of G - 1 degrees of freedom. NaN when G = 1 or P
	// is estimated as 0.
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
	// Ancestors is the number of distinct ancestors at the first variable
	// among the final particles, summed over the groups: Samples when no
	// resampling happened, the number of groups when every group's paths
	// have coalesced onto one (path degeneracy).
	Ancestors int
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
	// ResampleESS is the effective sample size, in particles of the
	// smallest group, below which the estimator resamples
	// (Config.ESSThreshold as planned, times that group's size): Estimate
	// sets it, a merge of a sharded run sets it from the shards
	// (SetESSThreshold), and Summarize leaves it +Inf, unknown. Trust
	// judges an ESS below 2 particles as weight degeneracy only where
	// ResampleESS is not itself below 2.
	ResampleESS float64
	// Cloud holds the final particles when Config.Keep was set.
	Cloud *Cloud
}

// SetESSThreshold sets r.ResampleESS for a run that resampled below the
// fraction frac of each group's particles (Config.ESSThreshold, as
// planned).
func (r *Result) SetESSThreshold(frac float64) {
	sizes := GroupSizes(r.Samples, r.Groups)
	r.ResampleESS = frac * float64(sizes[len(sizes)-1])
}

// Cloud is the final particle system of an estimate: in each group, the
// particles' standardized draws z (v = Mean + L z in the Factor's order)
// and their normalized log weights. Weighted by group, it approximates the
// distribution of v given the box, which is what prediction needs.
type Cloud struct {
	N      int
	Groups []CloudGroup
}

// CloudGroup is one group's output (Runner.Output): a Factor's group's
// particles, or what an estimator that predicts as its groups end leaves
// instead of them (core/vecchia: the test posteriors).
type CloudGroup struct {
	// Z is m x N, row-major: particle p's draws in the Factor's order.
	Z []float64
	// LogW holds the m normalized log weights (their exps sum to 1).
	LogW []float64
	// LogZ is the group's estimate of log P.
	LogZ float64
	// Post holds the group's weighted test posteriors, one per test row
	// (core/vecchia: the mean over its final weighted particles of each
	// test point's posterior probability; NaN for a dead group).
	Post []float64
	// Paths holds the particle paths a core/vecchia group keeps for
	// later prediction (vecchia.Prepared.KeepPaths), K of them as N x K
	// float32 values by variable (path q's value of variable k at
	// k K + q), and PathW their K normalized weights; nil when none are
	// kept.
	Paths []float32
	PathW []float64
	// Score holds what a core/vecchia group estimates of the gradient of
	// log P in the model's log-hyperparameters, by Fisher's identity over
	// its final weighted paths (vecchia.Prepared.Score: the moments of
	// vecchia.ScoreMoments, which vecchia.GroupScores combines); nil when
	// not asked.
	Score []float64
}

// Len returns the group's particle count.
func (g *CloudGroup) Len() int { return len(g.LogW) }

// Trust reports whether the standard error can be relied on and, if not,
// why, in words for the user.
func (r *Result) Trust() (ok bool, why string) {
	switch {
	case r.Groups == 1 && r.Samples < 32:
		// DefaultGroups makes one group of fewer than 32 particles.
		return false, "one particle group gives no standard error (use more samples: 32 or more make several groups)"
	case r.Groups == 1:
		return false, "one particle group gives no standard error (use more groups)"
	case math.IsInf(r.LogP, -1):
		return false, fmt.Sprintf("every group estimated P = 0: all particles failed variable %d of the estimator's order", r.DeadAt)
	case r.DeadGroups > 0:
		return false, fmt.Sprintf("%d of %d groups estimated P = 0 (all their particles failed variable %d): the estimate rests on rare successes", r.DeadGroups, r.Groups, r.DeadAt)
	case r.EffectiveGroups < float64(r.Groups)/2:
		// The variance of a group's log-estimate goes about as one
		// over its particles, so the same particles in fewer, larger
		// groups agree more (core/vecchia at N = 10^6: 9.1 of 32 groups
		// of 312 carried the mean, 13.8 of 16 of 625; docs/vecchia.md).
		return false, fmt.Sprintf("the group estimates are heavy-tailed (effectively %.1f of %d groups carry the mean); larger groups spread less: fewer groups of more particles each, or more samples (a running group holds its particles in memory)", r.EffectiveGroups, r.Groups)
	case r.MinESSParticles < 2 && !(r.ResampleESS < 2):
		// An estimator that lets the ESS fall below 2 particles by design
		// (MethodMET: METESSThreshold is a quarter of a particle in a
		// group of 250) is judged by its groups' agreement alone, the
		// case above. Measured (docs/calibration.md, finding 4): met/sharp
		// is calibrated on every family of the study below N = 1000 with
		// its ESS at about one particle, and at N = 1000 (beta 10), where
		// its SE fails, its effective groups were 1.2 to 11.6 of 32 in 12
		// runs of 12.
		return false, fmt.Sprintf("the effective sample size fell to %.2g particles in a group (weight degeneracy)", r.MinESSParticles)
	}
	return true, ""
}

// GroupResult is what one particle group's run leaves besides its
// particles: the parts of a Result that EstimateGroups computes group by
// group and Summarize combines.
type GroupResult struct {
	// LogZ is the group's estimate of log P.
	LogZ float64
	// MinESS is the smallest effective sample size of its incremental
	// weights, as a fraction of the group (Result.MinESS).
	MinESS float64
	// Resamples counts its resampling steps.
	Resamples int
	// Ancestors counts the distinct ancestors of its final particles at
	// the first variable.
	Ancestors int
	// DeadAt is the variable at which every particle failed, or -1.
	DeadAt int
}

// Summarize returns the Result of an estimate of samples particles whose
// groups, in order, had the outcomes groups (GroupSizes gives their
// sizes): what Estimate returns, without the cloud and with ResampleESS
// unknown (+Inf; SetESSThreshold sets it).
func Summarize(samples int, groups []GroupResult) Result {
	g := len(groups)
	sizes := GroupSizes(samples, g)
	res := Result{Samples: samples, Groups: g, GroupLogP: make([]float64, g), MinESS: 1, DeadAt: -1, ResampleESS: math.Inf(1)}
	res.MinESSParticles = math.Inf(1)
	for k, o := range groups {
		res.GroupLogP[k] = o.LogZ
		res.Resamples += o.Resamples
		res.Ancestors += o.Ancestors
		res.MinESS = math.Min(res.MinESS, o.MinESS)
		res.MinESSParticles = math.Min(res.MinESSParticles, o.MinESS*float64(sizes[k]))
		if o.DeadAt >= 0 {
			res.DeadGroups++
			if res.DeadAt < 0 || o.DeadAt < res.DeadAt {
				res.DeadAt = o.DeadAt
			}
		}
	}
	res.LogP, res.SE, res.EffectiveGroups = combine(res.GroupLogP, sizes)
	return res
}

// GroupSizes splits m particles into g groups whose sizes differ by at most
// one, the larger first: the groups of Estimate.
func GroupSizes(m, g int) []int {
	sizes := make([]int, g)
	for k := range sizes {
		sizes[k] = m / g
		if k < m%g {
			sizes[k]++
		}
	}
	return sizes
}

// The dense estimator (Estimator): a Factor's particles step through its
// N variables on a filter per worker.

// Dim returns the Factor's dimension (Estimator).
func (f *Factor) Dim() int { return f.N }

// Plan returns cfg as Estimate runs it on f (Estimator): cfg checked
// against the Factor (MethodMET needs a tilted one, MethodEP one from
// PrepareEP), its defaults resolved for f.N variables and its memory
// limit applied (memory.go).
func (f *Factor) Plan(cfg Config) (Config, int, error) {
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	if cfg.Method == MethodMET && f.Mu == nil {
		return cfg, 0, errors.New("core: MethodMET needs a tilted Factor (Factor.Tilt)")
	}
	if (cfg.Method == MethodEP) != (f.ep != nil) {
		return cfg, 0, errors.New("core: MethodEP needs, and only it takes, a Factor from PrepareEP")
	}
	return cfg.plan(f.N)
}

// NewRunner returns a worker's filter for groups of at most maxM
// particles (Estimator).
func (f *Factor) NewRunner(cfg *Config, maxM int) Runner {
	return &filterRunner{fl: newFilter(f, cfg, maxM), cfg: cfg, maxM: maxM}
}

// filterRunner runs a Factor's groups on one worker's filter; a group's
// output is its particles (CloudGroup's Z, LogW and LogZ).
type filterRunner struct {
	fl   *filter
	cfg  *Config
	maxM int
}

func (r *filterRunner) RunGroup(ctx context.Context, k, m int, s PCG, progress func(int64)) (GroupResult, error) {
	fl := r.fl
	if fl.z == nil {
		// A kept cloud's groups bring their own arrays (of exactly
		// their particles); a Sink's spares are as large as the largest
		// group.
		size := r.maxM
		if r.cfg.Keep {
			size = m
		}
		fl.z = r.cfg.alloc(size * fl.f.N)
	}
	if err := fl.run(ctx, m, s, progress); err != nil {
		return GroupResult{}, err
	}
	return GroupResult{fl.logZ, fl.minESS, fl.resamples, fl.ancestors(), fl.deadAt}, nil
}

// Output returns the group's particles, their draws' array detached
// (Runner).
func (r *filterRunner) Output() CloudGroup {
	fl := r.fl
	grp := CloudGroup{Z: fl.z[:fl.m*fl.f.N], LogW: slices.Clone(fl.logw[:fl.m]), LogZ: fl.logZ}
	fl.z = nil
	return grp
}

// Reuse takes a spare's draws' array (Runner).
func (r *filterRunner) Reuse(spare CloudGroup) { r.fl.z = spare.Z[:cap(spare.Z)] }

// CombineGroups returns the estimate of log P and its standard error from
// the estimates logZ of independent groups of sizes particles, and the
// effective number of groups, as Estimate computes them (Result.LogP,
// Result.SE, Result.EffectiveGroups): what a streamed cloud's group rows
// give its reader.
func CombineGroups(logZ []float64, sizes []int) (logP, se, effGroups float64) {
	if len(logZ) != len(sizes) {
		panic("core: CombineGroups: lengths differ")
	}
	return combine(logZ, sizes)
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
	se = StudentScale(len(logZ)) * math.Sqrt(c/float64(total)) / mean
	return logP, se, effGroups
}

// StudentScale returns the factor by which the standard errors of Estimate
// and Predict, computed from the spread of g independent group estimates,
// are scaled so that the nominal intervals hold with g groups:
//
//	k(g) = t_{g-1}(0.975) / z(0.975),
//
// t_nu the Student t quantile with nu degrees of freedom and z the normal
// one. With s the delta-method standard error, (estimate - truth)/s
// follows Student's t with g-1 degrees of freedom, not a standard normal,
// when the group estimates are normal: its variance is (g-1)/(g-3), and
// estimate +- 1.96 s covers the truth 94.1 % of the time with 32 groups,
// 90.9 % with 8. Scaled by k(g), +- 1.96 SE is the exact 95 % t interval
// (k = 1.041 for 32 groups, 1.21 for 8, 6.5 for 2), and the rms of the z
// scores is about 1 from 8 groups on. The calibration study (bench/repro
// --calibration, docs/calibration.md) measured the unscaled z scores'
// rms at 1.04-1.12 with 32 groups. It returns NaN for g < 2.
//
// References: Student (1908), "The probable error of a mean", Biometrika
// 6:1-25.
func StudentScale(g int) float64 {
	if g < 2 {
		return math.NaN()
	}
	if g-2 < len(studentScales) {
		return studentScales[g-2]
	}
	return studentScale(g)
}

// studentScales caches StudentScale for 2 to 257 groups.
var studentScales = func() []float64 {
	k := make([]float64, 256)
	for i := range k {
		k[i] = studentScale(i + 2)
	}
	return k
}()

func studentScale(g int) float64 {
	const z975 = 1.959963984540054 // Phi^-1(0.975)
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(g - 1)}.Quantile(0.975) / z975
}
