package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gpc/core"
	"gpc/core/gp"
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
// issue's problem: the preparation (EP, the orders, the factorisations,
// the pilots of the automatic choice) and the main estimate, separately.
//
//	go test ./bench -run '^$' -bench LargeN -benchtime 1x
func BenchmarkLargeN(b *testing.B) {
	for _, c := range []struct{ n, m int }{{1000, 10000}, {2000, 1000}, {2000, 10000}, {5000, 10000}} {
		b.Run(fmt.Sprintf("n=%d/m=%d", c.n, c.m), func(b *testing.B) {
			// The preparation's flops, about 4 n^3 (EP's sweeps and
			// recompute, the factorisations): only N = 1000 in the smoke run.
			skipLarge(b, 4*float64(c.n)*float64(c.n)*float64(c.n))
			box := largeNBox(c.n, 1)
			cfg := core.Config{Samples: c.m, Seed: 1}
			var prep, est, prepCPU, estCPU time.Duration
			for b.Loop() {
				t0, c0 := time.Now(), processCPU()
				f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
				if err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), processCPU()
				cfg.Method = cand.Method
				if _, err := core.Estimate(context.Background(), f, cfg); err != nil {
					b.Fatal(err)
				}
				prep += t1.Sub(t0)
				est += time.Since(t1)
				prepCPU += c1 - c0
				estCPU += processCPU() - c1
			}
			b.ReportMetric(prep.Seconds()/float64(b.N), "prep-s/op")
			b.ReportMetric(est.Seconds()/float64(b.N), "estimate-s/op")
			b.ReportMetric(prepCPU.Seconds()/float64(b.N), "prep-cpu-s/op")
			b.ReportMetric(estCPU.Seconds()/float64(b.N), "estimate-cpu-s/op")
		})
	}
}
