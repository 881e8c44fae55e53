package vecchia

import (
	"context"
	"errors"
	"math"

	"github.com/gpc-mc/gpc/core"
)

// DefaultESSThreshold is the estimator's resampling threshold, a fraction
// of a group's particles.
const DefaultESSThreshold = 0.5

// The Vecchia estimator is a core.Estimator: Prepared says how it runs a
// core.Config, and core.Estimate and core.EstimateGroups drive it as they
// drive a dense Factor.

// Dim returns the model's training rows, the steps of a particle
// (core.Estimator).
func (p *Prepared) Dim() int { return p.m.N }

// Plan returns cfg as the estimator runs it (core.Estimator): the groups
// MethodEP takes (its twisted weights have the same heavy tails), its own
// resampling threshold, Groups raised where cfg.MaxMemory asks for
// smaller groups, and the groups run at once; or a *core.MemoryError.
// Its groups' outputs are their test posteriors, T values each, so a Sink
// lets every finished group wait for it.
func (p *Prepared) Plan(cfg core.Config) (core.Config, int, error) {
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
	per := runnerBytes(1, p.m.N)
	if p.KeepPaths > 0 {
		// A worker's kept paths and those of a finished group waiting
		// for the Sink: at most twice the kept share of a particle's
		// path.
		per += 2 * int64(p.m.N) * 4 * int64(min(p.KeepPaths, cfg.Samples)) / int64(max(1, cfg.Samples))
	}
	planned, workers, err := core.PlanParticles(cfg, p.m.N, per)
	planned.SinkAhead = planned.Groups
	if p.KeepPaths > 0 {
		planned.SinkAhead = 1 // the kept paths are large: groups wait for the Sink
	}
	return planned, workers, err
}

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
	}
	grp := core.CloudGroup{LogZ: r.logZ, Post: r.pg}
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
