package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// Exp2Problem is one of the paper's Experiment 2 problems: one feature, two
// Gaussian classes (class 1 is y = +1), equal priors, the linear kernel.
type Exp2Problem struct {
	N, NTest                 int
	Mu1, Mu2, Sigma1, Sigma2 float64
}

// Exp2Problems are the paper's problems 1-4 (section 6.2).
var Exp2Problems = []Exp2Problem{
	{100, 50, 0, 1, 0.2, 0.3},
	{200, 100, 0, 1, 2, 1},
	{400, 200, 0, 1.5, 0.5, 0.75},
	{800, 400, 0, 1, 1, 0.75},
}

// PaperTable2a and PaperTable2b are the paper's Tables 2a (MAE of the test
// posteriors) and 2b (MAPE of the log marginal likelihood, in percent), by
// problem (0-based) and M.
var (
	PaperTable2a = []map[int]float64{
		{3000000: 0.00016, 1000000: 0.00031, 300000: 0.00056, 100000: 0.00095, 30000: 0.00160, 10000: 0.00308},
		{3000000: 0.00024, 1000000: 0.00043, 300000: 0.00081, 100000: 0.00139, 30000: 0.00297, 10000: 0.00463},
		{3000000: 0.00022, 1000000: 0.00038, 300000: 0.00062, 100000: 0.00112, 30000: 0.00212, 10000: 0.00391},
		{3000000: 0.00022, 1000000: 0.00045, 300000: 0.00075, 100000: 0.00128, 30000: 0.00235, 10000: 0.00443},
	}
	PaperTable2b = []map[int]float64{
		{3000000: 0.0081, 1000000: 0.0187, 300000: 0.0364, 100000: 0.0671, 30000: 0.1170, 10000: 0.1522},
		{3000000: 0.0088, 1000000: 0.0097, 300000: 0.0255, 100000: 0.0340, 30000: 0.0629, 10000: 0.1334},
		{3000000: 0.0063, 1000000: 0.0095, 300000: 0.0130, 100000: 0.0238, 30000: 0.0450, 10000: 0.0900},
		{3000000: 0.0033, 1000000: 0.0059, 300000: 0.0077, 100000: 0.0130, 30000: 0.0249, 10000: 0.0622},
	}
)

// Exp2Data is a generated problem: shuffled training features and labels,
// test features, the covariance stream's content, and the exact answers.
type Exp2Data struct {
	X, Y, XTest    []float64
	Cov, TestCov   []float64
	TestVar        []float64
	ExactLogML     float64
	ExactPosterior []float64
}

// Generate draws problem p's data with the given seed: N/2 training
// patterns per class, shuffled (the paper: "we made a point to shuffle"),
// and NTest test patterns, half of each class.
func (p Exp2Problem) Generate(seed uint64) *Exp2Data {
	r := rand.New(rand.NewPCG(seed, 0x45787032)) // "Exp2"
	draw := func(k int) (x, y []float64) {
		x, y = make([]float64, k), make([]float64, k)
		for i := range k {
			if i%2 == 0 {
				x[i], y[i] = p.Mu1+p.Sigma1*r.NormFloat64(), 1
			} else {
				x[i], y[i] = p.Mu2+p.Sigma2*r.NormFloat64(), -1
			}
		}
		r.Shuffle(k, func(i, j int) { x[i], x[j], y[i], y[j] = x[j], x[i], y[j], y[i] })
		return x, y
	}
	d := &Exp2Data{}
	d.X, d.Y = draw(p.N)
	d.XTest, _ = draw(p.NTest)
	k := &gp.Kernel{Kind: gp.KernelLinear, Beta: 1}
	d.Cov = gp.ClassifierCov(k, d.X, 1, d.Y)
	d.TestCov = make([]float64, p.NTest*p.N)
	d.TestVar = make([]float64, p.NTest)
	for j := range p.NTest {
		d.TestVar[j] = gp.ClassifierTestRow(d.TestCov[j*p.N:(j+1)*p.N], k, d.X, 1, d.Y, d.XTest[j:j+1])
	}
	d.ExactLogML, d.ExactPosterior = oracle.LinearClassifier(d.X, d.Y, 1, d.XTest)
	return d
}

// Exp2Result is the outcome of repeated runs on one problem.
type Exp2Result struct {
	Problem, Runs, Samples int
	Method                 string
	// MAE is the mean over runs of the mean absolute error of the test
	// posteriors (eq. MAE); AbsLogML the mean |log ML error| in nats and
	// MAPE the same in percent of |log ML|.
	MAE, AbsLogML, MAPE float64
	// Coverage is the fraction of test posteriors within 2 standard errors
	// of the exact value (NaN without standard errors).
	Coverage float64
	Seconds  float64
	Chosen   map[string]int
}

func (r Exp2Result) String() string {
	return fmt.Sprintf("problem %d (N=%d) M=%d %-10s MAE %.2e (paper %.5f)  |logML err| %.4f nats, MAPE %.4f%% (paper %.4f%%)  2SE coverage %.2f  %.2fs/run  %v",
		r.Problem+1, Exp2Problems[r.Problem].N, r.Samples, r.Method, r.MAE, PaperTable2a[r.Problem][r.Samples],
		r.AbsLogML, r.MAPE, PaperTable2b[r.Problem][r.Samples], r.Coverage, r.Seconds, r.Chosen)
}

// Experiment2 runs problem p (0-based) `runs` times with M particles: one
// data set (seed), fresh estimator seeds per run. method "auto" is
// gpc-train's default (core.Choose over core.AutoCandidates); otherwise
// "method/order" (an order of "auto" is the paper's shuffle), with groups as
// given (0: the method's default). paper-hard predicts with the paper's
// hard count, the others with the soft count.
func Experiment2(ctx context.Context, p, runs, m int, method string, groups int, seed uint64) (Exp2Result, error) {
	prob := Exp2Problems[p]
	d := prob.Generate(seed)
	res := Exp2Result{Problem: p, Runs: runs, Samples: m, Method: method, Chosen: map[string]int{}}
	box := core.Box{N: prob.N, Cov: d.Cov}
	inside, total := 0, 0
	start := time.Now()
	for run := range runs {
		cfg := core.Config{Samples: m, Groups: groups, Seed: seed*1000 + uint64(run), Keep: true}
		var f *core.Factor
		var err error
		if method == "auto" {
			var c core.Candidate
			f, c, _, err = core.Choose(ctx, box, core.AutoCandidates, 0, cfg)
			cfg.Method = c.Method
		} else {
			mname, oname, _ := strings.Cut(method, "/")
			var ok bool
			if cfg.Method, ok = core.ParseMethod(mname); !ok {
				return res, fmt.Errorf("bench: unknown method %q", mname)
			}
			order, ok := core.ParseOrder(oname)
			if !ok {
				order = core.OrderShuffle
			}
			f, err = core.Prepare(box, core.Candidate{Method: cfg.Method, Order: order}, cfg.Seed, 0)
		}
		if err != nil {
			return res, err
		}
		res.Chosen[core.Candidate{Method: cfg.Method, Order: f.Order}.String()]++
		est, err := core.Estimate(ctx, f, cfg)
		if err != nil {
			return res, err
		}
		post := make([]core.Posterior, prob.NTest)
		hard := cfg.Method == core.MethodPaperHard // the paper's own count
		if err := core.PredictWith(post, f, est.Cloud, d.TestCov, d.TestVar, core.PredictOptions{Hard: hard, Seed: cfg.Seed}); err != nil {
			return res, err
		}
		mae := 0.0
		for j, q := range post {
			e := q.P - d.ExactPosterior[j]
			mae += math.Abs(e)
			if !math.IsNaN(q.SE) {
				total++
				if math.Abs(e) <= 2*q.SE {
					inside++
				}
			}
		}
		res.MAE += mae / float64(prob.NTest) / float64(runs)
		res.AbsLogML += math.Abs(est.LogP-d.ExactLogML) / float64(runs)
	}
	res.MAPE = 100 * res.AbsLogML / math.Abs(d.ExactLogML)
	res.Coverage = math.NaN()
	if total > 0 {
		res.Coverage = float64(inside) / float64(total)
	}
	res.Seconds = time.Since(start).Seconds() / float64(runs)
	return res, nil
}
