package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestCalibPlot: the calibration figure draws every coverage where it is,
// 0 % and 7 % too (it drew those below 60 % at 60 %, unmarked), on an axis
// whose ticks are labelled, with the legend beside the axes; a synthetic
// report with the real study's worst coverages (GPC_FIGURE_DIR keeps the
// PNGs to look at).
func TestCalibPlot(t *testing.T) {
	stats := func(c, se float64) CalibStats {
		return CalibStats{Runs: 200, Cover: [3]float64{0.5, c, 0.99}, CoverSE: [3]float64{0.03, se, 0.007}}
	}
	rep := &CalibReport{Plan: CalibPlan{Seeds: 200}}
	for _, r := range []struct {
		fam, meth string
		c, se     float64
	}{
		{"box3-corr", "ep/greedy", 0.94, 0.015}, {"box3-corr", "paper-soft", 0.92, 0.015},
		{"rbf-b100", "ep/greedy", 0.935, 0.015}, {"rbf-b100", "smc/sharp", 0.825, 0.015},
		{"rbf-b100", "paper-hard", 0.143, 0.058}, {"rbf-b100", "paper-soft", 0.071, 0.058},
		{"rbf-b10", "ep/greedy", 0.945, 0.015}, {"rbf-b10", "smc/sharp", 0.655, 0.015},
		{"rbf-b10", "paper-hard", 0.285, 0.015}, {"rbf-b10", "paper-soft", 0, 0},
		{"exp2-p3", "ep/greedy", 1, 0.007},
	} {
		rep.Rows = append(rep.Rows, CalibRow{Family: r.fam, Method: r.meth, LogP: stats(r.c, r.se), Post: stats(r.c, r.se)})
	}
	q := calibQuantities[0]
	p, err := calibPlot(rep, q.what, q.get)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		if c := 100 * row.LogP.Cover[1]; c < p.Y.Min || c > p.Y.Max {
			t.Errorf("%s %s: coverage %v outside the axis [%v, %v]", row.Family, row.Method, c, p.Y.Min, p.Y.Max)
		}
	}
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label == "" {
			t.Errorf("an unlabelled tick at %v", tk.Value)
		}
	}
	if lo, hi := (coverScale{}).Normalize(0, 100, 93), (coverScale{}).Normalize(0, 100, 97); hi-lo < 0.1 {
		t.Errorf("the acceptance band takes %.3f of the axis", hi-lo)
	}
	dir := os.Getenv("GPC_FIGURE_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := calibFigure(rep, dir); err != nil {
		t.Fatal(err)
	}
	for _, q := range calibQuantities {
		if st, err := os.Stat(filepath.Join(dir, q.file)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", q.file, err)
		}
	}
}

// TestFiguresLegend draws Figures 1 and 2 from synthetic points shaped as
// the published ones (the paper's methods' lines reach the top right,
// where the legend was drawn over them): the legend now stands beside the
// axes (GPC_FIGURE_DIR keeps the PNGs to look at).
func TestFiguresLegend(t *testing.T) {
	rep := &Report{}
	for i, m := range Methods {
		for k, cpu := range []float64{0.1, 0.3, 1, 5} {
			e := math.Pow(10, -2-0.5*float64(len(Methods)-i)) / (1 + float64(k))
			rep.Figure = append(rep.Figure, T2Row{Problem: 3, M: 1000 << k, Method: m, MAE: e, MAPE: 10 * e, CPU: cpu * float64(i+1) / 2})
		}
	}
	dir := os.Getenv("GPC_FIGURE_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := figures(rep, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"figure1.png", "figure2.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
