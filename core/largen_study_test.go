package core

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

// TestLargeNSEStudy measures what sets the standard error of log P on the
// large-N issue's problem (N 2-D points, RBF, alpha 1, beta 10: gpc-kernel's
// covariance R = C (I + K) C, ClassifierCov), the x1,x2,y rows of the file
// GPC_SE_STUDY. It runs EP's sweeps one at a time and, after each number
// of sweeps in GPC_SE_SWEEPS (default 3, where EPLargeTol stops on the
// issue's draw), factorises EP's Gaussian in each order of GPC_SE_ORDER
// (default greedy) and estimates log P as gpc-orthant's main run does
// (MethodEP, its seed) for each seed of GPC_SE_SEEDS (default 1-5), group
// count of GPC_SE_GROUPS and resampling threshold of GPC_SE_ESS (lists; 0:
// the default), at GPC_SE_SAMPLES particles (default 10^4). It logs each
// estimate and, per setting, the median, largest and root mean square
// standard error, the standard deviation of the seeds' estimates and the
// CPU seconds per estimate; every estimate must lie within studyK of its
// standard errors of the seeds' mean. docs/benchmarks.md (Large N, the
// standard error at N = 5000) has what it measured:
//
//	GPC_SE_STUDY=scratch/two5000.csv GPC_SE_SWEEPS=3,4,5 go test ./core -run LargeNSEStudy -v -timeout 2h
func TestLargeNSEStudy(t *testing.T) {
	path := os.Getenv("GPC_SE_STUDY")
	if path == "" {
		t.Skip("GPC_SE_STUDY is not set")
	}
	box := studyBox(t, path, 1, 10)
	ints := func(key, def string) []int {
		s := os.Getenv(key)
		if s == "" {
			s = def
		}
		var v []int
		for _, f := range strings.Split(s, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			v = append(v, k)
		}
		return v
	}
	sweeps := ints("GPC_SE_SWEEPS", "3")
	seeds := ints("GPC_SE_SEEDS", "1,2,3,4,5")
	samples := ints("GPC_SE_SAMPLES", "10000")[0]
	groups := ints("GPC_SE_GROUPS", "0")
	var esss []float64
	for _, f := range strings.Split(cmp.Or(os.Getenv("GPC_SE_ESS"), "0"), ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		esss = append(esss, v)
	}
	n := box.N
	t0 := time.Now()
	e := studyEP(t, box)
	t.Logf("N = %d: R factorised in %v", n, time.Since(t0))
	done := 0
	for _, k := range sweeps {
		for done < k {
			t1, c1 := time.Now(), cpuSeconds()
			if err := e.sweep(); err != nil {
				t.Fatal(err)
			}
			done++
			t.Logf("sweep %d: change %.3g (%v, %.2f CPU-s)", done, e.Stats.Change, time.Since(t1), cpuSeconds()-c1)
		}
		e.Stats.Sweeps = done
		e.M = symLowerMulVec(e.M, e.Sigma, n, e.Nu)
		e.LogZ = math.NaN()
		for _, on := range strings.Split(cmp.Or(os.Getenv("GPC_SE_ORDER"), "greedy"), ",") {
			t1 := time.Now()
			f, err := studyFactor(e, on, box.Labels)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("sweeps %d: factor %s in %v", k, on, time.Since(t1))
			for _, gg := range groups {
				for _, ess := range esss {
					g := gg
					var est, ses []float64
					c2 := cpuSeconds()
					pool, npool := 0.0, 0 // the groups' relative variance, pooled over the seeds
					for _, s := range seeds {
						t2 := time.Now()
						cfg := Config{Method: MethodEP, Samples: samples, Seed: uint64(s), Groups: g, ESSThreshold: ess}
						res, err := Estimate(context.Background(), f, cfg)
						if err != nil {
							t.Fatal(err)
						}
						est, ses = append(est, res.LogP), append(ses, res.SE)
						for _, lg := range res.GroupLogP {
							d := math.Exp(lg-res.LogP) - 1
							pool += d * d / float64(res.Groups-1)
							npool++
						}
						t.Logf("sweeps %d groups %d ess %v seed %d: log P %.4f SE %.4f (min ESS %.3g, resamples %d, eff groups %.1f) %v",
							k, res.Groups, ess, s, res.LogP, res.SE, res.MinESS, res.Resamples, res.EffectiveGroups, time.Since(t2))
					}
					mean, sd := stat.MeanStdDev(est, nil)
					ss := slices.Clone(ses)
					slices.Sort(ss)
					rms := 0.0
					for _, v := range ses {
						rms += v * v / float64(len(ses))
					}
					// The standard error that 32 groups of this size would give
					// (the mean of 32 relative variances over 32), without
					// StudentScale.
					pred := math.Sqrt(pool / float64(npool) * float64(npool/len(seeds)) / 32)
					// Every estimate is of the same P: each must lie within
					// studyK of its own standard errors of the seeds' mean.
					for j, v := range est {
						if math.Abs(v-mean) > studyK*ses[j] {
							t.Errorf("seed %d: log P %v is %.2g of its SE %v from the seeds' mean %v", seeds[j], v, math.Abs(v-mean)/ses[j], ses[j], mean)
						}
					}
					t.Logf("SUMMARY order %s sweeps %d groups %d ess %v samples %d: median SE %.4f max SE %.4f rms SE %.4f sd of estimates %.4f mean %.4f; SE of 32 such groups %.4f (%.1f CPU-s per estimate)",
						on, k, g, ess, samples, ss[len(ss)/2], ss[len(ss)-1], math.Sqrt(rms), sd, mean, pred, (cpuSeconds()-c2)/float64(len(seeds)))
				}
			}
		}
	}
}

// studyFactor factors e's Gaussian in the order called name: an
// OrderKind's name, reverse-greedy (OrderGreedy's order reversed) or
// tau-ascending (the sites' precisions ascending, ties by index).
func studyFactor(e *EP, name string, labels []float64) (*Factor, error) {
	switch name {
	case "reverse-greedy":
		g, err := e.factor(Ordering{Kind: OrderGreedy}, false)
		if err != nil {
			return nil, err
		}
		perm := slices.Clone(g.Perm)
		slices.Reverse(perm)
		return e.factor(Ordering{Kind: OrderGiven, Perm: perm}, false)
	case "tau-ascending":
		perm := make([]int, e.N)
		for i := range perm {
			perm[i] = i
		}
		slices.SortStableFunc(perm, func(a, b int) int { return cmp.Compare(e.Tau[a], e.Tau[b]) })
		return e.factor(Ordering{Kind: OrderGiven, Perm: perm}, false)
	}
	k := slices.Index(orderNames[:], name)
	if k < 0 {
		return nil, fmt.Errorf("core: no order %q", name)
	}
	return e.factor(Ordering{Kind: OrderKind(k), Labels: labels, Seed: 1}, false)
}

// studyEP returns a lazy EP on box with no sweep run yet, one sweep per
// call of sweep (the studies run them one at a time).
func studyEP(t *testing.T, box Box) *EP {
	n := box.N
	rf, err := NewFactor(box, Ordering{Kind: OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cov, _ := symmetrize(box.Cov, n, 0)
	a, b, _ := shiftedBounds(box)
	return &EP{N: n, Tau: make([]float64, n), Nu: make([]float64, n), M: make([]float64, n),
		Sigma: cov, a: a, b: b, rchol: rf, tol: 0, maxSweeps: 1, lazy: true}
}

// studyK is how many of its own standard errors an estimate of the study
// may be from the seeds' mean (as the package's Monte Carlo tests allow).
const studyK = 4

// studyBox reads x1,x2,y rows and returns gpc-kernel's classifier box for
// the RBF kernel with the paper's alpha and beta (gp.ClassifierCov).
func studyBox(t *testing.T, path string, alpha, beta float64) Box {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows = rows[1:]
	n := len(rows)
	x := make([]float64, 2*n)
	y := make([]float64, n)
	for i, r := range rows {
		for j := range 3 {
			v, err := strconv.ParseFloat(r[j], 64)
			if err != nil {
				t.Fatal(err)
			}
			if j < 2 {
				x[2*i+j] = v
			} else {
				y[i] = v
			}
		}
	}
	cov := make([]float64, n*n)
	for i := range n {
		for j := range i + 1 {
			s := 0.0
			for d := range 2 {
				dd := x[2*i+d] - x[2*j+d]
				s += dd * dd
			}
			v := y[i] * y[j] * (beta*math.Exp(-s/(alpha*alpha)) + 0)
			cov[i*n+j], cov[j*n+i] = v, v
		}
		cov[i*n+i]++
	}
	return Box{N: n, Cov: cov, Labels: y}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
