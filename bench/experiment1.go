// Package bench is the reproduction harness: the paper's experiments run
// against exact answers, and the benchmarks of the estimator. Nothing here
// ships in the tools.
package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// PaperTable1 is the paper's Table 1: MAPE of log P in percent for
// Experiment 1, by dimension N and number of samples M (50 problems each).
var PaperTable1 = map[int]map[int]float64{
	50:  {3000000: 0.012, 1000000: 0.016, 300000: 0.041, 100000: 0.072, 30000: 0.141, 10000: 0.245},
	200: {3000000: 0.015, 1000000: 0.019, 300000: 0.032, 100000: 0.039, 30000: 0.078, 10000: 0.101},
	500: {3000000: 0.043, 1000000: 0.045, 300000: 0.050, 100000: 0.059, 30000: 0.080, 10000: 0.107},
}

// Exp1Config is one cell of Experiment 1.
type Exp1Config struct {
	N, Problems, Samples int
	Method               core.Method
	// Order: "auto" (gpc-orthant's default: with MethodSMC, the method too
	// is chosen among core.AutoCandidates) or an order name.
	Order string
	// Groups as core.Config.Groups (0: the default).
	Groups int
	// Seed selects the problems (seed + problem index) and the runs.
	Seed uint64
}

// Exp1Result is the outcome of one cell.
type Exp1Result struct {
	Exp1Config
	// MAPE is the mean absolute percentage error of log P, eq. (MAPE) of
	// the paper; MAPESE its standard error over the problems.
	MAPE, MAPESE float64
	// RMSZ is the root mean square of (estimate - exact)/SE over the
	// problems (NaN without standard errors): about 1 when the standard
	// errors are honest.
	RMSZ float64
	// Orders counts the orders the runs used.
	Orders map[string]int
	// Seconds is the mean wall time of one estimate (ordering included).
	Seconds float64
}

// Loadings returns problem p's one-factor loadings: N values uniform on
// [-1, 1], as in the paper's Experiment 1.
func Loadings(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x45787031)) // "Exp1"
	d := make([]float64, n)
	for i := range d {
		d[i] = 2*r.Float64() - 1
	}
	return d
}

// Experiment1 runs one cell: Problems one-factor covariances of dimension
// N, each estimated once and compared with its exact value.
func Experiment1(ctx context.Context, c Exp1Config) (Exp1Result, error) {
	res := Exp1Result{Exp1Config: c, Orders: map[string]int{}}
	var apes []float64
	var z2 float64
	var elapsed time.Duration
	for p := range c.Problems {
		d := Loadings(c.N, c.Seed+uint64(p))
		exact := oracle.OneFactorLogP(d)
		box := core.Box{N: c.N, Cov: oracle.OneFactor(d)}
		cfg := core.Config{Method: c.Method, Samples: c.Samples, Groups: c.Groups, Seed: c.Seed*1000 + uint64(p)}
		start := time.Now()
		var f *core.Factor
		var err error
		switch kind, ok := core.ParseOrder(c.Order); {
		case ok:
			f, err = core.Prepare(box, core.Candidate{Method: c.Method, Order: kind}, cfg.Seed, 0)
		case c.Method == core.MethodSMC && c.Order == "auto":
			var cand core.Candidate
			f, cand, _, err = core.Choose(ctx, box, core.AutoCandidates, 0, cfg)
			cfg.Method = cand.Method
		default:
			f, err = core.NewFactor(box, core.Ordering{Kind: core.OrderShuffle, Seed: cfg.Seed}, 0)
		}
		if err != nil {
			return res, err
		}
		est, err := core.Estimate(ctx, f, cfg)
		if err != nil {
			return res, err
		}
		elapsed += time.Since(start)
		res.Orders[core.Candidate{Method: cfg.Method, Order: f.Order}.String()]++
		apes = append(apes, 100*math.Abs(est.LogP-exact)/math.Abs(exact))
		z := (est.LogP - exact) / est.SE
		z2 += z * z
	}
	res.MAPE, res.MAPESE = MeanSE(apes)
	res.RMSZ = math.Sqrt(z2 / float64(c.Problems))
	res.Seconds = elapsed.Seconds() / float64(c.Problems)
	return res, nil
}

// MeanSE returns the mean of x and its standard error (NaN for one value).
func MeanSE(x []float64) (mean, se float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, math.NaN()
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1) / float64(len(x)))
}

// String formats a result as one table row.
func (r Exp1Result) String() string {
	paper := "-"
	if v, ok := PaperTable1[r.N][r.Samples]; ok {
		paper = fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("N=%-4d M=%-7d %-10s order=%-8s MAPE %.3g%% (se %.2g)  paper %s%%  rms z %.2f  %.3fs/estimate  orders %v",
		r.N, r.Samples, r.Method, r.Order, r.MAPE, r.MAPESE, paper, r.RMSZ, r.Seconds, r.Orders)
}
