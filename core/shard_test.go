package core_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// TestEstimateGroupsSharded: the groups of an estimate run in disjoint
// ranges (as shards on several machines run them) and summarized give
// exactly Estimate's result, every field bit for bit, also when the
// ranges run with other thread counts and when --max-memory splits the
// particles into more groups.
func TestEstimateGroupsSharded(t *testing.T) {
	t.Parallel()
	box := orthant(60, oracle.OneFactor(uniformLoadings(60, 7)))
	for _, tc := range []struct {
		cand core.Candidate
		cfg  core.Config
	}{
		{core.Candidate{Method: core.MethodSMC, Order: core.OrderShuffle}, core.Config{Samples: 3001, Groups: 11, Seed: 4, Threads: 3}},
		{core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy}, core.Config{Method: core.MethodEP, Samples: 2000, Seed: 5, Threads: 2}},
		{core.Candidate{Method: core.MethodMET, Order: core.OrderSharp}, core.Config{Method: core.MethodMET, Samples: 4000, Seed: 6, Threads: 2, MaxMemory: 300 << 10}},
		{core.Candidate{Method: core.MethodPaperHard, Order: core.OrderShuffle}, core.Config{Method: core.MethodPaperHard, Samples: 1000, Groups: 5, Seed: 7}},
	} {
		f, err := core.Prepare(box, tc.cand, tc.cfg.Seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := core.Estimate(context.Background(), f, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := core.Plan(tc.cfg, f.N)
		if err != nil {
			t.Fatal(err)
		}
		if tc.cfg.MaxMemory > 0 && plan.Groups <= core.DefaultGroups(tc.cfg.Method, tc.cfg.Samples) {
			t.Fatalf("%v: the memory limit did not split the particles (%d groups)", tc.cand, plan.Groups)
		}
		for _, k := range []int{1, 2, 3, plan.Groups} {
			var groups []core.GroupResult
			for i := range k {
				cfg := tc.cfg
				cfg.Threads = 1 + i%2
				got, outs, err := core.EstimateGroups(context.Background(), f, cfg, plan.Groups*i/k, plan.Groups*(i+1)/k)
				if err != nil {
					t.Fatal(err)
				}
				if got.Groups != plan.Groups {
					t.Fatalf("%v: shard %d of %d planned %d groups, Plan %d", tc.cand, i, k, got.Groups, plan.Groups)
				}
				groups = append(groups, outs...)
			}
			// The merge sets the resampling threshold the shards planned
			// (gpc-merge: format.KeyShardESS).
			got := core.Summarize(plan.Samples, groups)
			got.SetESSThreshold(plan.ESSThreshold)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v, %d shards: %+v, unsharded %+v", tc.cand, k, got, want)
			}
		}
	}
}

// TestEstimateGroupsRange: a range outside the groups, or a kept cloud,
// is an error.
func TestEstimateGroupsRange(t *testing.T) {
	t.Parallel()
	f, err := core.NewFactor(orthant(5, equicorrelated(5, 0.5)), core.Ordering{Kind: core.OrderVariance}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{-1, 2}, {0, 9}, {3, 3}, {4, 2}} {
		if _, _, err := core.EstimateGroups(context.Background(), f, core.Config{Samples: 100, Groups: 8}, r[0], r[1]); err == nil {
			t.Errorf("groups [%d, %d) of 8: no error", r[0], r[1])
		}
	}
	if _, _, err := core.EstimateGroups(context.Background(), f, core.Config{Samples: 100, Groups: 8, Keep: true}, 0, 8); err == nil {
		t.Error("Keep: no error")
	}
}
