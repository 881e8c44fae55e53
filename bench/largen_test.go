package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// largeNBox is the problem of the large-N issue: n 2-D points, half from
// N((0.75, 0.75), I) labelled +1 and half from N((-0.75, -0.75), I)
// labelled -1, in random order, and the RBF classifier covariance (alpha
// 1, beta 10) of them.
func largeNBox(n int, seed uint64) core.Box {
	r := rand.New(rand.NewPCG(seed, 0x1a26e))
	x, y := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		s := 1.0
		if i%2 == 1 {
			s = -1
		}
		x[2*i], x[2*i+1], y[i] = s*0.75+r.NormFloat64(), s*0.75+r.NormFloat64(), s
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	return core.Box{N: n, Cov: gp.ClassifierCov(k, x, 2, y), Labels: y}
}

// BenchmarkLargeN times what `gpc-kernel --kernel rbf --alpha 1 --beta 10
// | gpc-orthant --samples M` does after reading its input, on the large-N
// issue's problem: the preparation (EP, the order, the factorisations, the
// pilots of the automatic choice) and the main estimate, separately, wall
// and CPU seconds of the whole process, and each O(N^3) step of the
// preparation (told apart by core.Trace's phases) with its GFLOP/s next to
// the GEMM kernel's own rate, measured in the same run on a square
// product with the same workers:
//
//	rfactor   R's Cholesky factorisation, N^3/3 flops
//	sweeps    EP's sweeps, N^3 flops each (N^3/2 multiply-adds)
//	order     the greedy order and Sigma's pivoted factorisation, N^3/3
//	pilot     the pilot estimate(s) (and any fallback candidate)
//	estimate  the propagation, M N^2 flops (M N^2/2 multiply-adds)
//
// and the process's peak resident memory (of the whole benchmark process
// so far: the sizes run in increasing N).
//
//	go test ./bench -run '^$' -bench LargeN -benchtime 1x
func BenchmarkLargeN(b *testing.B) {
	for _, c := range []struct{ n, m int }{{1000, 10000}, {2000, 1000}, {2000, 10000}, {5000, 10000}, {10000, 10000}} {
		b.Run(fmt.Sprintf("n=%d/m=%d", c.n, c.m), func(b *testing.B) {
			// The preparation's flops, about 4 n^3 (EP's sweeps, the
			// factorisations): only N = 1000 in the smoke run.
			skipLarge(b, 4*float64(c.n)*float64(c.n)*float64(c.n))
			box := largeNBox(c.n, 1)
			cfg := core.Config{Samples: c.m, Seed: 1}
			gemmRate := gemmGFLOPS()
			n3 := float64(c.n) * float64(c.n) * float64(c.n)
			var prep, est, prepCPU, estCPU time.Duration
			phases := map[string]time.Duration{}
			sweeps := 0
			for b.Loop() {
				var last string
				var at time.Time
				mark := func(phase string) {
					now := time.Now()
					if last != "" {
						phases[last] += now.Sub(at)
					}
					last, at = phase, now
				}
				cfg.Trace = func(s string) {
					switch {
					case strings.HasPrefix(s, "EP: factorising R"):
						mark("rfactor")
					case strings.HasPrefix(s, "EP: sweep 1 "):
						mark("sweeps")
					case strings.HasPrefix(s, "ep/"):
						mark("order")
					case strings.HasPrefix(s, "pilot"):
						mark("pilot")
					}
				}
				t0, c0 := time.Now(), processCPU()
				f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
				if err != nil {
					b.Fatal(err)
				}
				mark("")
				t1, c1 := time.Now(), processCPU()
				cfg.Method = cand.Method
				cfg.Trace = nil
				if _, err := core.Estimate(context.Background(), f, cfg); err != nil {
					b.Fatal(err)
				}
				prep += t1.Sub(t0)
				est += time.Since(t1)
				prepCPU += c1 - c0
				estCPU += processCPU() - c1
				sweeps += f.EPStats.Sweeps
			}
			per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
			rate := func(flops float64, d time.Duration) float64 { return flops / per(d) / 1e9 }
			b.ReportMetric(per(prep), "prep-s/op")
			b.ReportMetric(per(est), "estimate-s/op")
			b.ReportMetric(per(prepCPU), "prep-cpu-s/op")
			b.ReportMetric(per(estCPU), "estimate-cpu-s/op")
			b.ReportMetric(per(phases["pilot"])/per(prep+est), "pilot-share")
			b.ReportMetric(float64(sweeps)/float64(b.N), "sweeps/op")
			b.ReportMetric(rate(n3/3, phases["rfactor"]), "rfactor-GFLOP/s")
			b.ReportMetric(rate(float64(sweeps)/float64(b.N)*n3, phases["sweeps"]), "sweeps-GFLOP/s")
			b.ReportMetric(rate(n3/3, phases["order"]), "order-GFLOP/s")
			b.ReportMetric(rate(float64(c.m)*float64(c.n)*float64(c.n), est), "estimate-GFLOP/s")
			b.ReportMetric(gemmRate, "gemm-GFLOP/s")
			b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
		})
	}
}

// gemmGFLOPS is the GEMM kernel's rate (GFLOP/s, wall) on a square
// product of order 1536 with all workers: the best of three.
func gemmGFLOPS() float64 {
	const k = 1536
	r := rand.New(rand.NewPCG(1, 2))
	a, bm, c := randMatrix(r, k*k), randMatrix(r, k*k), make([]float64, k*k)
	var ws gemm.Workspace
	best := 0.0
	for range 3 {
		t0 := time.Now()
		ws.NT(k, k, k, a, k, bm, k, c, k, false, runtime.GOMAXPROCS(0))
		best = max(best, 2*k*k*k/time.Since(t0).Seconds()/1e9)
	}
	return best
}
