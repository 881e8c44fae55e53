package core

import (
	"context"
	"errors"
	"fmt"
)

// The seam between the estimators and their driver. An estimator is a
// prepared problem (a Factor of this package, core/vecchia's Prepared)
// that says how many variables its particles step through, how it runs
// a Config (its defaults and its memory plan) and how one worker runs its
// groups; Estimate and EstimateGroups drive any of them the same way: the
// plan, the groups' random streams (RunGroups), the in-order hand-over of
// the groups' outputs to a Sink (inOrder), and the summary (Summarize).

// Estimator is a prepared problem that Estimate and EstimateGroups run.
type Estimator interface {
	// Dim is the number of variables a particle steps through: a run of
	// M particles does M * Dim particle-steps (Config.Progress).
	Dim() int
	// Plan returns cfg as the estimator runs it, its defaults resolved
	// and Groups raised where cfg.MaxMemory asks for smaller groups, and
	// how many groups may run at once within the limit; or the error of a
	// cfg it cannot run (a *MemoryError where the particles do not fit).
	// With a Sink, the planned SinkAhead is how many finished groups'
	// outputs may wait for it.
	Plan(cfg Config) (Config, int, error)
	// NewRunner returns one worker's runner for groups of at most maxM
	// particles of the planned configuration cfg.
	NewRunner(cfg *Config, maxM int) Runner
}

// Runner is one worker's GroupRunner of an Estimator: besides a group's
// outcome, its run leaves an output (CloudGroup: particles, test
// posteriors) that a Sink or a kept cloud takes.
type Runner interface {
	GroupRunner
	// Output detaches the output of the group just run: its buffers are
	// the taker's from now on, and the runner runs no group before Reuse.
	Output() CloudGroup
	// Reuse gives the runner the buffers of an output its taker is done
	// with, for its next group, or the zero CloudGroup: the runner then
	// allocates its own.
	Reuse(spare CloudGroup)
}

// Sink receives each group's outcome and output in group order, one
// call at a time (Config.Sink).
type Sink func(g int, out GroupResult, grp *CloudGroup) error

// Estimate estimates log P with the estimator est and the particles,
// groups, seed, threads and memory limit of cfg. The work is split into
// Groups independent groups, each with its own random stream derived from
// (cfg.Seed, group), run Threads at a time; the result is identical for
// any thread count. With cfg.Keep the groups' outputs are returned
// (Result.Cloud); with cfg.Sink they go to it in group order. It returns
// ctx.Err() if ctx is cancelled, and an error if est cannot run cfg.
//
// References: Pitt and Shephard (1999), "Filtering via simulation:
// auxiliary particle filters", JASA 94:590-599; Atiya, Fayed and
// Abdel-Gawad (2013), arXiv 1302.7220, section 5.
func Estimate(ctx context.Context, est Estimator, cfg Config) (Result, error) {
	planned, workers, err := est.Plan(cfg)
	if err != nil {
		return Result{}, err
	}
	var kept []CloudGroup
	if planned.Keep {
		// The kept cloud takes each group's buffers (its runner allocates
		// new ones), so nothing waits for them.
		kept = make([]CloudGroup, planned.Groups)
		planned.SinkAhead = planned.Groups
		planned.Sink = func(g int, _ GroupResult, grp *CloudGroup) error {
			kept[g], *grp = *grp, CloudGroup{}
			return nil
		}
	}
	outs, err := runEstimator(ctx, est, &planned, 0, planned.Groups, workers)
	if err != nil {
		return Result{}, err
	}
	res := Summarize(planned.Samples, outs)
	res.SetESSThreshold(planned.ESSThreshold)
	if planned.Keep {
		res.Cloud = &Cloud{N: est.Dim(), Groups: kept}
	}
	return res, nil
}

// EstimateGroups runs groups [first, last) of the estimate that
// Estimate(ctx, est, cfg) runs (last < 0: to the end), and returns the
// configuration as planned (Estimator.Plan: its Groups is the total group
// count) and the groups' outcomes, bit for bit those that Estimate
// computes for them: each group has its own random stream, derived from
// (cfg.Seed, group). Runs of disjoint ranges that cover [0, Groups), on
// one machine or several, give to Summarize what Estimate's own run gives
// (a sharded run). With cfg.Sink, the groups' outputs go to it from group
// first on. It returns an error if est cannot run cfg or the range is not
// within [0, Groups).
func EstimateGroups(ctx context.Context, est Estimator, cfg Config, first, last int) (Config, []GroupResult, error) {
	if cfg.Keep {
		return cfg, nil, errors.New("core: EstimateGroups keeps no cloud (use Sink)")
	}
	planned, workers, err := est.Plan(cfg)
	if err != nil {
		return planned, nil, err
	}
	if last < 0 {
		last = planned.Groups
	}
	if first < 0 || last > planned.Groups || first >= last {
		return planned, nil, fmt.Errorf("core: groups [%d, %d) are not a range of the %d groups", first, last, planned.Groups)
	}
	outs, err := runEstimator(ctx, est, &planned, first, last, workers)
	return planned, outs, err
}

// runEstimator runs groups [first, last) of the planned configuration cfg
// on est's runners, workers at a time (RunGroups), their outputs handed
// to cfg.Sink in group order (inOrder).
func runEstimator(ctx context.Context, est Estimator, cfg *Config, first, last, workers int) ([]GroupResult, error) {
	sizes := GroupSizes(cfg.Samples, cfg.Groups)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers = max(1, min(workers, last-first))
	var st *inOrder
	if cfg.Sink != nil {
		st = newInOrder(ctx, cancel, cfg.Sink, first, workers+max(1, cfg.SinkAhead), max(1, cfg.SinkAhead))
	}
	outs, err := RunGroups(ctx, cfg.Seed, sizes, first, last, workers, func() GroupRunner {
		r := est.NewRunner(cfg, sizes[first])
		if st == nil {
			return r
		}
		return &handingRunner{r, st}
	}, cfg.Progress)
	if sinkErr := st.close(); sinkErr != nil {
		return nil, sinkErr
	}
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// handingRunner hands each group's output over to the in-order sink and
// takes a spare for its next group.
type handingRunner struct {
	Runner
	st *inOrder
}

func (h *handingRunner) RunGroup(ctx context.Context, g, m int, s PCG, progress func(int64)) (GroupResult, error) {
	out, err := h.Runner.RunGroup(ctx, g, m, s, progress)
	if err != nil {
		return out, err
	}
	spare, err := h.st.handOver(g, out, h.Output())
	if err != nil {
		return GroupResult{}, err
	}
	h.Reuse(spare)
	return out, nil
}

// inOrder hands the groups' outputs to a Sink in group order, from a
// goroutine of its own, whichever worker finishes the next group due, and
// gives their buffers back to the workers: a worker that hands an output
// over takes a spare, an output the sink is done with where there is one,
// else the zero CloudGroup (its runner allocates) while fewer than ahead
// were made, else it waits for one; so at most workers + ahead outputs
// exist at once, and no more than the sink's pace needs.
type inOrder struct {
	ctx    context.Context
	done   chan handed     // outputs handed over, in any order
	free   chan CloudGroup // outputs given back
	tokens chan struct{}   // one for each spare that may still be made
	exited chan struct{}   // the goroutine has returned
	err    error           // the Sink's, read after exited
}

// handed is a group's output on its way to the sink.
type handed struct {
	g   int
	out GroupResult
	grp CloudGroup
}

// newInOrder starts the hand-over to sink of the groups from first on,
// with room for outputs handed over at once and ahead spares; an error
// from sink cancels the run.
func newInOrder(ctx context.Context, cancel func(), sink Sink, first, outputs, ahead int) *inOrder {
	st := &inOrder{
		ctx:    ctx,
		done:   make(chan handed, outputs),
		free:   make(chan CloudGroup, outputs),
		tokens: make(chan struct{}, ahead),
		exited: make(chan struct{}),
	}
	for range ahead {
		st.tokens <- struct{}{}
	}
	go func() {
		defer close(st.exited)
		pending := map[int]handed{}
		next := first
		for h := range st.done {
			pending[h.g] = h
			for {
				p, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				if st.err == nil && ctx.Err() == nil {
					if err := sink(next, p.out, &p.grp); err != nil {
						st.err = err
						cancel()
					}
				}
				st.free <- p.grp
				next++
			}
		}
	}()
	return st
}

// handOver gives group g's outcome and output to the sink and returns a
// spare for the worker's next group.
func (st *inOrder) handOver(g int, out GroupResult, grp CloudGroup) (CloudGroup, error) {
	st.done <- handed{g, out, grp}
	select {
	case spare := <-st.free:
		return spare, nil
	default:
	}
	select {
	case spare := <-st.free:
		return spare, nil
	case <-st.tokens:
		return CloudGroup{}, nil // the runner allocates it
	case <-st.ctx.Done():
		return CloudGroup{}, st.ctx.Err()
	}
}

// close waits for the hand-over to finish and returns the Sink's error.
func (st *inOrder) close() error {
	if st == nil {
		return nil
	}
	close(st.done)
	<-st.exited
	return st.err
}
