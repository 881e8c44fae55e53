package vecchia

import (
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// TestDefaultGroups checks the estimator's default groups: MethodEP's up
// to LargeGroupRows training rows, fewer and larger beyond (16 at 10^6,
// never below MinLargeGroups nor above MethodEP's), and that the plan
// takes them where Groups is 0, keeps the user's, and still splits the
// default into more, smaller groups to fit a memory limit.
func TestDefaultGroups(t *testing.T) {
	for _, c := range []struct{ n, samples, want int }{
		{1000, 10000, 64},
		{100000, 10000, 64},
		{300000, 10000, 64},
		{500000, 10000, 64},
		{500001, 10000, 21},
		{750000, 10000, 21},
		{750001, 10000, 16},
		{1000000, 10000, 16},
		{1500000, 10000, 16},
		{2000000, 10000, 16},
		{10000000, 10000, 16},
		{1000000, 40000, 16},
		{600000, 40000, 21},
		{1000000, 2000, 16},
		{1000000, 200, 8}, // MethodEP's 8 of 25: not raised to 16
	} {
		if got := DefaultGroups(c.n, c.samples); got != c.want {
			t.Errorf("DefaultGroups(%d, %d) = %d, want %d", c.n, c.samples, got, c.want)
		}
	}

	n, per := 1000000, runnerBytes(1, 1000000)
	p, _, err := plan(core.Config{Samples: 10000, Threads: 2}, n, per)
	if err != nil || p.Groups != 16 {
		t.Errorf("the plan at N = 10^6: %d groups (%v), want 16", p.Groups, err)
	}
	p, _, err = plan(core.Config{Samples: 10000, Groups: 64, Threads: 2}, n, per)
	if err != nil || p.Groups != 64 {
		t.Errorf("--groups 64 at N = 10^6: planned %d groups (%v)", p.Groups, err)
	}
	// Room for one group of 200 particles: the default's 16 groups of 625
	// are split, not refused.
	p, workers, err := plan(core.Config{Samples: 10000, Threads: 2, MaxMemory: 200 * per}, n, per)
	if err != nil || p.Groups <= 16 || (p.Samples+p.Groups-1)/p.Groups > 200 || workers != 1 {
		t.Errorf("the plan within %d bytes: %d groups, %d at once (%v), want groups of at most 200, one at a time", 200*per, p.Groups, workers, err)
	}
}

// TestPlanESSThreshold checks the two-class estimator's resampling
// threshold: DefaultESSThreshold up to LargeGroupRows training rows,
// core.EPLargeESSThreshold above, the user's wherever one is given; and
// the multi-class estimator's DefaultESSThreshold at any size.
func TestPlanESSThreshold(t *testing.T) {
	for _, c := range []struct {
		n         int
		ess, want float64
	}{
		{1000, 0, DefaultESSThreshold},
		{LargeGroupRows, 0, DefaultESSThreshold},
		{LargeGroupRows + 1, 0, core.EPLargeESSThreshold},
		{1000000, 0, core.EPLargeESSThreshold},
		{1000000, 0.3, 0.3},
		{1000, 0.9, 0.9},
	} {
		p := &Prepared{m: &Model{N: c.n}}
		got, _, err := p.Plan(core.Config{Samples: 10000, Threads: 2, ESSThreshold: c.ess})
		if err != nil || got.ESSThreshold != c.want {
			t.Errorf("N = %d, --ess %v: planned threshold %v (%v), want %v", c.n, c.ess, got.ESSThreshold, err, c.want)
		}
	}
	pm := &PreparedMulticlass{m: &Multiclass{N: 1000000, C: 3}, L: 2}
	got, _, err := pm.Plan(core.Config{Samples: 10000, Threads: 2})
	if err != nil || got.ESSThreshold != DefaultESSThreshold {
		t.Errorf("three classes at N = 10^6: planned threshold %v (%v), want %v", got.ESSThreshold, err, DefaultESSThreshold)
	}
}
