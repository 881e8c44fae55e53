package bench

import (
	"context"
	"math"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// RBFProblem is the hard GP-classification orthant family of the accuracy
// issue: two overlapping 2-D Gaussian classes (the paper's Experiment 4
// densities: N(0, I) and N((1, 1), Sigma_0)), equal priors, shuffled, the
// RBF kernel beta exp(-||x - x'||^2 / alpha^2) with a large latent scale.
type RBFProblem struct {
	N, NTest    int
	Alpha, Beta float64
	Seed        uint64
}

// RBFData is a generated RBFProblem: the training orthant problem and the
// test rows.
type RBFData struct {
	Box     core.Box
	TestCov []float64 // NTest x N
	TestVar []float64
	Data    *Exp4Data
}

// Generate draws the data and builds the covariances.
func (p RBFProblem) Generate() *RBFData {
	e := Exp4Problem{N: p.N, NTest: p.NTest, D: 2, Shift: 1, Sigma2: sigma0}
	d := e.Generate(p.Seed)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{p.Alpha}, Beta: p.Beta}
	out := &RBFData{Data: d, TestCov: make([]float64, p.NTest*p.N), TestVar: make([]float64, p.NTest)}
	out.Box = core.Box{N: p.N, Cov: gp.ClassifierCov(k, d.X, 2, d.Y), Labels: d.Y}
	for j := range p.NTest {
		out.TestVar[j] = gp.ClassifierTestRow(out.TestCov[j*p.N:(j+1)*p.N], k, d.X, 2, d.Y, d.XTest[j*2:j*2+2])
	}
	return out
}

// Spread is the outcome of repeated estimates of one log P.
type Spread struct {
	Mean, SD, MinLogP float64
	MeanSE            float64 // the mean reported standard error
	Seconds           float64 // mean wall time per estimate, preparation included
	Runs              int
	Chosen            map[string]int // the default's choices
}

// LogPSpread estimates log P of box `runs` times with candidate c (nil: the
// default choice among core.AutoCandidates) and M particles, seeds seed0,
// seed0+1, ...
func LogPSpread(ctx context.Context, box core.Box, c *core.Candidate, m, runs int, seed0 uint64) (Spread, error) {
	s := Spread{Chosen: map[string]int{}}
	var xs []float64
	s.MinLogP = math.Inf(1)
	start := time.Now()
	for r := range runs {
		cfg := core.Config{Samples: m, Seed: seed0 + uint64(r)}
		var f *core.Factor
		var err error
		if c == nil {
			var cand core.Candidate
			f, cand, _, err = core.Choose(ctx, box, core.AutoCandidates, 0, cfg)
			cfg.Method = cand.Method
			s.Chosen[cand.String()]++
		} else {
			cfg.Method = c.Method
			f, err = core.Prepare(box, *c, cfg.Seed, 0)
		}
		if err != nil {
			return s, err
		}
		res, err := core.Estimate(ctx, f, cfg)
		if err != nil {
			return s, err
		}
		xs = append(xs, res.LogP)
		s.MinLogP = math.Min(s.MinLogP, res.LogP)
		s.MeanSE += res.SE / float64(runs)
	}
	s.Runs = runs
	s.Seconds = time.Since(start).Seconds() / float64(runs)
	s.Mean, s.SD = meanSD(xs)
	return s, nil
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}
