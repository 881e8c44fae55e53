package bench

import (
	"context"
	"image/color"
	"math"
	"os"
	"testing"

	"gonum.org/v1/plot/vg/draw"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
)

// studyCost sizes a tuning study: the fine grid (fineK x fineK points
// at fineM particles), the exploit stage's and the optimizer's particles,
// how many more seeds the optimizer runs with, and the particle counts of
// the local grid around the optimum.
type studyCost struct {
	fineK, fineM, exploitM, seeds int
	localM                        []int
}

// studyGate skips the tuning studies unless GPC_TUNE_STUDY names the one
// to run (or "all"): they take minutes each on 2 cores.
func studyGate(t *testing.T, name string) {
	if testing.Short() {
		t.Skip("tuning study: skipped under -short")
	}
	if v := os.Getenv("GPC_TUNE_STUDY"); v != name && v != "all" {
		t.Skip("tuning study: set GPC_TUNE_STUDY=" + name + " (or all) to run it")
	}
}

// tuneStudy runs gpc-tune's stages on a classifier over (alpha, beta) and
// checks them against a fine, high-M grid: the optimum must agree with
// the fine grid's maximum within the fine grid's spacing. It logs the
// figures of docs/tuning.md and, if plot is not empty, draws the fine
// surface with the optimum to that PNG.
func tuneStudy(t *testing.T, name string, data *gp.Classifier, aLo, aHi, bLo, bHi float64, sc studyCost, plot string) {
	ctx := context.Background()
	params := []gp.Hyper{{Kind: gp.HyperAlpha}, {Kind: gp.HyperBeta}}
	const coarseK = 8
	fineK := sc.fineK
	xs, ys := LogSpace(aLo, aHi, coarseK), LogSpace(bLo, bHi, coarseK)
	ref := []float64{xs[(coarseK-1)/2], ys[(coarseK-1)/2]}
	s, _, order, err := fit.NewSurface(ctx, data, gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 1}, params, ref, core.AutoCandidates, 0, core.Config{Samples: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: method %v, order %v chosen at alpha=%.3g beta=%.3g", name, s.Method, order, math.Exp(ref[0]), math.Exp(ref[1]))
	// Explore.
	coarse, err := EvalSurface2(ctx, s, xs, ys, 2000, 1)
	if err != nil {
		t.Fatal(err)
	}
	mx, my, fx, fy := coarse.CRNRatios()
	t.Logf("%s: coarse grid %dx%d (spacing %.2f, %.2f in log) at M=2000: SE/SE_diff median %.2f (alpha), %.2f (beta); >= 5 at %.0f%%, %.0f%% of neighbours",
		name, coarseK, coarseK, xs[1]-xs[0], ys[1]-ys[0], mx, my, 100*fx, 100*fy)
	// Exploit the best three, then optimize.
	type pt struct{ i, j int }
	var best []pt
	for range 3 {
		bi, bj, bv := -1, -1, math.Inf(-1)
		for i := range xs {
			for j := range ys {
				taken := false
				for _, b := range best {
					taken = taken || b == pt{i, j}
				}
				if !taken && coarse.LogML[i][j] > bv {
					bi, bj, bv = i, j, coarse.LogML[i][j]
				}
			}
		}
		best = append(best, pt{bi, bj})
	}
	start, startV := []float64{xs[best[0].i], ys[best[0].j]}, math.Inf(-1)
	for _, b := range best {
		r, _, err := s.Eval(ctx, []float64{xs[b.i], ys[b.j]}, sc.exploitM, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: exploit alpha=%.4g beta=%.4g: %.4f ± %.4f", name, math.Exp(xs[b.i]), math.Exp(ys[b.j]), r.LogP, r.SE)
		if r.LogP > startV {
			start, startV = []float64{xs[b.i], ys[b.j]}, r.LogP
		}
	}
	ocfg := fit.OptimizeConfig{Samples: sc.exploitM, Seed: 1, Step: []float64{xs[1] - xs[0], ys[1] - ys[0]},
		Lower: []float64{xs[0], ys[0]}, Upper: []float64{xs[coarseK-1], ys[coarseK-1]}}
	opt, err := s.Maximize(ctx, start, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: optimum alpha=%.4g beta=%.4g log ML %.4f ± %.4f; Monte Carlo SE of log alpha %.3g, log beta %.3g; width %.3g, %.3g; %d estimates",
		name, math.Exp(opt.Theta[0]), math.Exp(opt.Theta[1]), opt.Result.LogP, opt.Result.SE, opt.MCSE[0], opt.MCSE[1], opt.Width[0], opt.Width[1], opt.Evals)
	// Independent seeds: the spread of the optimum.
	var ta, tb []float64
	for seed := uint64(2); seed <= uint64(1+sc.seeds); seed++ {
		oc := ocfg
		oc.Seed = seed
		o, err := s.Maximize(ctx, start, oc)
		if err != nil {
			t.Fatal(err)
		}
		ta, tb = append(ta, o.Theta[0]), append(tb, o.Theta[1])
	}
	if sc.seeds > 0 {
		_, sa := meanSD(append(ta, opt.Theta[0]))
		_, sb := meanSD(append(tb, opt.Theta[1]))
		t.Logf("%s: over %d seeds the optimum's log alpha has sd %.3g, log beta %.3g (the fit's Monte Carlo SE: %.3g, %.3g)", name, sc.seeds+1, sa, sb, opt.MCSE[0], opt.MCSE[1])
	}

	// The fine, high-M grid.
	fxs, fys := LogSpace(aLo, aHi, fineK), LogSpace(bLo, bHi, fineK)
	fine, err := EvalSurface2(ctx, s, fxs, fys, sc.fineM, 11)
	if err != nil {
		t.Fatal(err)
	}
	fi, fj := fine.Argmax()
	da, db := fxs[1]-fxs[0], fys[1]-fys[0]
	t.Logf("%s: fine grid %dx%d at M=%d (spacing %.3f, %.3f in log): maximum %.4f ± %.4f at alpha=%.4g beta=%.4g; the optimum is %.2f, %.2f spacings away",
		name, fineK, fineK, sc.fineM, da, db, fine.LogML[fi][fj], fine.SE[fi][fj], math.Exp(fxs[fi]), math.Exp(fys[fj]),
		math.Abs(opt.Theta[0]-fxs[fi])/da, math.Abs(opt.Theta[1]-fys[fj])/db)
	if math.Abs(opt.Theta[0]-fxs[fi]) > da || math.Abs(opt.Theta[1]-fys[fj]) > db {
		t.Errorf("%s: the optimum is more than one fine-grid spacing from the fine grid's maximum", name)
	}
	mx, my, fx, fy = fine.CRNRatios()
	t.Logf("%s: fine grid: SE/SE_diff median %.2f (alpha), %.2f (beta); >= 5 at %.0f%%, %.0f%% of neighbours", name, mx, my, 100*fx, 100*fy)
	// A local grid at spacing 0.1 around the optimum.
	lxs, lys := make([]float64, 7), make([]float64, 7)
	for i := range lxs {
		lxs[i], lys[i] = opt.Theta[0]+0.1*float64(i-3), opt.Theta[1]+0.1*float64(i-3)
	}
	for _, m := range sc.localM {
		loc, err := EvalSurface2(ctx, s, lxs, lys, m, 1)
		if err != nil {
			t.Fatal(err)
		}
		mx, my, fx, fy = loc.CRNRatios()
		t.Logf("%s: local 7x7 grid at spacing 0.1 around the optimum, M=%d: SE/SE_diff median %.2f (alpha), %.2f (beta); >= 5 at %.0f%%, %.0f%% of neighbours", name, m, mx, my, 100*fx, 100*fy)
	}
	if plot != "" {
		marks := []Mark{
			{Label: "optimum (gpc-tune)", X: opt.Theta[0], Y: opt.Theta[1], Shape: draw.CrossGlyph{}, Color: color.Black},
			{Label: "fine grid maximum", X: fxs[fi], Y: fys[fj], Shape: draw.CircleGlyph{}, Color: color.RGBA{R: 200, A: 255}},
		}
		if err := PlotSurface(plot, name+": log marginal likelihood (contours every nat)", "log10 alpha", "log10 beta", fine, 1, 15, marks); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTuneCrabs is the crabs study of docs/tuning.md:
//
//	GPC_TUNE_STUDY=crabs GPC_TUNE_PLOT=../docs/tune-crabs.png go test ./bench -run TuneCrabs -v -timeout 60m
func TestTuneCrabs(t *testing.T) {
	studyGate(t, "crabs")
	data, _, err := LoadClassifier("../examples/crabs/train.csv", true)
	if err != nil {
		t.Fatal(err)
	}
	tuneStudy(t, "crabs", data, 1, 128, 1, 1e7, studyCost{fineK: 21, fineM: 20000, exploitM: 20000, seeds: 4, localM: []int{2000, 20000}}, os.Getenv("GPC_TUNE_PLOT"))
}

// TestTuneExperiment4 is the study of the paper's Experiment 4 synthetic
// problem 2 (N = 200, d = 2) in docs/tuning.md:
//
//	GPC_TUNE_STUDY=exp4 GPC_TUNE_PLOT=../docs/tune-exp4.png go test ./bench -run TuneExperiment4 -v -timeout 60m
func TestTuneExperiment4(t *testing.T) {
	studyGate(t, "exp4")
	p := Exp4Problems[1]
	d := p.Generate(1)
	data := &gp.Classifier{X: d.X, D: p.D, Y: d.Y}
	tuneStudy(t, "Experiment 4, problem 2", data, 0.1, 30, 0.1, 1000, studyCost{fineK: 17, fineM: 5000, exploitM: 5000, seeds: 0, localM: []int{2000}}, os.Getenv("GPC_TUNE_PLOT"))
}

// TestMCMCCrabs runs two independent pseudo-marginal chains on crabs (prior
// log-normal, median 1, sd 3 in log; M = 500 in 8 groups, one renewed per
// iteration) from different starts and compares their posteriors of log
// alpha and log beta: the means must agree within 4 combined batch-means
// standard errors and the standard deviations within 30 %.
//
//	GPC_TUNE_STUDY=mcmc go test ./bench -run MCMCCrabs -v -timeout 60m
func TestMCMCCrabs(t *testing.T) {
	studyGate(t, "mcmc")
	data, _, err := LoadClassifier("../examples/crabs/train.csv", true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	params := []gp.Hyper{{Kind: gp.HyperAlpha}, {Kind: gp.HyperBeta}}
	start := []float64{math.Log(4), math.Log(10)}
	s, _, _, err := fit.NewSurface(ctx, data, gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{4}, Beta: 10}, params, start, core.AutoCandidates, 0, core.Config{Samples: 500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	prior := fit.LogNormalPrior{Mu: []float64{0, 0}, SD: []float64{3, 3}}
	type chain struct{ mean, mcse, sd [2]float64 }
	var chains []chain
	for c, st := range [][]float64{start, {math.Log(40), math.Log(1e5)}} {
		var xs [2][]float64
		stats, err := s.PseudoMarginal(ctx, st, prior, fit.MCMCConfig{Iterations: 3000, Burn: 1000, Samples: 500, Groups: 8, Refresh: 1, Seed: uint64(c + 1),
			Visit: func(m *fit.MCMCState) error {
				xs[0] = append(xs[0], m.Theta[0])
				xs[1] = append(xs[1], m.Theta[1])
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		var ch chain
		for j := range 2 {
			ch.mean[j], ch.sd[j] = meanSD(xs[j])
			ch.mcse[j] = batchMeansSE(xs[j], 20)
		}
		chains = append(chains, ch)
		t.Logf("chain %d from alpha=%.3g beta=%.3g: log alpha %.3f ± %.3f (sd %.3f), log beta %.3f ± %.3f (sd %.3f); acceptance %.3f, var log ML %.3g, var of the log-ratio noise %.3g, proposal step %.3g",
			c+1, math.Exp(st[0]), math.Exp(st[1]), ch.mean[0], ch.mcse[0], ch.sd[0], ch.mean[1], ch.mcse[1], ch.sd[1], stats.AcceptanceRate(), stats.VarLogML, stats.VarLogRatio, stats.Step)
	}
	a, b := chains[0], chains[1]
	for j, name := range []string{"log alpha", "log beta"} {
		z := math.Abs(a.mean[j]-b.mean[j]) / math.Hypot(a.mcse[j], b.mcse[j])
		r := a.sd[j] / b.sd[j]
		t.Logf("%s: means differ by %.2f combined SE, sd ratio %.2f", name, z, r)
		if z > 4 || math.Abs(r-1) > 0.3 {
			t.Errorf("%s: the chains disagree", name)
		}
	}
}

// batchMeansSE is the batch-means standard error of the mean of x.
func batchMeansSE(x []float64, nb int) float64 {
	bs := len(x) / nb
	var bm []float64
	for b := range nb {
		m := 0.0
		for _, v := range x[b*bs : (b+1)*bs] {
			m += v / float64(bs)
		}
		bm = append(bm, m)
	}
	_, sd := meanSD(bm)
	return sd / math.Sqrt(float64(nb))
}

// TestTuneCRNSpacing measures what common random numbers buy as a function
// of the grid's spacing d (in log units, along each axis), on crabs and on
// Experiment 4 problem 2 at M = 2000 (gpc-tune's --samples): at every point
// of a 5 x 5 grid spanning the region of the maximum, the ratio
// min(SE_a, SE_b) / SE_diff of each of the two values' standard errors to
// that of their difference with the neighbour at distance d, both axes. It
// logs the median and the minimum per d, and fails if at d = 0.05 the
// minimum is below 5.
//
//	GPC_TUNE_STUDY=crn go test ./bench -run TuneCRNSpacing -v -timeout 60m
func TestTuneCRNSpacing(t *testing.T) {
	studyGate(t, "crn")
	crabs, _, err := LoadClassifier("../examples/crabs/train.csv", true)
	if err != nil {
		t.Fatal(err)
	}
	p := Exp4Problems[1]
	d := p.Generate(1)
	exp4 := &gp.Classifier{X: d.X, D: p.D, Y: d.Y}
	ctx := context.Background()
	params := []gp.Hyper{{Kind: gp.HyperAlpha}, {Kind: gp.HyperBeta}}
	for _, c := range []struct {
		name           string
		data           *gp.Classifier
		aLo, aHi       float64 // the coarse grid's range, as in the tuning study
		bLo, bHi       float64
		a0, a1, b0, b1 float64 // the region of the maximum
	}{
		{"crabs", crabs, 1, 128, 1, 1e7, 8, 128, 1e3, 1e7},
		{"Experiment 4, problem 2", exp4, 0.1, 30, 0.1, 1000, 1, 25, 0.5, 50},
	} {
		xs, ys := LogSpace(c.aLo, c.aHi, 8), LogSpace(c.bLo, c.bHi, 8)
		s, _, _, err := fit.NewSurface(ctx, c.data, gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 1}, params,
			[]float64{xs[3], ys[3]}, core.AutoCandidates, 0, core.Config{Samples: 2000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		const m = 2000
		spacings := []float64{0.025, 0.05, 0.1, 0.2, 0.4, 0.8}
		ratios := make([][]float64, len(spacings))
		for _, a := range LogSpace(c.a0, c.a1, 5) {
			for _, b := range LogSpace(c.b0, c.b1, 5) {
				r0, _, err := s.Eval(ctx, []float64{a, b}, m, 1, false)
				if err != nil {
					t.Fatal(err)
				}
				for k, sp := range spacings {
					for _, th := range [][]float64{{a + sp, b}, {a, b + sp}} {
						r1, _, err := s.Eval(ctx, th, m, 1, false)
						if err != nil {
							t.Fatal(err)
						}
						ratios[k] = append(ratios[k], math.Min(r0.SE, r1.SE)/fit.DiffSE(&r0, &r1))
					}
				}
			}
		}
		for k, sp := range spacings {
			v := append([]float64(nil), ratios[k]...)
			sortFloats(v)
			t.Logf("%s (%v): spacing %.3f in log (x%.3f): min(SE_a, SE_b)/SE_diff median %.1f, min %.1f over %d neighbour pairs",
				c.name, s.Method, sp, math.Exp(sp), v[len(v)/2], v[0], len(v))
			if sp == 0.05 && v[0] < 5 {
				t.Errorf("%s: at spacing 0.05 the ratio falls to %.2f", c.name, v[0])
			}
		}
	}
}
