package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/core"
)

// PaperTable3 is the paper's Table 3 by problem (1-9): MAE-POST of NEW,
// TITSIAS, ESS, HMC, then MAE-MED of the same (NaN: not available).
var PaperTable3 = map[string][8]float64{
	"1":             {0.1177, 0.1176, 0.1177, 0.1153, 1.4e-3, 1.7e-3, 2.6e-3, 8.1e-3},
	"2":             {0.0668, 0.0676, 0.06711, 0.0673, 3.2e-3, 2.6e-3, 3.1e-3, 8.8e-3},
	"3":             {0.0822, 0.0830, 0.0824, 0.0837, 2.3e-3, 4.7e-3, 3.1e-3, 1.7e-2},
	"4":             {0.1637, 0.1641, 0.1632, 0.1685, 1.6e-3, 1.9e-3, 3.3e-3, 1.8e-2},
	"5":             {0.2884, 0.2883, 0.2890, 0.2872, 1.5e-3, 2.0e-3, 3.0e-3, 1.2e-2},
	"6":             {0.0382, 0.0384, 0.0359, 0.0367, 7.2e-3, 1.1e-2, 4.1e-3, 8.6e-3},
	"crabs":         {nan, nan, nan, nan, 1.8e-3, 2.1e-3, 2.9e-3, 1.3e-2},
	"breast_cancer": {nan, nan, nan, nan, 1.6e-3, 1.9e-3, 2.3e-3, 9.7e-3},
	"usps_3v5":      {nan, nan, nan, nan, 2.8e-3, nan, 4.1e-3, 2.2e-2},
}

var nan = math.NaN()

// Run computes every table and figure of the plan and writes tables.md and
// the PNG figures into dir; progress (every number) goes to log. tables.md
// is rewritten after each step, so that an interrupted run leaves what it
// has done.
func Run(ctx context.Context, p Plan, dir string, log io.Writer) (*Report, error) {
	start := time.Now()
	rep := &Report{Plan: p}
	write := func() error {
		rep.Seconds = time.Since(start).Seconds()
		return os.WriteFile(filepath.Join(dir, "tables.md"), []byte(rep.Markdown("")), 0o644)
	}
	steps := []func() error{
		func() error { return table1(ctx, p, rep, log) },
		func() error {
			if err := table2(ctx, p, rep, log); err != nil {
				return err
			}
			if err := figures(rep, dir); err != nil {
				return fmt.Errorf("figures: %w", err)
			}
			var err error
			rep.Surfaces, err = surfaces(ctx, p, dir)
			return err
		},
		func() error { return table3(ctx, p, rep, log) },
		func() error { return realData(ctx, p, rep, dir, log) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
		if err := write(); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "repro: %.0f s so far\n", time.Since(start).Seconds())
	}
	return rep, nil
}

func realData(ctx context.Context, p Plan, rep *Report, dir string, log io.Writer) error {
	tmp, err := os.MkdirTemp("", "repro-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, set := range p.Real {
		var def *bench.Exp4Run
		for _, meth := range Methods {
			if err := ctx.Err(); err != nil {
				return err
			}
			row, pp, se, err := pipeline(tmp, set, meth, p.RealM)
			if err != nil {
				return fmt.Errorf("real data %s, %s: %w", set, meth, err)
			}
			run := &bench.Exp4Run{Method: meth, Post: make([]core.Posterior, len(pp))}
			for j := range pp {
				run.Post[j] = core.Posterior{P: pp[j], SE: se[j]}
			}
			if def == nil {
				def = run
			}
			row.In2, _, row.MaxZ, row.MeanAbs = bench.Agreement(run, def)
			if math.IsNaN(se[0]) { // one particle group: no standard errors
				row.In2, row.MaxZ = math.NaN(), math.NaN()
			}
			rep.Real = append(rep.Real, row)
			fmt.Fprintf(log, "real data: %s %-10s log ML %.4f ± %.4f accuracy %.3f agreement %.2f max z %.2f mad %.2e %.2f cpu-s\n",
				set, meth, row.LogML, row.SE, row.Accuracy, row.In2, row.MaxZ, row.MeanAbs, row.CPU)
		}
	}
	return nil
}
