package bench

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/gemm"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

// The performance benchmarks of docs/benchmarks.md. Each reports domain
// rates with b.ReportMetric: particle-steps/s (M N per second), GFLOP/s
// (the M N^2 flops of the conditional means, 2 per multiply-add, per
// second of the whole pass) and, for the products alone, the GEMM rates
// they are compared with (BenchmarkGEMM, in the same run).

// smokeFlops is the most work a benchmark does in CI's smoke run
// (-benchtime 1x) or under -short; larger sizes are skipped there.
const smokeFlops = 2e10

// skipLarge skips a benchmark of more than smokeFlops in the smoke run.
func skipLarge(b *testing.B, flops float64) {
	if flops <= smokeFlops {
		return
	}
	if bt := flag.Lookup("test.benchtime"); testing.Short() || bt != nil && bt.Value.String() == "1x" {
		b.Skip("large: skipped in the smoke run (-benchtime 1x) and under -short")
	}
}

// classifier returns the RBF classifier covariance (alpha 3, beta 2) of
// n training patterns of the paper's Experiment 4 data (two Gaussian
// classes in 2-D), ordered and tilted as gpc-train's default (--method
// auto) chooses for m particles, the method, and the test rows of nt test
// patterns.
func classifier(b *testing.B, n, m, nt int) (*core.Factor, core.Method, []float64, []float64) {
	b.Helper()
	p := Exp4Problem{N: n, NTest: nt, D: 2, Shift: 1, Sigma2: sigma0}
	d := p.Generate(1)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{3}, Beta: 2}
	box := core.Box{N: n, Cov: gp.ClassifierCov(k, d.X, p.D, d.Y)}
	f, c, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, core.Config{Samples: m, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	tr, vars := make([]float64, nt*n), make([]float64, nt)
	for j := range nt {
		vars[j] = gp.ClassifierTestRow(tr[j*n:(j+1)*n], k, d.X, p.D, d.Y, d.XTest[j*p.D:j*p.D+p.D])
	}
	return f, c.Method, tr, vars
}

// BenchmarkTrain times a training pass as gpc-train runs it (the method
// and order its pilots choose, default groups, all threads, the particles
// kept for prediction), on RBF classifier covariances; the pilots,
// ordering, factorisation and tilting excluded.
//
//	go test ./bench -run '^$' -bench Train -count 5
func BenchmarkTrain(b *testing.B) {
	for _, n := range []int{200, 500, 1000, 2000} {
		for _, m := range []int{10000, 100000} {
			b.Run(fmt.Sprintf("n=%d/m=%d", n, m), func(b *testing.B) {
				flops := float64(m) * float64(n) * float64(n)
				skipLarge(b, flops)
				f, method, _, _ := classifier(b, n, m, 0)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := core.Estimate(context.Background(), f, core.Config{Method: method, Samples: m, Seed: 1, Keep: true, Alloc: sysmem.Floats}); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(m)*float64(n)/sec, "particle-steps/s")
				b.ReportMetric(flops/sec/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkHeadline times the paper's headline run end to end in the
// library, as gpc-train and gpc-predict run it: N = 200 training and 200
// test patterns of the Experiment 4 data, RBF (alpha 3, beta 2), M = 10^6
// particles; the method's preparation (for auto: both candidates' pilots
// and the EP solve, tilt and factorisations), the training pass keeping the
// cloud, and the posteriors of the 200 test points. method=auto is gpc's
// default (it chooses ep/greedy here); the others are fixed as with
// --method and --order.
//
//	go test ./bench -run '^$' -bench Headline -benchtime 2x -count 3
func BenchmarkHeadline(b *testing.B) {
	const n, nt, m = 200, 200, 1000000
	p := Exp4Problem{N: n, NTest: nt, D: 2, Shift: 1, Sigma2: sigma0}
	d := p.Generate(1)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{3}, Beta: 2}
	box := core.Box{N: n, Cov: gp.ClassifierCov(k, d.X, p.D, d.Y), Labels: d.Y}
	tr, vars := make([]float64, nt*n), make([]float64, nt)
	for j := range nt {
		vars[j] = gp.ClassifierTestRow(tr[j*n:(j+1)*n], k, d.X, p.D, d.Y, d.XTest[j*p.D:j*p.D+p.D])
	}
	for _, c := range []struct {
		name  string
		cands []core.Candidate
	}{
		{"auto", core.AutoCandidates},
		{"ep", []core.Candidate{{Method: core.MethodEP, Order: core.OrderGreedy}}},
		{"met", []core.Candidate{{Method: core.MethodMET, Order: core.OrderSharp}}},
		{"smc", []core.Candidate{{Method: core.MethodSMC, Order: core.OrderSharp}}},
		{"paper-soft", []core.Candidate{{Method: core.MethodPaperSoft, Order: core.OrderShuffle}}},
		{"paper-hard", []core.Candidate{{Method: core.MethodPaperHard, Order: core.OrderShuffle}}},
	} {
		b.Run(fmt.Sprintf("n=%d/m=%d/test=%d/method=%s", n, m, nt, c.name), func(b *testing.B) {
			skipLarge(b, float64(m)*n*n)
			post := make([]core.Posterior, nt)
			for b.Loop() {
				cfg := core.Config{Samples: m, Seed: 1, Keep: true, Alloc: sysmem.Floats}
				var f *core.Factor
				var err error
				if len(c.cands) > 1 {
					var cand core.Candidate
					f, cand, _, err = core.Choose(context.Background(), box, c.cands, 0, cfg)
					cfg.Method = cand.Method
				} else {
					cfg.Method = c.cands[0].Method
					f, err = core.Prepare(box, c.cands[0], cfg.Seed, 0)
				}
				if err != nil {
					b.Fatal(err)
				}
				res, err := core.Estimate(context.Background(), f, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := core.Predict(post, f, res.Cloud, tr, vars); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
		})
	}
}

// BenchmarkPredict times the posteriors of 1000 test points from a cloud of
// m particles (the soft count, all threads).
//
//	go test ./bench -run '^$' -bench Predict -count 5
func BenchmarkPredict(b *testing.B) {
	const nt = 1000
	for _, n := range []int{200, 1000} {
		for _, m := range []int{10000, 100000} {
			b.Run(fmt.Sprintf("n=%d/m=%d/test=%d", n, m, nt), func(b *testing.B) {
				flops := 2 * float64(m) * float64(n) * nt
				skipLarge(b, flops)
				f, method, tr, vars := classifier(b, n, m, nt)
				res, err := core.Estimate(context.Background(), f, core.Config{Method: method, Samples: m, Seed: 1, Keep: true, Alloc: sysmem.Floats})
				if err != nil {
					b.Fatal(err)
				}
				post := make([]core.Posterior, nt)
				b.ReportAllocs()
				for b.Loop() {
					if err := core.Predict(post, f, res.Cloud, tr, vars); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(nt/sec, "test-points/s")
				b.ReportMetric(float64(m)*nt/sec, "particle-evals/s")
				b.ReportMetric(flops/sec/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkPropagation times the training pass's matrix products alone:
// the block products (m x 64 x i0, every 64 variables) and the sub-block
// products (m x 8 x k, every 8 variables inside a block) of core's filter,
// for groups of m particles, one group per thread as Estimate runs them.
// Its GFLOP/s is the propagation kernel's rate, to compare with
// BenchmarkGEMM's in the same run.
//
//	go test ./bench -run '^$' -bench 'Propagation|GEMM' -count 5
func BenchmarkPropagation(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, c := range []struct{ n, m int }{{200, 31250}, {1000, 3125}, {2000, 3125}} {
		b.Run(fmt.Sprintf("n=%d/group=%d", c.n, c.m), func(b *testing.B) {
			n, m := c.n, c.m
			const bs, sb = 64, 8
			r := rand.New(rand.NewPCG(1, 2))
			l := randMatrix(r, n*n)
			type group struct {
				z, part, zb []float64
				ws          gemm.Workspace
			}
			groups := make([]*group, threads)
			for t := range groups {
				groups[t] = &group{z: randMatrix(r, m*n), part: make([]float64, m*bs), zb: randMatrix(r, m*bs)}
			}
			flops := 0.0
			for i0 := bs; i0 < n; i0 += bs {
				flops += 2 * float64(m) * float64(min(bs, n-i0)) * float64(i0)
			}
			for i0 := 0; i0 < n; i0 += bs {
				for k := sb; k < min(bs, n-i0); k += sb {
					flops += 2 * float64(m) * float64(min(sb, n-i0-k)) * float64(k)
				}
			}
			flops *= float64(threads)
			pass := func(g *group) {
				for i0 := 0; i0 < n; i0 += bs {
					i1 := min(i0+bs, n)
					if i0 > 0 {
						g.ws.NT(m, i1-i0, i0, g.z, n, l[i0*n:], n, g.part, bs, false, 1)
					}
					for k := sb; k < i1-i0; k += sb {
						g.ws.NT(m, min(sb, i1-i0-k), k, g.zb, bs, l[(i0+k)*n+i0:], n, g.part[k:], bs, true, 1)
					}
				}
			}
			for b.Loop() {
				var wg sync.WaitGroup
				for _, g := range groups {
					wg.Add(1)
					go func() {
						defer wg.Done()
						pass(g)
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(flops/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGEMM measures the machine's GEMM rates, C = A B' on all
// threads: gpc's kernel on each path this CPU supports (internal/gemm:
// avx512, avx2, generic; with -tags openblas also its openblas path),
// gonum's pure-Go Dgemm, and, built with -tags openblas, OpenBLAS's dgemm
// and sgemm called directly with OpenBLAS's own threads; on a square
// product, on the shape of the filter's block products for N = 2000
// (M = 10^5) and on two of the large-N preparation's block updates (a
// rank-128 update of 4000 x 4000, a block column of the blocked
// Cholesky's trailing update). GFLOP/cpu-s divides by the CPU time of all threads instead
// of the wall time: one core's rate, robust to other processes on the
// machine (OpenBLAS's threads spin while they wait, which counts).
//
//	go test -tags openblas ./bench -run '^$' -bench GEMM -count 5
func BenchmarkGEMM(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	type impl struct {
		name string
		run  func(m, n, k int, a, bm, c []float64)
		// path is gpc's kernel path ("" for the others).
		path string
	}
	var ws gemm.Workspace
	var impls []impl
	for _, p := range gemm.Paths() {
		impls = append(impls, impl{"gpc-" + p, func(m, n, k int, a, bm, c []float64) { ws.NT(m, n, k, a, k, bm, k, c, n, false, threads) }, p})
	}
	impls = append(impls, impl{"gonum", func(m, n, k int, a, bm, c []float64) {
		blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, bm, k, 0, c, n)
	}, ""})
	if openBLAS != nil {
		impls = append(impls, impl{"openblas-dgemm", func(m, n, k int, a, bm, c []float64) { openBLAS.dgemmNT(m, n, k, a, k, bm, k, c, n) }, ""})
		var a32, b32, c32 []float32
		impls = append(impls, impl{"openblas-sgemm", func(m, n, k int, a, bm, c []float64) {
			if len(a32) != len(a) || len(b32) != len(bm) {
				a32, b32, c32 = toFloat32(a), toFloat32(bm), make([]float32, len(c))
			}
			openBLAS.sgemmNT(m, n, k, a32, k, b32, k, c32, n)
		}, ""})
	}
	defer gemm.SetPath(gemm.Path())
	for _, s := range [][3]int{{2048, 2048, 2048}, {3125, 64, 1984}, {4000, 4000, 128}, {4000, 384, 96}} {
		m, n, k := s[0], s[1], s[2]
		r := rand.New(rand.NewPCG(1, 2))
		a, bm, c := randMatrix(r, m*k), randMatrix(r, n*k), make([]float64, m*n)
		for _, im := range impls {
			b.Run(fmt.Sprintf("impl=%s/shape=%dx%dx%d", im.name, m, n, k), func(b *testing.B) {
				if im.path == "generic" {
					skipLarge(b, 20*2*float64(m)*float64(n)*float64(k)) // 20-40 times slower
				}
				if im.path != "" {
					if err := gemm.SetPath(im.path); err != nil {
						b.Fatal(err)
					}
				}
				if openBLAS != nil {
					// gpc's openblas path runs OpenBLAS single-threaded on
					// its own goroutines; called directly it uses its own
					// threads.
					if im.path != "" {
						openBLAS.setThreads(1)
					} else {
						openBLAS.setThreads(threads)
					}
				}
				cpu0 := processCPU()
				for b.Loop() {
					im.run(m, n, k, a, bm, c)
				}
				flops := 2 * float64(m) * float64(n) * float64(k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := processCPU() - cpu0; cpu > 0 {
					// Per second of CPU time (all threads): the rate of
					// one core, robust to other processes on a shared
					// machine.
					b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

func randMatrix(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

func toFloat32(v []float64) []float32 {
	s := make([]float32, len(v))
	for i, x := range v {
		s[i] = float32(x)
	}
	return s
}
