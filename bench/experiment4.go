package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// Exp4Problem is one of the paper's synthetic Experiment 4 problems (section
// 6.4): two Gaussian classes with equal priors, class 1 (y = +1) N(0, I),
// class 2 N(Shift e_d, Sigma2).
type Exp4Problem struct {
	N, NTest, D int
	Shift       float64
	Sigma2      []float64 // d x d, row-major
}

// sigma0 is the paper's Sigma_0 and sigma10 its banded Sigma_10.
var (
	sigma0  = []float64{1, 0.25, 0.25, 1}
	sigma10 = func() []float64 {
		s := make([]float64, 100)
		for i := range 10 {
			s[i*10+i] = 0.5
			if i > 0 {
				s[i*10+i-1], s[(i-1)*10+i] = 0.2, 0.2
			}
		}
		return s
	}()
)

// Exp4Problems are the paper's synthetic problems 1-6.
var Exp4Problems = []Exp4Problem{
	{50, 50, 2, 1, sigma0},
	{200, 200, 2, 1, sigma0},
	{50, 50, 2, 0.5, sigma0},
	{50, 50, 2, 2, sigma0},
	{50, 50, 10, 1, sigma10},
	{1000, 1000, 2, 1, sigma0},
}

// Exp4Hyper are the paper's six (alpha, beta) settings of the RBF kernel.
var Exp4Hyper = [][2]float64{{5, 1}, {5, 5}, {3, 2}, {0.5, 0.5}, {3, 1}, {0.5, 3}}

// Exp4Data is a generated problem: training and test features (row-major)
// and labels, and the Bayes posterior P(y = +1 | x) of each test pattern.
type Exp4Data struct {
	X, Y, XTest, YTest []float64
	Bayes              []float64
}

// Generate draws the problem's data: half of each class, shuffled.
func (p Exp4Problem) Generate(seed uint64) *Exp4Data {
	r := rand.New(rand.NewPCG(seed, 0x45787034)) // "Exp4"
	mean2 := make([]float64, p.D)
	for i := range mean2 {
		mean2[i] = p.Shift
	}
	eye := make([]float64, p.D*p.D)
	for i := range p.D {
		eye[i*p.D+i] = 1
	}
	c1, _ := distmv.NewNormal(make([]float64, p.D), mat.NewSymDense(p.D, eye), r)
	c2, ok := distmv.NewNormal(mean2, mat.NewSymDense(p.D, p.Sigma2), r)
	if !ok {
		panic("bench: a class covariance is not positive definite")
	}
	draw := func(k int) (x, y []float64) {
		x, y = make([]float64, k*p.D), make([]float64, k)
		for i := range k {
			if i%2 == 0 {
				c1.Rand(x[i*p.D : i*p.D+p.D])
				y[i] = 1
			} else {
				c2.Rand(x[i*p.D : i*p.D+p.D])
				y[i] = -1
			}
		}
		perm := r.Perm(k)
		xs, ys := make([]float64, len(x)), make([]float64, k)
		for i, j := range perm {
			copy(xs[i*p.D:i*p.D+p.D], x[j*p.D:j*p.D+p.D])
			ys[i] = y[j]
		}
		return xs, ys
	}
	d := &Exp4Data{}
	d.X, d.Y = draw(p.N)
	d.XTest, d.YTest = draw(p.NTest)
	d.Bayes = make([]float64, p.NTest)
	for j := range p.NTest {
		x := d.XTest[j*p.D : j*p.D+p.D]
		l1, l2 := c1.LogProb(x), c2.LogProb(x)
		d.Bayes[j] = 1 / (1 + math.Exp(l2-l1))
	}
	return d
}

// Exp4Run is one estimator's posteriors on a problem and setting.
type Exp4Run struct {
	Method    string
	LogML, SE float64
	Post      []core.Posterior
}

// Experiment4Run runs method ("auto" or "method/order") with M particles
// (groups as given, 0: default) on the data with RBF hyperparameters
// (alpha, beta), and predicts the test patterns with the soft count.
func Experiment4Run(ctx context.Context, p Exp4Problem, d *Exp4Data, alpha, beta float64, method string, m, groups int, seed uint64) (*Exp4Run, error) {
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{alpha}, Beta: beta}
	box := core.Box{N: p.N, Cov: gp.ClassifierCov(k, d.X, p.D, d.Y)}
	tr := make([]float64, p.NTest*p.N)
	vars := make([]float64, p.NTest)
	for j := range p.NTest {
		vars[j] = gp.ClassifierTestRow(tr[j*p.N:(j+1)*p.N], k, d.X, p.D, d.Y, d.XTest[j*p.D:j*p.D+p.D])
	}
	cfg := core.Config{Samples: m, Groups: groups, Seed: seed, Keep: true}
	var f *core.Factor
	var err error
	run := &Exp4Run{Method: method}
	if method == "auto" {
		var c core.Candidate
		f, c, _, err = core.Choose(ctx, box, core.AutoCandidates, 0, cfg)
		cfg.Method = c.Method
		run.Method = c.String()
	} else {
		mname, oname, _ := strings.Cut(method, "/")
		var ok bool
		if cfg.Method, ok = core.ParseMethod(mname); !ok {
			return nil, fmt.Errorf("bench: unknown method %q", mname)
		}
		order, ok := core.ParseOrder(oname)
		if !ok {
			order = core.OrderShuffle
		}
		f, err = core.Prepare(box, core.Candidate{Method: cfg.Method, Order: order}, seed, 0)
	}
	if err != nil {
		return nil, err
	}
	res, err := core.Estimate(ctx, f, cfg)
	if err != nil {
		return nil, err
	}
	run.LogML, run.SE = res.LogP, res.SE
	run.Post = make([]core.Posterior, p.NTest)
	if err := core.Predict(run.Post, f, res.Cloud, tr, vars); err != nil {
		return nil, err
	}
	return run, nil
}

// Agreement compares two runs' posteriors: the fraction of test patterns
// within 2 and 3 combined standard errors, the largest |z|, and the mean
// absolute difference.
func Agreement(a, b *Exp4Run) (in2, in3, maxZ, mad float64) {
	for j := range a.Post {
		d := a.Post[j].P - b.Post[j].P
		z := math.Abs(d) / math.Hypot(a.Post[j].SE, b.Post[j].SE)
		if z <= 2 {
			in2++
		}
		if z <= 3 {
			in3++
		}
		maxZ = math.Max(maxZ, z)
		mad += math.Abs(d)
	}
	n := float64(len(a.Post))
	return in2 / n, in3 / n, maxZ, mad / n
}

// MAEPost is the mean absolute error of a run's posteriors against the
// Bayes posterior of the generating densities (the paper's MAE-POST).
func MAEPost(r *Exp4Run, d *Exp4Data) float64 {
	s := 0.0
	for j, q := range r.Post {
		s += math.Abs(q.P - d.Bayes[j])
	}
	return s / float64(len(r.Post))
}
