package core

import (
	"context"
	"errors"
	"sync"
)

// GroupRunner propagates particle groups one at a time: what RunGroups
// runs (an Estimator's Runner), one runner per worker goroutine, so that a runner's buffers are
// reused from group to group without locks.
type GroupRunner interface {
	// RunGroup runs group g of m particles with the random stream s (the
	// group's own, GroupStream) and returns its outcome. progress, if not
	// nil, is told of the particle-steps done as they are done (it is safe
	// for concurrent use). A cancelled ctx stops the group with ctx's
	// error.
	RunGroup(ctx context.Context, g, m int, s PCG, progress func(int64)) (GroupResult, error)
}

// RunGroups runs particle groups [first, last) of an estimate (sizes
// gives every group's particle count, GroupSizes), workers at a time, each
// group on a runner made by newRunner (one per worker) with its own random
// stream GroupStream(seed, g), and returns their outcomes in group order:
// the same whatever the number of workers or the order in which the groups
// finish. The first error stops the other groups and is returned; if ctx
// was cancelled, its error is returned instead. The driver (Estimate,
// EstimateGroups: driver.go) runs every Estimator's groups this way.
func RunGroups(ctx context.Context, seed uint64, sizes []int, first, last, workers int, newRunner func() GroupRunner, progress func(int64)) ([]GroupResult, error) {
	if first < 0 || last > len(sizes) || first >= last {
		panic("core: RunGroups: the range is not within the groups")
	}
	outs := make([]GroupResult, last-first)
	work := make(chan int, last-first)
	for k := first; k < last; k++ {
		work <- k
	}
	close(work)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers = max(1, min(workers, last-first))
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for t := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRunner()
			for k := range work {
				out, err := r.RunGroup(ctx, k, sizes[k], GroupStream(seed, k), progress)
				if err != nil {
					errs[t] = err
					cancel()
					return
				}
				outs[k-first] = out
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if perr := parent.Err(); perr != nil {
			return nil, perr
		}
		return nil, err
	}
	return outs, nil
}
