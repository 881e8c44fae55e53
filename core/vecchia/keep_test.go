package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// classifier2DTests is classifier2D with t test points of the same
// problem.
func classifier2DTests(t *testing.T, n, neighbours, tests int) *Model {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 0x1a26e))
	point := func(x []float64, i int) float64 {
		s := 1.0
		if i%2 == 1 {
			s = -1
		}
		x[0], x[1] = s*0.75+r.NormFloat64(), s*0.75+r.NormFloat64()
		return s
	}
	x, y := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		y[i] = point(x[2*i:], i)
	}
	tf := make([]float64, 2*tests)
	for i := range tests {
		point(tf[2*i:], i)
	}
	s, err := NewStructure(x, n, 2, Options{M: neighbours})
	if err != nil {
		t.Fatal(err)
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	m, err := NewClassifier(s, k, x, y, DefaultNugget, tf, s.TestNeighbours(tf, tests, neighbours, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// keptRun runs the estimate p keeping keep paths (its field KeepPaths,
// at field) and returns each group's outcome and output (its arrays
// copied).
func keptRun(t *testing.T, p core.Estimator, field *int, cfg core.Config, keep int) ([]core.GroupResult, []core.CloudGroup) {
	t.Helper()
	*field = keep
	defer func() { *field = 0 }()
	var grps []core.CloudGroup
	cfg.Sink = func(_ int, _ core.GroupResult, grp *core.CloudGroup) error {
		grps = append(grps, core.CloudGroup{LogZ: grp.LogZ, Post: slices.Clone(grp.Post), Paths: slices.Clone(grp.Paths), PathW: slices.Clone(grp.PathW)})
		return nil
	}
	_, outs, err := core.EstimateGroups(context.Background(), p, cfg, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	return outs, grps
}

// TestKeepPaths checks the kept paths: keeping them does not move the
// estimate; a group that keeps all its particles predicts from them
// exactly the test posteriors it computed at its end; a group that keeps
// fewer resamples them, equally weighted, and predicts within the
// resampling's error (at most 0.5/sqrt(K) for a probability); and the
// kept paths do not depend on the thread count.
func TestKeepPaths(t *testing.T) {
	m := classifier2DTests(t, 300, 10, 30)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Samples: 2000, Groups: 4, Seed: 3, Threads: 1}
	base, none := keptRun(t, p, &p.KeepPaths, cfg, 0)
	all, full := keptRun(t, p, &p.KeepPaths, cfg, cfg.Samples)
	for g := range base {
		if base[g] != all[g] {
			t.Fatalf("group %d: keeping paths moved the outcome: %+v, kept %+v", g, base[g], all[g])
		}
		if none[g].Paths != nil {
			t.Errorf("group %d kept %d paths when asked for none", g, len(full[g].PathW))
		}
		if !slices.Equal(none[g].Post, full[g].Post) {
			t.Errorf("group %d: keeping paths moved its test posteriors", g)
		}
		pg := make([]float64, m.T)
		PredictPaths(pg, m, full[g].Paths, full[g].PathW, 3)
		for j := range pg {
			if math.Float64bits(pg[j]) != math.Float64bits(full[g].Post[j]) {
				t.Errorf("group %d, test row %d: %v from all the kept paths, %v at the group's end", g, j, pg[j], full[g].Post[j])
			}
		}
	}
	const keep = 200 // 50 per group of 500
	_, kept := keptRun(t, p, &p.KeepPaths, cfg, keep)
	cfg.Threads = 3
	_, kept3 := keptRun(t, p, &p.KeepPaths, cfg, keep)
	tol := 5 * 0.5 / math.Sqrt(keep/4)
	for g, grp := range kept {
		if len(grp.PathW) != keep/4 || len(grp.Paths) != m.N*keep/4 {
			t.Fatalf("group %d kept %d weights and %d values, asked for %d paths of %d", g, len(grp.PathW), len(grp.Paths), keep/4, m.N)
		}
		if !slices.Equal(grp.Paths, kept3[g].Paths) || !slices.Equal(grp.PathW, kept3[g].PathW) {
			t.Errorf("group %d: the kept paths differ between 1 and 3 threads", g)
		}
		for _, w := range grp.PathW {
			if w != 1/float64(keep/4) {
				t.Fatalf("group %d: resampled path weight %v", g, w)
			}
		}
		pg := make([]float64, m.T)
		PredictPaths(pg, m, grp.Paths, grp.PathW, 0)
		for j := range pg {
			if d := math.Abs(pg[j] - grp.Post[j]); d > tol {
				t.Errorf("group %d, test row %d: %v from %d resampled paths, %v at the group's end: %v apart, more than %v", g, j, pg[j], keep/4, grp.Post[j], d, tol)
			}
		}
	}
}

// TestSystematicK checks the resampling: each index is drawn floor or
// ceil of K w times, in order.
func TestSystematicK(t *testing.T) {
	w := []float64{0.5, 0, 0.125, 0.375}
	idx := make([]int, 8)
	systematicK(idx, w, 0.5)
	if want := []int{0, 0, 0, 0, 2, 3, 3, 3}; !slices.Equal(idx, want) {
		t.Errorf("systematicK: %v, want %v", idx, want)
	}
}

// TestClassesKeepPaths checks the multi-class kept paths as TestKeepPaths
// checks the two-class ones: keeping them moves neither the estimate nor
// the test posteriors; a group that keeps every particle predicts from
// them what it computed at its end, to the float32 rounding of the paths (1e-6)
// with three classes (exact class probabilities) and within the class
// draws' error with four; fewer kept predict within the resampling's
// error; and neither the paths nor the later posteriors depend on the
// thread count.
func TestClassesKeepPaths(t *testing.T) {
	for _, c := range []int{3, 4} {
		md := classModel(t, 43, c, 200, 12, 8, 0, []*gp.Kernel{rbf(1.5, 4)})
		p, err := PrepareMulticlass(context.Background(), md, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := c - 1
		cfg := core.Config{Samples: 1200, Groups: 4, Seed: 5, Threads: 1}
		base, none := keptRun(t, p, &p.KeepPaths, cfg, 0)
		all, full := keptRun(t, p, &p.KeepPaths, cfg, cfg.Samples)
		for g := range base {
			// Four classes: the group's end and the later prediction each
			// average independent draws, a particle's class probability
			// within 0.5/sqrt(classDraws) in sd, over the final weights.
			tol := 1e-6
			if c > 3 {
				s2 := 0.0
				for _, w := range full[g].PathW {
					s2 += w * w
				}
				tol += 5 * math.Sqrt(2*s2) * 0.5 / math.Sqrt(classDraws)
			}
			if base[g] != all[g] {
				t.Fatalf("%d classes, group %d: keeping paths moved the outcome: %+v, kept %+v", c, g, base[g], all[g])
			}
			if none[g].Paths != nil {
				t.Errorf("%d classes, group %d kept paths when asked for none", c, g)
			}
			if !slices.Equal(none[g].Post, full[g].Post) {
				t.Errorf("%d classes, group %d: keeping paths moved its test posteriors", c, g)
			}
			if len(full[g].Paths) != md.N*l*len(full[g].PathW) {
				t.Fatalf("%d classes, group %d: %d values for %d paths of %d coordinates", c, g, len(full[g].Paths), len(full[g].PathW), md.N*l)
			}
			pg, pg3 := make([]float64, md.T*c), make([]float64, md.T*c)
			md.PredictPaths(pg, full[g].Paths, full[g].PathW, 7, 1)
			md.PredictPaths(pg3, full[g].Paths, full[g].PathW, 7, 3)
			if !slices.Equal(pg, pg3) {
				t.Errorf("%d classes, group %d: the later posteriors differ between 1 and 3 threads", c, g)
			}
			for j := range pg {
				if d := math.Abs(pg[j] - full[g].Post[j]); d > tol {
					t.Errorf("%d classes, group %d, row %d: %v from all the kept paths, %v at the group's end: %v apart, more than %v", c, g, j, pg[j], full[g].Post[j], d, tol)
				}
			}
		}
		const keep = 200 // 50 per group of 300
		_, kept := keptRun(t, p, &p.KeepPaths, cfg, keep)
		cfg.Threads = 3
		_, kept3 := keptRun(t, p, &p.KeepPaths, cfg, keep)
		tol := 5 * 0.5 / math.Sqrt(keep/4)
		if c > 3 {
			tol += 5 * 0.5 / math.Sqrt(classDraws*keep/4)
		}
		for g, grp := range kept {
			if len(grp.PathW) != keep/4 || len(grp.Paths) != md.N*l*keep/4 {
				t.Fatalf("%d classes, group %d kept %d weights and %d values, asked for %d paths of %d", c, g, len(grp.PathW), len(grp.Paths), keep/4, md.N*l)
			}
			if !slices.Equal(grp.Paths, kept3[g].Paths) || !slices.Equal(grp.PathW, kept3[g].PathW) {
				t.Errorf("%d classes, group %d: the kept paths differ between 1 and 3 threads", c, g)
			}
			pg := make([]float64, md.T*c)
			md.PredictPaths(pg, grp.Paths, grp.PathW, 7, 0)
			for j := range pg {
				if d := math.Abs(pg[j] - grp.Post[j]); d > tol {
					t.Errorf("%d classes, group %d, row %d: %v from %d resampled paths, %v at the group's end: %v apart, more than %v", c, g, j, pg[j], keep/4, grp.Post[j], d, tol)
				}
			}
		}
	}
}
