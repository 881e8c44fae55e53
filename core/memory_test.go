package core_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/core"
)

// TestEstimateSink: the groups a Sink receives are, in group order and
// bit for bit, the groups Estimate keeps, whatever the threads, under a
// memory limit that lets one group run at a time too; the result is the
// same; an error from the Sink stops the estimate and is returned.
func TestEstimateSink(t *testing.T) {
	t.Parallel()
	const n = 40
	f, err := core.Prepare(orthant(n, equicorrelated(n, 0.5)), core.Candidate{Method: core.MethodMET, Order: core.OrderSharp}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Method: core.MethodMET, Samples: 3001, Groups: 6, Seed: 4, Keep: true}
	want, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keep = false
	// One running group of 501 particles and the spare array: 501 x
	// (40 + 3*40 + 2*8 + 14) x 8 bytes (filterBytes) + 501 x 40 x 8.
	for _, c := range []struct {
		threads int
		limit   int64
	}{{1, 0}, {3, 0}, {4, 501*(n+3*40+2*8+14)*8 + 501*n*8 + 1000}} {
		var order []int
		var groups []core.CloudGroup
		cfg.Threads, cfg.MaxMemory = c.threads, c.limit
		cfg.Sink = func(g int, _ core.GroupResult, grp *core.CloudGroup) error {
			order = append(order, g)
			groups = append(groups, core.CloudGroup{Z: append([]float64(nil), grp.Z...), LogW: append([]float64(nil), grp.LogW...), LogZ: grp.LogZ})
			return nil
		}
		res, err := core.Estimate(context.Background(), f, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.LogP != want.LogP || res.SE != want.SE || res.Cloud != nil || len(order) != 6 {
			t.Fatalf("threads %d: log P %v SE %v, %d groups sunk; kept run %v %v", c.threads, res.LogP, res.SE, len(order), want.LogP, want.SE)
		}
		for k, g := range groups {
			w := want.Cloud.Groups[k]
			if order[k] != k || g.LogZ != w.LogZ || len(g.Z) != len(w.Z) || len(g.LogW) != len(w.LogW) {
				t.Fatalf("threads %d: sink call %d: group %d, log Z %v, %d values; Estimate's group %d: %v, %d", c.threads, k, order[k], g.LogZ, len(g.Z), k, w.LogZ, len(w.Z))
			}
			for i := range g.Z {
				if math.Float64bits(g.Z[i]) != math.Float64bits(w.Z[i]) {
					t.Fatalf("threads %d: group %d: z[%d] = %v, kept %v", c.threads, k, i, g.Z[i], w.Z[i])
				}
			}
			for i := range g.LogW {
				if math.Float64bits(g.LogW[i]) != math.Float64bits(w.LogW[i]) {
					t.Fatalf("threads %d: group %d: log w[%d] = %v, kept %v", c.threads, k, i, g.LogW[i], w.LogW[i])
				}
			}
		}
	}
	full := errors.New("disk full")
	calls := 0
	cfg.Threads, cfg.MaxMemory = 2, 0
	cfg.Sink = func(g int, _ core.GroupResult, grp *core.CloudGroup) error {
		if calls++; g == 2 {
			return full
		}
		return nil
	}
	if _, err := core.Estimate(context.Background(), f, cfg); !errors.Is(err, full) || calls != 3 {
		t.Errorf("a Sink failing at group 2: %v after %d calls", err, calls)
	}
	cfg.Keep = true
	if _, err := core.Estimate(context.Background(), f, cfg); err == nil {
		t.Error("Keep with a Sink: no error")
	}
}

// TestSinkAhead: with SinkAhead, the workers go on while a slow Sink
// holds its first group, as far as SinkAhead finished groups (here all
// of them), and the Sink still receives Estimate's groups in order, bit
// for bit; Plan lowers SinkAhead to what fits in MaxMemory.
func TestSinkAhead(t *testing.T) {
	t.Parallel()
	const n = 40
	f, err := core.Prepare(orthant(n, equicorrelated(n, 0.5)), core.Candidate{Method: core.MethodMET, Order: core.OrderSharp}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Method: core.MethodMET, Samples: 3000, Groups: 6, Seed: 4, Threads: 2, Keep: true}
	want, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keep = false
	cfg.SinkAhead = 6
	var done atomic.Int64
	all := make(chan struct{})
	cfg.Progress = func(steps int64) {
		if done.Add(steps) == 3000*n {
			close(all)
		}
	}
	var got []float64
	cfg.Sink = func(g int, _ core.GroupResult, grp *core.CloudGroup) error {
		if g == 0 {
			select {
			case <-all: // every group ran while this one waited
			case <-time.After(20 * time.Second):
				return fmt.Errorf("the groups after the first did not run ahead of the Sink: %d of %d particle steps", done.Load(), 3000*n)
			}
		}
		if grp.LogZ != want.Cloud.Groups[g].LogZ {
			return fmt.Errorf("group %d: log Z %v, kept %v", g, grp.LogZ, want.Cloud.Groups[g].LogZ)
		}
		got = append(got, grp.Z...)
		return nil
	}
	res, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kept []float64
	for _, g := range want.Cloud.Groups {
		kept = append(kept, g.Z...)
	}
	if res.LogP != want.LogP || !slices.Equal(got, kept) {
		t.Errorf("log P %v against %v, or the sunk particles differ from the kept", res.LogP, want.LogP)
	}
	// One group of 500 running, the spare array and two more: SinkAhead 3.
	one := int64(500*(n+3*40+2*8+14)*8) + 500*n*8
	cfg.Threads, cfg.MaxMemory = 1, one+2*500*n*8+100
	if p, err := core.Plan(cfg, n); err != nil || p.SinkAhead != 3 {
		t.Errorf("Plan under a limit with room for 2 more arrays: SinkAhead %d, %v; want 3", p.SinkAhead, err)
	}
}

// TestMaxMemory: a limit that leaves room for one group at a time changes
// nothing; one that leaves room for no default group splits the particles
// into more groups, which agree with the unsplit run within standard
// errors (and with the exact value); a kept cloud over the limit is a
// *MemoryError.
func TestMaxMemory(t *testing.T) {
	t.Parallel()
	const n = 30
	f, err := core.NewFactor(orthant(n, equicorrelated(n, 0.5)), core.Ordering{Kind: core.OrderVariance}, 0)
	if err != nil {
		t.Fatal(err)
	}
	exact := -math.Log(n + 1)
	base := core.Config{Samples: 16000, Seed: 6, Threads: 4}
	free, err := core.Estimate(context.Background(), f, base)
	if err != nil {
		t.Fatal(err)
	}
	// One group of 500 particles at a time: 500 x (30 + 3*32 + 2*8 + 14) x 8
	// bytes (filterBytes: z, three block arrays of whole groups of 8
	// columns, two sub-block arrays, 14 vectors).
	one := base
	one.MaxMemory = 500*(n+3*32+2*8+14)*8 + 100
	res, err := core.Estimate(context.Background(), f, one)
	if err != nil {
		t.Fatal(err)
	}
	if res.LogP != free.LogP || res.SE != free.SE || res.Groups != free.Groups {
		t.Errorf("one group at a time: log P %v SE %v groups %d, unlimited %v %v %d", res.LogP, res.SE, res.Groups, free.LogP, free.SE, free.Groups)
	}
	split := base
	split.MaxMemory = one.MaxMemory / 4
	res, err = core.Estimate(context.Background(), f, split)
	if err != nil {
		t.Fatal(err)
	}
	if res.Groups <= free.Groups || res.Samples != free.Samples {
		t.Fatalf("split run: %d groups of %d particles, unsplit %d", res.Groups, res.Samples, free.Groups)
	}
	if d := math.Abs(res.LogP - free.LogP); d > kSE*math.Hypot(res.SE, free.SE) {
		t.Errorf("split log P %v (SE %v), unsplit %v (SE %v): %.1f standard errors apart", res.LogP, res.SE, free.LogP, free.SE, d/math.Hypot(res.SE, free.SE))
	}
	checkEstimate(t, res, exact)
	// A user's own group count is not changed: too large a group is an error.
	fixed := split
	fixed.Groups = 32
	var me *core.MemoryError
	if _, err := core.Estimate(context.Background(), f, fixed); !errors.As(err, &me) {
		t.Errorf("fixed groups over the limit: %v, want a MemoryError", err)
	}
	keep := base
	keep.Keep = true
	keep.MaxMemory = core.CloudBytes(base.Samples, n) * 3 / 4
	if _, err := core.Estimate(context.Background(), f, keep); !errors.As(err, &me) {
		t.Errorf("kept cloud over the limit: %v, want a MemoryError", err)
	}
}
