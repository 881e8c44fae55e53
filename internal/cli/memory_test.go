package cli

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"0", 0}, {"123", 123}, {"8GB", 8e9}, {"8G", 8e9}, {"512MiB", 512 << 20}, {"1.5Gi", 3 << 29}, {"10kB", 10000}, {"2TB", 2e12}} {
		if got, err := parseByteSize(c.in); err != nil || got != c.want {
			t.Errorf("parseByteSize(%q) = %v, %v, want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "-1GB", "8XB", "1e30"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) succeeded", bad)
		}
	}
	if d := defaultMaxMemory(); d < 1<<28 {
		t.Errorf("default --max-memory %d bytes", d)
	}
}

// TestTrainMaxMemory: gpc-train streams its cloud, so a --max-memory
// far below the cloud's size, that lets one group run at a time, changes
// nothing in the stream; one that leaves room for no group of the default
// count splits the particles into more groups (with a warning), and
// gpc-predict predicts from that cloud too; one that no split fits is
// refused.
func TestTrainMaxMemory(t *testing.T) {
	t.Parallel()
	cov := runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "1.5")})
	// 24 groups of 125 particles (EP's default, core.DefaultGroups) in 8
	// dimensions: the cloud takes 8 kB a group, 192 kB in all; a running
	// group of 250 takes 124 kB, one of 125 62 kB.
	args := []string{"--samples", "3000", "--threads", "2"}
	want := runCLI(t, Train, cliCase{args: args, stdin: cov})
	if got := runCLI(t, Train, cliCase{args: append(args, "--max-memory", "150kB"), stdin: cov}); !bytes.Equal(got, want) {
		t.Error("the cloud under --max-memory 150kB differs from the unlimited one")
	}
	wr, err := format.OpenCloud(bytes.NewReader(want), "unlimited", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	groups := len(wr.GroupSizes())
	wr.Close()
	// Under 66 kB no group of 125 fits beside the streamer's spare array
	// (62 + 8 kB); the pilots' groups of 125 do (62 kB, no cloud).
	split := runCLI(t, Train, cliCase{args: append(args, "--max-memory", "66kB"), stdin: cov, stderr: "split into"})
	cr, err := format.OpenCloud(bytes.NewReader(split), "split", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if g := len(cr.GroupSizes()); g <= groups {
		t.Errorf("the cloud under 66 kB has %d groups, want more than %d", g, groups)
	}
	cr.Close()
	runCLI(t, Predict, cliCase{stdin: split})
	runCLI(t, Train, cliCase{args: append(args, "--max-memory", "66kB", "--groups", strconv.Itoa(groups)), stdin: cov, code: ExitUsage, stderr: "memory"})
	// The cloud's test rows come first: gpc-predict streams the particles
	// past them and needs no room for the cloud.
	if got, all := runCLI(t, Predict, cliCase{args: []string{"--max-memory", "100kB"}, stdin: want}), runCLI(t, Predict, cliCase{stdin: want}); !bytes.Equal(got, all) {
		t.Error("gpc-predict under --max-memory 100kB differs")
	}
}

// TestOrthantSplit: when no group of the default count fits, gpc-orthant
// splits the particles into more groups, and the estimate agrees with the
// unsplit one within their standard errors.
func TestOrthantSplit(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"smc", "ep"} {
		args := []string{"testdata/equicorr3.csv", "--samples", "20000", "--format", "csv", "--method", method, "--order", "variance"}
		read := func(out []byte) (logP, se float64, groups int) {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			head, rec := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
			for i, h := range head {
				switch h {
				case "log_p":
					logP, _ = strconv.ParseFloat(rec[i], 64)
				case "se_log_p":
					se, _ = strconv.ParseFloat(rec[i], 64)
				case "groups":
					groups, _ = strconv.Atoi(rec[i])
				}
			}
			return logP, se, groups
		}
		p0, se0, g0 := read(runCLI(t, Orthant, cliCase{args: args}))
		// A group of 625 particles in 3 dimensions takes 625 x 57 x 8 = 285 kB.
		p1, se1, g1 := read(runCLI(t, Orthant, cliCase{args: append(args, "--max-memory", "60kB"), stderr: "split into"}))
		if g1 <= g0 {
			t.Fatalf("%s: %d groups under the limit, %d without", method, g1, g0)
		}
		if d := math.Abs(p1 - p0); d > 4*math.Hypot(se0, se1) {
			t.Errorf("%s: split log P %v (SE %v), unsplit %v (SE %v)", method, p1, se1, p0, se0)
		}
	}
}

// TestMemoryPlan: the factorisations must fit (exit 65), a kept cloud must
// fit whole (exit 80); otherwise the particles' limit is --max-memory, but
// never more than the memory left after the factorisations.
func TestMemoryPlan(t *testing.T) {
	cands := []core.Candidate{{Method: core.MethodMET, Order: core.OrderSharp}}
	const n, gb = 1000, int64(1e9)
	factor := int64(factorBytes(n, cands)) // 32 MB
	cfg := core.Config{Samples: 1 << 20, MaxMemory: 4 * gb}
	cloud := core.CloudBytes(cfg.Samples, n) // 8.4 GB
	var big *denseTooLarge
	if _, err := memoryPlan(factor-1, "--samples", "x", n, cfg, cands, false); !errors.As(err, &big) || classify(err, context.Background()) != ExitData {
		t.Errorf("a factorisation over the memory: %v, want a data error", err)
	}
	if _, err := memoryPlan(factor+cloud-1, "--samples", "x", n, cfg, cands, true); err == nil || classify(err, context.Background()) != ExitUsage {
		t.Errorf("a cloud over the memory: %v, want a usage error", err)
	}
	for _, c := range []struct {
		avail, max, want int64
		keep             bool
	}{
		{100 * gb, 4 * gb, 4 * gb, true},       // the flag's limit: the cloud is written in parts
		{100 * gb, 0, 100*gb - factor, false},  // no limit: what is left
		{3 * gb, 4 * gb, 3*gb - factor, false}, // never more than what is left
		{factor + cloud, 4 * gb, 4 * gb, true}, // the cloud fits, just
	} {
		cfg.MaxMemory = c.max
		got, err := memoryPlan(c.avail, "--samples", "x", n, cfg, cands, c.keep)
		if err != nil || got != c.want {
			t.Errorf("avail %d, --max-memory %d, keep %v: limit %d, %v; want %d", c.avail, c.max, c.keep, got, err, c.want)
		}
	}
}

// TestAvailableMemory: on Linux the kernel says how much memory is free.
func TestAvailableMemory(t *testing.T) {
	n, ok := availableMemory()
	if runtime.GOOS == "linux" && (!ok || n <= 0) {
		t.Errorf("available memory %d, %v", n, ok)
	}
}

// TestFactorBytes: what the plan reserves for a candidate's preparation
// covers what core.Prepare holds, on the large-N problem at 2000
// variables (docs/benchmarks.md; at 2000 the scratch is half an N x N,
// so that one more N x N copy would fail): the heap in use at its peak,
// sampled every millisecond with the collector's goal 1 % above the live
// heap (sampling can only miss a peak, never make one up), and what the
// factor keeps afterwards, both within the reservation; and the automatic
// choice's two candidates at N = 10^4 fit in 3.6 GB (4 N x N and
// scratch), where four N x N each asked for 6.4 GB.
func TestFactorBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares 2000 variables twice")
	}
	n := 2000
	r := rand.New(rand.NewPCG(3, 0x1a26e))
	x, y := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		s := float64(1 - 2*(i%2))
		x[2*i], x[2*i+1], y[i] = s*0.75+r.NormFloat64(), s*0.75+r.NormFloat64(), s
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	box := core.Box{N: n, Cov: gp.ClassifierCov(k, x, 2, y), Labels: y}
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	nn := 8 * float64(n*n)
	for _, c := range core.AutoCandidates {
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		var peak atomic.Uint64
		stop, done := make(chan bool), make(chan bool)
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak.Store(max(peak.Load(), m.HeapAlloc))
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		f, err := core.Prepare(box, c, 1, 0)
		close(stop)
		<-done
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(f)
		want := factorBytes(n, []core.Candidate{c})
		held, top := float64(m1.HeapAlloc)-float64(m0.HeapAlloc), float64(peak.Load())-float64(m0.HeapAlloc)
		t.Logf("%s: peak %.3g N x N, held %.3g, reserved %.3g", c, top/nn, held/nn, want/nn)
		if held > want || top > want {
			t.Errorf("%s: held %.3g N x N, at the peak %.3g, and the plan reserves %.3g", c, held/nn, top/nn, want/nn)
		}
	}
	const big = 10000
	if got, want := factorBytes(big, core.AutoCandidates), 2*8*(2*big+factorScratch)*float64(big); got != want {
		t.Errorf("N = %d, %d candidates: %.4g bytes reserved, want %.4g", big, len(core.AutoCandidates), got, want)
	}
	if _, err := memoryPlan(3.6e9, "--samples", "x", big, core.Config{Samples: 1000}, core.AutoCandidates, false); err != nil {
		t.Errorf("N = %d in 3.6 GB: %v", big, err)
	}
}
