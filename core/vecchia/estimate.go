package vecchia

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gpc-mc/gpc/core"
)

// DefaultESSThreshold is the estimator's resampling threshold, a fraction
// of a group's particles.
const DefaultESSThreshold = 0.5

// config resolves cfg's defaults for the estimator: the groups MethodEP
// takes (its twisted weights have the same heavy tails), its own
// resampling threshold.
func config(cfg core.Config) core.Config {
	cfg.Method = core.MethodEP
	if cfg.ESSThreshold == 0 {
		cfg.ESSThreshold = DefaultESSThreshold
	}
	return cfg
}

// GroupSink receives a group's outcome and its weighted test posteriors
// (one per test row: the mean of P(w*_t >= 0 | x) over the group's final
// weighted particles), in group order, one call at a time. pg is valid
// during the call only.
type GroupSink func(g int, out core.GroupResult, pg []float64) error

// Plan returns cfg as Estimate runs it on p: defaults resolved, Groups
// raised where cfg.MaxMemory asks for smaller groups, and the groups run at
// once; or a *core.MemoryError.
func Plan(p *Prepared, cfg core.Config) (core.Config, int, error) {
	cfg = config(cfg)
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	return core.PlanParticles(cfg, p.m.N, runnerBytes(1, p.m.N))
}

// Estimate runs the estimator with the particles, groups, seed, threads,
// resampling threshold and memory limit of cfg (its Method is ignored)
// and returns the estimate of log P with its standard error and
// diagnostics, as core.Estimate's; sink, if not nil, receives each
// group's test posteriors. The result does not depend on cfg.Threads.
func Estimate(ctx context.Context, p *Prepared, cfg core.Config, sink GroupSink) (core.Result, error) {
	cfg, outs, err := EstimateGroups(ctx, p, cfg, 0, -1, sink)
	if err != nil {
		return core.Result{}, err
	}
	res := core.Summarize(cfg.Samples, outs)
	res.SetESSThreshold(cfg.ESSThreshold)
	return res, nil
}

// EstimateGroups runs groups [first, last) of the estimate that Estimate
// runs (last < 0: to the end), bit for bit, and returns the configuration
// as planned and the groups' outcomes: runs of ranges that cover the
// groups, on one machine or several, give core.Summarize what Estimate's
// own run gives.
func EstimateGroups(ctx context.Context, p *Prepared, cfg core.Config, first, last int, sink GroupSink) (core.Config, []core.GroupResult, error) {
	cfg, workers, err := Plan(p, cfg)
	if err != nil {
		return cfg, nil, err
	}
	if last < 0 {
		last = cfg.Groups
	}
	if first < 0 || last > cfg.Groups || first >= last {
		return cfg, nil, fmt.Errorf("vecchia: groups [%d, %d) are not a range of the %d groups", first, last, cfg.Groups)
	}
	sizes := core.GroupSizes(cfg.Samples, cfg.Groups)
	ord := newOrdered(first, sink)
	outs, err := core.RunGroups(ctx, cfg.Seed, sizes, first, last, workers, func() core.GroupRunner {
		return &sinkRunner{newRunner(p, &cfg, sizes[first]), ord}
	}, cfg.Progress)
	if err != nil {
		return cfg, nil, err
	}
	if ord.err != nil {
		return cfg, nil, ord.err
	}
	return cfg, outs, nil
}

// sinkRunner is a runner whose groups' test posteriors go to an ordered
// sink.
type sinkRunner struct {
	*runner
	ord *ordered
}

func (s *sinkRunner) RunGroup(ctx context.Context, g, m int, src core.PCG, progress func(int64)) (core.GroupResult, error) {
	out, err := s.runner.RunGroup(ctx, g, m, src, progress)
	if err != nil {
		return out, err
	}
	if s.runner.dead >= 0 {
		for t := range s.pg {
			s.pg[t] = math.NaN()
		}
	}
	return out, s.ord.put(g, out, s.pg)
}

// ordered hands groups' outcomes to a sink in group order, from whichever
// worker finishes the next group due.
type ordered struct {
	mu      sync.Mutex
	next    int
	pending map[int]pendingGroup
	sink    GroupSink
	err     error
}

type pendingGroup struct {
	out core.GroupResult
	pg  []float64
}

func newOrdered(first int, sink GroupSink) *ordered {
	return &ordered{next: first, pending: map[int]pendingGroup{}, sink: sink}
}

func (o *ordered) put(g int, out core.GroupResult, pg []float64) error {
	if o.sink == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.pending[g] = pendingGroup{out, slices.Clone(pg)}
	for {
		p, ok := o.pending[o.next]
		if !ok {
			return nil
		}
		delete(o.pending, o.next)
		if err := o.sink(o.next, p.out, p.pg); err != nil {
			o.err = err
			return err
		}
		o.next++
	}
}
