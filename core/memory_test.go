package core_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"gpc/core"
)

// TestEstimateRange: groups regenerated in parts are bit for bit the groups
// Estimate keeps.
func TestEstimateRange(t *testing.T) {
	t.Parallel()
	f, err := core.Prepare(orthant(40, equicorrelated(40, 0.5)), core.Candidate{Method: core.MethodMET, Order: core.OrderSharp}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Method: core.MethodMET, Samples: 3001, Groups: 6, Seed: 4, Keep: true}
	res, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 2}, {2, 5}, {5, 6}} {
		c, err := core.EstimateRange(context.Background(), f, cfg, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		for k, g := range c.Groups {
			want := res.Cloud.Groups[r[0]+k]
			if g.LogZ != want.LogZ || len(g.Z) != len(want.Z) || len(g.LogW) != len(want.LogW) {
				t.Fatalf("group %d: log Z %v, %d values; Estimate's %v, %d", r[0]+k, g.LogZ, len(g.Z), want.LogZ, len(want.Z))
			}
			for i := range g.Z {
				if math.Float64bits(g.Z[i]) != math.Float64bits(want.Z[i]) {
					t.Fatalf("group %d: z[%d] = %v, Estimate's %v", r[0]+k, i, g.Z[i], want.Z[i])
				}
			}
			for i := range g.LogW {
				if math.Float64bits(g.LogW[i]) != math.Float64bits(want.LogW[i]) {
					t.Fatalf("group %d: log w[%d] = %v, Estimate's %v", r[0]+k, i, g.LogW[i], want.LogW[i])
				}
			}
		}
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
	if g := core.GroupsInMemory(keep, n); g < 1 || g >= 32 {
		t.Errorf("GroupsInMemory = %d of 32 for three quarters of the cloud", g)
	}
}
