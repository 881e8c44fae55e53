package cli

import (
	"runtime"
	"testing"

	"gpc/core"
)

// TestEstimateMemory: the particles kept for a cloud take Samples x N
// float64s; without a cloud only the groups in flight hold theirs.
func TestEstimateMemory(t *testing.T) {
	cfg := core.Config{Samples: 1 << 20, Threads: 2}
	cands := []core.Candidate{{Method: core.MethodMET, Order: core.OrderSharp}}
	const n = 1000
	factor, kept := estimateMemory(n, cfg, cands, true)
	if want := 8.0 * n * n * factorCopies; factor != want {
		t.Errorf("factor %v, want %v", factor, want)
	}
	if lo := 8.0 * float64(cfg.Samples) * n; kept < lo || kept > 1.2*lo {
		t.Errorf("a kept cloud of %d particles of %d variables: %v bytes, want a little over %v", cfg.Samples, n, kept, lo)
	}
	_, flight := estimateMemory(n, cfg, cands, false)
	groups := core.DefaultGroups(core.MethodMET, cfg.Samples) // 32
	if lo := 8.0 * 2 * float64(cfg.Samples/groups) * n; flight < lo || flight > 1.3*lo {
		t.Errorf("2 groups in flight: %v bytes, want a little over %v", flight, lo)
	}
}

// TestAvailableMemory: on Linux the kernel says how much memory is free.
func TestAvailableMemory(t *testing.T) {
	n, ok := availableMemory()
	if runtime.GOOS == "linux" && (!ok || n <= 0) {
		t.Errorf("available memory %d, %v", n, ok)
	}
}
