package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/core"
)

// Report holds every number of a run; tables.md and the figures are drawn
// from it.
type Report struct {
	Plan    Plan
	Seconds float64 // wall time of the whole run
	Table1  []T1Row
	// MvtnormNote says why mvtnorm is missing, when it is.
	MvtnormNote string
	Table2      []T2Row
	Figure      []T2Row
	Table3      []T3Row
	Real        []RealRow
	// Surfaces are the file names of the posterior surfaces drawn.
	Surfaces []string
}

// T1Row is one cell of Table 1 for one method.
type T1Row struct {
	N, M, Problems int
	Method         string
	MAPE, MAPESE   float64 // percent
	RMSZ           float64 // NaN without standard errors
	CPU            float64 // CPU seconds per estimate
	Orders         map[string]int
}

// T2Row is one cell of Tables 2a and 2b (and a point of Figures 1-2).
type T2Row struct {
	Problem, M, Runs int
	Method           string
	MAE, MAPE        float64
	AbsLogML         float64 // nats
	Coverage         float64 // fraction of posteriors within 2 SE of the exact value
	CPU              float64 // CPU seconds per run
}

// T3Row is one problem of Table 3 for one method, averaged over the six
// hyperparameter sets.
type T3Row struct {
	Problem  string
	N, NTest int
	Method   string
	MAEPost  float64 // NaN for the real problems
	MAEMed   float64
	// LogMLMed is the mean |log ML - the methods' median| in nats.
	LogMLMed float64
	CPU      float64 // CPU seconds per run (estimate and prediction)
}

// cpuSeconds is the CPU time this process has used (user and system, all
// threads): the paper reports CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// exp1Config maps a row name of Methods to Experiment 1's configuration.
func exp1Config(method string) (core.Method, string) {
	switch method {
	case "default":
		return core.MethodSMC, "auto" // core.Choose among core.AutoCandidates
	case "paper-hard":
		return core.MethodPaperHard, "shuffle"
	case "paper-soft":
		return core.MethodPaperSoft, "shuffle"
	}
	m, o, _ := strings.Cut(method, "/")
	kind, _ := core.ParseOrder(o)
	meth, _ := core.ParseMethod(m)
	return meth, kind.String()
}

// expMethod maps a row name to the method argument of bench.Experiment2 and
// bench.Experiment4Run.
func expMethod(method string) string {
	switch method {
	case "default":
		return "auto"
	case "paper-hard", "paper-soft":
		return method + "/shuffle"
	}
	return method
}

func table1(ctx context.Context, p Plan, rep *Report, log io.Writer) error {
	r := newMvtnorm(p.NoR)
	rep.MvtnormNote = r.note
	for _, cell := range p.T1 {
		n, m, problems := cell.N, cell.M, cell.Problems
		for _, meth := range Methods {
			method, order := exp1Config(meth)
			c0 := cpuSeconds()
			res, err := bench.Experiment1(ctx, bench.Exp1Config{N: n, Problems: problems, Samples: m, Method: method, Order: order, Seed: p.Seed})
			if err != nil {
				return fmt.Errorf("table 1, N = %d, M = %d, %s: %w", n, m, meth, err)
			}
			row := T1Row{N: n, M: m, Problems: problems, Method: meth, MAPE: res.MAPE, MAPESE: res.MAPESE, RMSZ: res.RMSZ,
				CPU: (cpuSeconds() - c0) / float64(problems), Orders: res.Orders}
			rep.Table1 = append(rep.Table1, row)
			fmt.Fprintf(log, "table 1: N=%d M=%d %-10s MAPE %.3g%% rms z %.2f %.3f cpu-s\n", n, m, meth, row.MAPE, row.RMSZ, row.CPU)
		}
		if r.ok() && n <= p.MvtnormMaxN {
			row, err := r.table1(ctx, n, m, problems, p.Seed)
			if err != nil {
				return fmt.Errorf("table 1, N = %d, M = %d, mvtnorm: %w", n, m, err)
			}
			rep.Table1 = append(rep.Table1, row)
			fmt.Fprintf(log, "table 1: N=%d M=%d %-10s MAPE %.3g%% rms z %.2f %.3f cpu-s\n", n, m, row.Method, row.MAPE, row.RMSZ, row.CPU)
		}
	}
	return nil
}

// exp2 runs one cell of Experiment 2, remembering it: Table 2 and the
// figures share problem 3's cells.
type exp2Cache map[string]T2Row

func (c exp2Cache) run(ctx context.Context, p Plan, prob, m, runs int, meth string, log io.Writer) (T2Row, error) {
	key := fmt.Sprint(prob, m, meth, runs)
	if row, ok := c[key]; ok {
		return row, nil
	}
	c0 := cpuSeconds()
	res, err := bench.Experiment2(ctx, prob, runs, m, expMethod(meth), 0, p.Seed)
	if err != nil {
		return T2Row{}, fmt.Errorf("experiment 2, problem %d, M = %d, %s: %w", prob+1, m, meth, err)
	}
	row := T2Row{Problem: prob, M: m, Runs: runs, Method: meth, MAE: res.MAE, MAPE: res.MAPE, AbsLogML: res.AbsLogML,
		Coverage: res.Coverage, CPU: (cpuSeconds() - c0) / float64(runs)}
	c[key] = row
	fmt.Fprintf(log, "experiment 2: problem %d M=%d %-10s MAE %.2e MAPE %.2e%% coverage %.2f %.3f cpu-s\n", prob+1, m, meth, row.MAE, row.MAPE, row.Coverage, row.CPU)
	return row, nil
}

func table2(ctx context.Context, p Plan, rep *Report, log io.Writer) error {
	cache := exp2Cache{}
	for _, prob := range p.T2Problems {
		for _, m := range p.T2M {
			for _, meth := range Methods {
				row, err := cache.run(ctx, p, prob, m, p.T2Runs, meth, log)
				if err != nil {
					return err
				}
				rep.Table2 = append(rep.Table2, row)
			}
		}
	}
	for _, m := range p.FigM {
		for _, meth := range Methods {
			row, err := cache.run(ctx, p, 2, m, p.FigRuns, meth, log)
			if err != nil {
				return err
			}
			rep.Figure = append(rep.Figure, row)
		}
	}
	return nil
}

// exp4Problem is a Table 3 problem: synthetic (with the Bayes posteriors)
// or real (raw features, as the paper).
type exp4Problem struct {
	name string
	p    bench.Exp4Problem
	d    *bench.Exp4Data
}

func table3Problems(p Plan) ([]exp4Problem, error) {
	var out []exp4Problem
	for _, i := range p.T3Synthetic {
		pr := bench.Exp4Problems[i]
		out = append(out, exp4Problem{name: fmt.Sprint(i + 1), p: pr, d: pr.Generate(p.Seed + uint64(i))})
	}
	for _, name := range p.T3Real {
		tr, te, err := loadSet(name)
		if err != nil {
			return nil, err
		}
		pr := bench.Exp4Problem{N: tr.rows, NTest: te.rows, D: tr.d}
		out = append(out, exp4Problem{name: name, p: pr, d: &bench.Exp4Data{X: tr.x, Y: tr.y, XTest: te.x, YTest: te.y}})
	}
	return out, nil
}

func table3(ctx context.Context, p Plan, rep *Report, log io.Writer) error {
	probs, err := table3Problems(p)
	if err != nil {
		return err
	}
	for _, pr := range probs {
		methods := Methods
		if pr.p.N > p.BigN {
			methods = p.BigMethods
		}
		rows := make([]T3Row, len(methods))
		for i, meth := range methods {
			rows[i] = T3Row{Problem: pr.name, N: pr.p.N, NTest: pr.p.NTest, Method: meth}
		}
		for h, ab := range bench.Exp4Hyper {
			runs := make([]*bench.Exp4Run, len(methods))
			for i, meth := range methods {
				c0 := cpuSeconds()
				run, err := bench.Experiment4Run(ctx, pr.p, pr.d, ab[0], ab[1], expMethod(meth), p.T3M, 0, p.Seed*100+uint64(h))
				if err != nil {
					return fmt.Errorf("table 3, problem %s, set %d, %s: %w", pr.name, h+1, meth, err)
				}
				runs[i] = run
				rows[i].CPU += (cpuSeconds() - c0) / float64(len(bench.Exp4Hyper))
				if pr.d.Bayes != nil {
					rows[i].MAEPost += bench.MAEPost(run, pr.d) / float64(len(bench.Exp4Hyper))
				} else {
					rows[i].MAEPost = math.NaN()
				}
			}
			med := make([]float64, len(methods))
			for j := range pr.p.NTest {
				for i, r := range runs {
					med[i] = r.Post[j].P
				}
				m := median(med)
				for i, r := range runs {
					rows[i].MAEMed += math.Abs(r.Post[j].P-m) / float64(pr.p.NTest) / float64(len(bench.Exp4Hyper))
				}
			}
			for i, r := range runs {
				med[i] = r.LogML
			}
			m := median(med)
			for i, r := range runs {
				rows[i].LogMLMed += math.Abs(r.LogML-m) / float64(len(bench.Exp4Hyper))
			}
		}
		for _, row := range rows {
			fmt.Fprintf(log, "table 3: problem %s %-10s MAE-POST %.4f MAE-MED %.2e logML-MED %.2e %.2f cpu-s\n", row.Problem, row.Method, row.MAEPost, row.MAEMed, row.LogMLMed, row.CPU)
		}
		rep.Table3 = append(rep.Table3, rows...)
	}
	return nil
}

// median returns the median of x, reordering it.
func median(x []float64) float64 {
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}
