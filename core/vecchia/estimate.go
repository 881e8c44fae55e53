package vecchia

import (
	"context"
	"errors"
	"math"

	"github.com/gpc-mc/gpc/core"
)

// DefaultESSThreshold is the estimators' resampling threshold, a fraction
// of a group's particles: the multi-class estimator's, and the two-class
// one's up to LargeGroupRows rows (Prepared.Plan).
const DefaultESSThreshold = 0.5

// The Vecchia estimator is a core.Estimator: Prepared says how it runs a
// core.Config, and core.Estimate and core.EstimateGroups drive it as they
// drive a dense Factor.

// Dim returns the model's training rows, the steps of a particle
// (core.Estimator).
func (p *Prepared) Dim() int { return p.m.N }

// Plan returns cfg as the estimator runs it (core.Estimator): the groups
// MethodEP takes (its twisted weights have the same heavy tails), its
// resampling threshold (DefaultESSThreshold, core.EPLargeESSThreshold
// above LargeGroupRows rows), Groups raised where cfg.MaxMemory asks for
// smaller groups, and the groups run at once; or a *core.MemoryError.
// Its groups' outputs are their test posteriors, T values each, so a Sink
// lets every finished group wait for it.
func (p *Prepared) Plan(cfg core.Config) (core.Config, int, error) {
	if cfg.ESSThreshold == 0 && p.m.N > LargeGroupRows {
		// Where the groups grow with n (DefaultGroups), the dense
		// path's rule for its EP-twisted weights, for the same cause:
		// between resamplings the weights drift apart over the steps and
		// now and then one particle's runs away, a right-skewed tail in
		// the group estimates that grows with the rows. On the two-class
		// problem (m = 30, M = 10^4, one plan) at N = 10^6 (32 groups of
		// 312) seeds 1-3 gave effectively 22.3, 21.8 and 19.8 of 32
		// groups carrying the mean at 0.8 (se 0.123, 0.128, 0.147), where
		// 0.5 gave 16.2, 9.1 (se 0.297, warned) and 21.3, resampling
		// about 7.8 times a group against 3.8, the runs 6-10 % longer;
		// at 10^5 and 3 x 10^5 (64 groups of 156) 0.5 did better (se
		// 0.065 and 0.067 against 0.073 and 0.077, one seed each), so the
		// threshold stays there (docs/vecchia.md, Calibration: "The
		// resampling threshold at 10^6").
		cfg.ESSThreshold = core.EPLargeESSThreshold
	}
	per := runnerBytes(1, p.m.N)
	if p.Score != nil {
		if err := checkScore(p.m, p.Score); err != nil {
			return cfg, 0, err
		}
		per += scoreBytes(p.m.N)
	}
	if p.KeepPaths > 0 {
		// A worker's kept paths and those of a finished group waiting
		// for the Sink: at most twice the kept share of a particle's
		// path.
		per += 2 * int64(p.m.N) * 4 * int64(min(p.KeepPaths, cfg.Samples)) / int64(max(1, cfg.Samples))
	}
	planned, workers, err := plan(cfg, p.m.N, per)
	if p.KeepPaths > 0 {
		planned.SinkAhead = 1 // the kept paths are large: groups wait for the Sink
	}
	return planned, workers, err
}

// plan is the two estimators' Plan on n training rows, a particle taking
// perParticle bytes.
func plan(cfg core.Config, n int, perParticle int64) (core.Config, int, error) {
	cfg.Method = core.MethodEP
	if cfg.ESSThreshold == 0 {
		cfg.ESSThreshold = DefaultESSThreshold
	}
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	if cfg.Keep {
		return cfg, 0, errors.New("vecchia: the estimator keeps no particles (its groups predict the test rows as they end: use Sink)")
	}
	planned, workers, err := core.PlanParticles(cfg, n, perParticle, DefaultGroups(n, cfg.Samples))
	planned.SinkAhead = planned.Groups
	return planned, workers, err
}

// DefaultGroups returns the particle groups the estimator splits samples
// particles into on n training rows when core.Config.Groups is 0:
// MethodEP's (core.DefaultGroups: up to 64 of at least 125), and beyond
// LargeGroupRows rows fewer and larger ones, the count divided by
// ceil(n / GroupRows) but not below MinLargeGroups (nor above MethodEP's).
// A group's log-estimate spreads with the steps its twisted weights take,
// about as n / (its particles), so at a fixed group size the group
// estimates grow heavy-tailed with n, and groups that grow with n keep
// them together: on the two-class problem (m = 30, M = 10^4), groups of
// 156 agree at 10^5 and 3 x 10^5 (effectively 50.8 and 50.3 of 64 carry
// the mean) but not at 10^6, where from one preparation 32 groups of 312
// gave 9.1, 21.4 and 23.8 of 32 on seeds 1-3 (the first below the half
// that core.Result.Trust asks) and 16 groups of 625 13.5 of 16 (seed 1;
// docs/vecchia.md, Calibration: "Groups of 625 at 10^6"). Two running
// groups of 625 particles hold 5 x 10^9 bytes of latent values at 10^6.
func DefaultGroups(n, samples int) int {
	g := core.DefaultGroups(core.MethodEP, samples)
	if n <= LargeGroupRows {
		return g
	}
	s := (n + GroupRows - 1) / GroupRows
	return max(min(g, MinLargeGroups), g/s)
}

// LargeGroupRows, GroupRows and MinLargeGroups are DefaultGroups' bounds:
// the training rows beyond which groups grow with n, the rows a group's
// default size is counted in there, and the fewest groups that leaves (a
// standard error from 15 degrees of freedom).
const (
	LargeGroupRows = 500000
	GroupRows      = 250000
	MinLargeGroups = 16
)

// NewRunner returns a worker's runner for groups of at most maxM
// particles (core.Estimator).
func (p *Prepared) NewRunner(cfg *core.Config, maxM int) core.Runner { return newRunner(p, cfg, maxM) }

// Output returns the group's estimate, test posteriors (NaN for a dead
// group) and kept paths, their arrays detached (core.Runner).
func (r *runner) Output() core.CloudGroup {
	if r.dead >= 0 {
		for t := range r.pg {
			r.pg[t] = math.NaN()
		}
		r.keepPaths(r.g, nil)
		if r.p.Score != nil {
			r.sc = make([]float64, ScoreMoments*len(r.p.Score.Hypers))
			for j := range r.sc {
				r.sc[j] = math.NaN()
			}
		}
	}
	grp := core.CloudGroup{LogZ: r.logZ, Post: r.pg, Score: r.sc}
	r.sc = nil
	if r.kept[r.g] > 0 {
		grp.Paths, grp.PathW = r.paths, r.pw
		r.paths, r.pw = nil, nil
	}
	r.pg = nil
	return grp
}

// Reuse takes a spare's posteriors' and kept paths' arrays, or makes the
// posteriors' (core.Runner).
func (r *runner) Reuse(spare core.CloudGroup) {
	r.pg = spare.Post
	if r.pg == nil {
		r.pg = make([]float64, r.p.m.T)
	}
	r.paths, r.pw = spare.Paths, spare.PathW
}

// rowStepper is a runner's step through a regular training row and
// through a row that repeats an earlier point (runner, classRunner).
type rowStepper interface {
	step(k int)
	stepRepeat(k, dp int)
}

// runRows starts a group of m particles (weights 1/m, corrections 0,
// each its own origin: logw, corr and orig) and takes it through the n
// training rows in order, row k by st.stepRepeat where dup(k) names the
// point it repeats and by st.step otherwise, checking ctx and telling
// progress (if not nil) of the particle-steps done every progressEvery
// rows. It returns the row after which *logZ is -Inf (every particle
// failed) and stops there, or -1.
func runRows(ctx context.Context, n, m int, dup func(int) int, st rowStepper, logw, corr []float64, orig []int, logZ *float64, progress func(int64)) (int, error) {
	for q := range m {
		logw[q] = -math.Log(float64(m))
		corr[q] = 0
		orig[q] = q
	}
	done := 0
	for k := range n {
		if k%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return -1, err
			}
			if progress != nil && k > done {
				progress(int64(m) * int64(k-done))
				done = k
			}
		}
		if dp := dup(k); dp >= 0 {
			st.stepRepeat(k, dp)
		} else {
			st.step(k)
		}
		if math.IsInf(*logZ, -1) {
			return k, nil
		}
	}
	if progress != nil && n > done {
		progress(int64(m) * int64(n-done))
	}
	return -1, nil
}

// GroupSink receives a group's outcome and its weighted test posteriors
// (one per test row: the mean of P(w*_t >= 0 | x) over the group's final
// weighted particles; NaN for a dead group), in group order, one call at
// a time. pg is valid during the call only.
type GroupSink func(g int, out core.GroupResult, pg []float64) error

// Estimate is core.Estimate on p with sink, if not nil, as its Sink: the
// estimate of log P with its standard error and diagnostics, from the
// particles, groups, seed, threads, resampling threshold and memory limit
// of cfg (its Method is ignored). The result does not depend on
// cfg.Threads.
func Estimate(ctx context.Context, p *Prepared, cfg core.Config, sink GroupSink) (core.Result, error) {
	if sink != nil {
		cfg.Sink = func(g int, out core.GroupResult, grp *core.CloudGroup) error { return sink(g, out, grp.Post) }
	}
	return core.Estimate(ctx, p, cfg)
}
