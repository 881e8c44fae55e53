package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// The Vecchia path's studies of docs/vecchia.md's "Many features" and
// "The check before the run" (TestVecchiaStudy runs them; with
// GPC_VECCHIA_QUICK=1 the real study runs --vecchia 30, 100 and auto's
// choice only, not every set size auto tries):
//
//	GPC_VECCHIA_STUDY=real GPC_VECCHIA_DATA=DIR GPC_VECCHIA_CACHE=DIR go test ./bench -run VecchiaStudy -v -timeout 6h
//	GPC_VECCHIA_STUDY=check go test ./bench -run VecchiaStudy -v -timeout 2h
//	GPC_VECCHIA_STUDY=posteriors GPC_VECCHIA_CACHE=DIR go test ./bench -run VecchiaStudy -v -timeout 2h

// realSets are the real data sets of the tables and the kernels fitted
// on them (bench/vecchia/fit.sh; DNA's rbf fit ran off to beta = 10^12,
// the labels separable, and is left out).
var realSets = []struct{ name, kernel string }{
	{"satellite", "rbf"}, {"satellite", "ard"}, {"spam", "rbf"}, {"spam", "ard"}, {"dna", "ard"},
}

// hyperCSV reads gpc-fit's table (--format csv) of an rbf or ard kernel,
// its length scales in the features' order (the scripts' x1, x2, ...).
func hyperCSV(t testing.TB, path string) *gp.Kernel {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	k := &gp.Kernel{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		kind, ok := gp.ParseKernel(f[0])
		if !ok {
			t.Fatalf("%s: kernel %q", path, f[0])
		}
		k.Kind = kind
		switch f[1] {
		case "alpha":
			if k.Kind == gp.KernelARD && f[2] != fmt.Sprintf("x%d", len(k.Alpha)+1) {
				t.Fatalf("%s: length scale of %s where x%d was expected", path, f[2], len(k.Alpha)+1)
			}
			k.Alpha = append(k.Alpha, v)
		case "beta":
			k.Beta = v
		case "bias":
			k.Bias = v
		}
	}
	return k
}

// cachedDense is denseClassifier's run, kept in dir (if not empty) under
// key.
func cachedDense(t testing.TB, p *studyProblem, dir, key string) studyRun {
	var path string
	if dir != "" {
		path = filepath.Join(dir, key+".json")
		if b, err := os.ReadFile(path); err == nil {
			var c struct {
				LogML, SE, CPU float64
				Post, PostSE   []float64
			}
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			return studyRun{logML: c.LogML, se: c.SE, post: c.Post, postSE: c.PostSE, cpu: time.Duration(c.CPU * 1e9)}
		}
	}
	r := denseClassifier(t, p)
	if path != "" {
		b, _ := json.Marshal(map[string]any{"LogML": r.logML, "SE": r.se, "CPU": r.cpu.Seconds(), "Post": r.post, "PostSE": r.postSE})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// selectedModel is the problem's Vecchia classifier with the sets of sel
// on the ordered structure s0 (a Structure of 1 neighbour: the order), as
// gpc-kernel makes it, with the check of its sets and the CPU time of its
// making.
func selectedModel(t testing.TB, p *studyProblem, s0 *vecchia.Structure, sel vecchia.Selection) (*vecchia.Model, vecchia.CheckResult, time.Duration) {
	c0 := processCPU()
	s := s0.Select(p.k, p.x, vecchia.DefaultNugget, sel, 0)
	tn := len(p.ty)
	model, err := vecchia.NewClassifier(s, p.k, p.x, p.y, vecchia.DefaultNugget, p.tx, s.TestSets(p.k, p.x, p.tx, p.metric(p.tx), tn, vecchia.DefaultNugget, sel, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	build := processCPU() - c0
	cr, err := s.Check(p.k, p.x, vecchia.DefaultNugget, vecchia.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return model, cr, build
}

func maxAbsDiff(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s = max(s, math.Abs(a[i]-b[i]))
	}
	return s
}

// selName names a selection in the tables.
func selName(sel vecchia.Selection) string {
	if sel.Block == 0 {
		return fmt.Sprintf("%d nearest", sel.M)
	}
	if sel.Pool > 1 {
		return fmt.Sprintf("auto's, %d of %d", sel.M, sel.M*sel.Pool)
	}
	return fmt.Sprintf("auto's, %d nearest", sel.M)
}

const realHeader = "| sets | check: label loss (se) | 3 sqrt(loss) | estimate - dense | se | posteriors' mean abs diff | max | warnings | CPU s |\n|---|---|---|---|---|---|---|---|---|"

func realRow(name string, cr vecchia.CheckResult, v, dense studyRun) string {
	w := strings.Join(v.warn, ", ")
	if w == "" {
		w = "none"
	}
	return fmt.Sprintf("| %s | %.3g (%.2g) | %.2g | %+.2f | %.3f | %.4f | %.3f | %s | %.1f |", name, cr.Loss, cr.SE, cr.ErrorScale(),
		v.logML-dense.logML, v.se, meanAbsDiff(v.post, dense.post), maxAbsDiff(v.post, dense.post), w, v.cpu.Seconds())
}

func vecchiaReal(t *testing.T) {
	dir := os.Getenv("GPC_VECCHIA_DATA")
	if dir == "" {
		t.Skip("GPC_VECCHIA_DATA names the directory of bench/vecchia/{satellite,dna,spam}.sh's files")
	}
	want := os.Getenv("GPC_VECCHIA_SETS")
	for _, rs := range realSets {
		key := rs.name + "-" + rs.kernel
		if want != "" && !slices.Contains(strings.Split(want, ","), key) {
			continue
		}
		k := hyperCSV(t, filepath.Join("vecchia", "hyper", key+".csv"))
		p := csvProblem(t, key, filepath.Join(dir, rs.name+"-train.csv"), filepath.Join(dir, rs.name+"-test.csv"), k)
		// The cache's key names the data's sizes: a data set written
		// again with another split is not compared with a stale run.
		dense := cachedDense(t, p, os.Getenv("GPC_VECCHIA_CACHE"), fmt.Sprintf("%s-%d-%d", key, p.n, len(p.ty)))
		s0, err := vecchia.NewStructure(p.metric(p.x), p.n, p.d, vecchia.Options{M: 1})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\n%s: N = %d, %d test points, %d features, %d repeats; %v kernel, beta %.4g; dense path: log ML %.3f (se %.3f), %.1f CPU s\n\n",
			key, p.n, len(p.ty), p.d, s0.Duplicates(), k.Kind, k.Beta, dense.logML, dense.se, dense.cpu.Seconds())
		fmt.Println(realHeader)
		var sels []vecchia.Selection
		for _, m := range []int{30, 100} {
			sels = append(sels, vecchia.Selection{M: m, TestM: m})
		}
		quick := os.Getenv("GPC_VECCHIA_QUICK") != ""
		if quick {
			// Only --vecchia 30, 100 and auto's choice.
			_, res, err := s0.Auto(p.k, p.x, vecchia.DefaultNugget, vecchia.AutoOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sels = append(sels, res.Selection)
		} else {
			for _, m := range vecchia.DefaultLadder {
				sels = append(sels, vecchia.AutoSelection(m, 1), vecchia.AutoSelection(m, vecchia.AutoPool))
			}
		}
		done := map[vecchia.Selection]string{}
		for _, sel := range sels {
			if sel.M*max(sel.Pool, 1) >= p.n {
				continue
			}
			model, cr, build := selectedModel(t, p, s0, sel)
			v := vecchiaRun(t, model, 1)
			v.cpu += build
			row := realRow(selName(sel), cr, v, dense)
			done[sel] = row
			fmt.Println(row)
		}
		c0 := processCPU()
		_, res, err := s0.Auto(p.k, p.x, vecchia.DefaultNugget, vecchia.AutoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\n--vecchia auto: %s, met %t (%.1f CPU s to choose); its row: %s\n", selName(res.Selection), res.Met, (processCPU() - c0).Seconds(), done[res.Selection])
	}
}

// exactLabelLoss is the label loss of the structure's sets beside every
// earlier point, summed over all rows: the dense Cholesky factor of the
// distinct points' K + nugget I in the structure's order gives the
// conditional variances given every earlier point.
func exactLabelLoss(t testing.TB, p *studyProblem, s *vecchia.Structure, model *vecchia.Model) float64 {
	var reg []int
	for i := range p.n {
		if model.CondVar[i] > 0 {
			reg = append(reg, i)
		}
	}
	n, d := len(reg), p.d
	row := func(i int) []float64 { r := s.Perm[i]; return p.x[r*d : r*d+d] }
	a := mat.NewSymDense(n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := p.k.Eval(row(reg[i]), row(reg[j]))
			if i == j {
				v += vecchia.DefaultNugget
			}
			a.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		t.Fatal("the covariance is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	loss := 0.0
	for q, i := range reg {
		x0 := row(i)
		dC := l.At(q, q) * l.At(q, q)
		loss += vecchia.LabelLoss(p.k.Eval(x0, x0)+vecchia.DefaultNugget, model.CondVar[i], min(dC, model.CondVar[i]), 1-vecchia.DefaultNugget)
	}
	return loss
}

// vecchiaCheckStudy compares the check with the loss beside every earlier
// point (to N = 10^4; GPC_VECCHIA_EXACT=0 leaves it out) on the two-class
// problem for nearest sets, m = 5 to 100 (the tables' models, whose
// errors the tables give), and auto's sets, N = 1000 to 10^6
// (GPC_VECCHIA_SIZES).
func vecchiaCheckStudy(t *testing.T) {
	sizes := []int{1000, 5000, 10000, 100000, 1000000}
	if s := os.Getenv("GPC_VECCHIA_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, _ := strconv.Atoi(f)
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		p := twoClassProblem(n, 10)
		s0, err := vecchia.NewStructure(p.x, p.n, p.d, vecchia.Options{M: 1})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\n%s\n\n| sets | check: label loss (se) | CPU s | loss beside every earlier point |\n|---|---|---|---|\n", p.name)
		sels := []vecchia.Selection{}
		for _, m := range vecchiaMs {
			sels = append(sels, vecchia.Selection{M: m, TestM: m})
		}
		sels = append(sels, vecchia.AutoSelection(30, 1), vecchia.AutoSelection(30, vecchia.AutoPool))
		for _, sel := range sels {
			if sel.M >= n {
				continue
			}
			s := s0.Select(p.k, p.x, vecchia.DefaultNugget, sel, 0)
			c0 := processCPU()
			cr, err := s.Check(p.k, p.x, vecchia.DefaultNugget, vecchia.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cpu := processCPU() - c0
			exact := ""
			if n <= 10000 && os.Getenv("GPC_VECCHIA_EXACT") != "0" {
				model, err := vecchia.NewClassifier(s, p.k, p.x, p.y, vecchia.DefaultNugget, nil, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				exact = fmt.Sprintf("%.3g", exactLabelLoss(t, p, s, model))
			}
			fmt.Printf("| %s | %.3g (%.2g) | %.2f | %s |\n", selName(sel), cr.Loss, cr.SE, cpu.Seconds(), exact)
		}
	}
}

// vecchiaPosteriors compares the test posteriors of --vecchia 30 and auto
// with the dense path's at N = 10^4 with 10^4 test points: their mean and
// largest absolute differences, and the share of test rows whose
// difference is within 1.96 of its standard error (the Vecchia
// posterior's and the dense one's, in quadrature).
func vecchiaPosteriors(t *testing.T) {
	p := twoClassProblem(10000, 10000)
	dense := cachedDense(t, p, os.Getenv("GPC_VECCHIA_CACHE"), "twoclass-10000-10000")
	fmt.Printf("\n%s, 10^4 test points; dense path: log ML %.3f (se %.3f), %.1f CPU s\n\n", p.name, dense.logML, dense.se, dense.cpu.Seconds())
	fmt.Println("| sets | estimate - dense | se | posteriors' mean abs diff | max | within 1.96 se | largest z | CPU s |\n|---|---|---|---|---|---|---|---|")
	s0, err := vecchia.NewStructure(p.x, p.n, p.d, vecchia.Options{M: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := s0.Auto(p.k, p.x, vecchia.DefaultNugget, vecchia.AutoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []vecchia.Selection{{M: 30, TestM: 30}, {M: 50, TestM: 50}, res.Selection} {
		model, _, build := selectedModel(t, p, s0, sel)
		v := vecchiaRun(t, model, 1)
		v.cpu += build
		within, zmax := 0, 0.0
		for i := range v.post {
			z := math.Abs(v.post[i]-dense.post[i]) / math.Hypot(v.postSE[i], dense.postSE[i])
			zmax = max(zmax, z)
			if z <= 1.96 {
				within++
			}
		}
		name := selName(sel)
		if sel == res.Selection {
			name = "--vecchia auto: " + name
		}
		fmt.Printf("| %s | %+.3f | %.3f | %.4f | %.4f | %.3f | %.1f | %.1f |\n", name, v.logML-dense.logML, v.se, meanAbsDiff(v.post, dense.post), maxAbsDiff(v.post, dense.post), float64(within)/float64(len(v.post)), zmax, v.cpu.Seconds())
	}
}
