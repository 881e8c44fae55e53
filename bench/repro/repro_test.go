package main

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/core"
)

// TestQuick runs the quick mode (the CI smoke run; under -short, a smaller
// plan for the race detector) and checks that its tables are sane: the
// errors against the exact answers are within the reported standard errors,
// gpc's default beats the paper's published errors at the same M, the
// paper's algorithm lands near the paper's own numbers, the methods agree on
// Experiment 4 and the real data, and the figures are PNG images.
func TestQuick(t *testing.T) {
	plan := quickPlan
	if testing.Short() {
		plan = tinyPlan
		plan.NoR = true
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), plan, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	for _, r := range rep.Table1 {
		if !(r.MAPE >= 0) || math.IsInf(r.MAPE, 0) {
			t.Errorf("table 1: %s N=%d M=%d: MAPE %v", r.Method, r.N, r.M, r.MAPE)
		}
		// Every estimate within a few of its standard errors: the RMS of
		// the z scores is about 1 (fixed seeds: this cannot flake).
		if !math.IsNaN(r.RMSZ) && r.RMSZ > 3 {
			t.Errorf("table 1: %s N=%d M=%d: rms z %.2f: the standard errors are not honest", r.Method, r.N, r.M, r.RMSZ)
		}
		paper, ok := bench.PaperTable1[r.N][r.M]
		switch {
		case !ok:
		case r.Method == "default" && !(r.MAPE < paper/10):
			t.Errorf("table 1: default N=%d M=%d: MAPE %.3g %%, not 10 times below the paper's %.3g %%", r.N, r.M, r.MAPE, paper)
		case r.Method == "paper-hard" && !(r.MAPE > paper/5 && r.MAPE < paper*5):
			t.Errorf("table 1: paper-hard N=%d M=%d: MAPE %.3g %%, far from the paper's %.3g %%", r.N, r.M, r.MAPE, paper)
		}
	}
	if plan.NoR != (rep.MvtnormNote != "") && !strings.Contains(rep.MvtnormNote, "not installed") {
		t.Errorf("mvtnorm: note %q", rep.MvtnormNote)
	}

	for _, r := range append(append([]T2Row{}, rep.Table2...), rep.Figure...) {
		if !(r.MAE >= 0 && r.MAE < 0.05) || !(r.MAPE >= 0 && r.MAPE < 5) {
			t.Errorf("experiment 2: %s problem %d M=%d: MAE %v, MAPE %v", r.Method, r.Problem+1, r.M, r.MAE, r.MAPE)
		}
		pa, ok := bench.PaperTable2a[r.Problem][r.M]
		pb := bench.PaperTable2b[r.Problem][r.M]
		switch {
		case !ok:
		case r.Method == "default" && !(r.MAE < pa/10 && r.MAPE < pb/10):
			t.Errorf("experiment 2: default problem %d M=%d: MAE %.2g, MAPE %.2g %%, not 10 times below the paper's %.2g, %.2g %%", r.Problem+1, r.M, r.MAE, r.MAPE, pa, pb)
		case r.Method == "paper-hard" && !(r.MAE > pa/5 && r.MAE < pa*5):
			t.Errorf("experiment 2: paper-hard problem %d M=%d: MAE %.2g, far from the paper's %.2g", r.Problem+1, r.M, r.MAE, pa)
		}
	}

	// Experiment 4: every method near the Bayes posterior as the paper's
	// (about 0.1 on problems 1 and 3), and the gpc methods near the median.
	for _, r := range rep.Table3 {
		if !math.IsNaN(r.MAEPost) && !(r.MAEPost > 0.02 && r.MAEPost < 0.3) {
			t.Errorf("table 3: problem %s %s: MAE-POST %.4f", r.Problem, r.Method, r.MAEPost)
		}
		if limit := 0.02; !strings.HasPrefix(r.Method, "paper") && !(r.MAEMed < limit) {
			t.Errorf("table 3: problem %s %s: MAE-MED %.2g (at most %v)", r.Problem, r.Method, r.MAEMed, limit)
		}
	}

	// Real data: the default's accuracy, and every method's log ML within
	// 4 combined standard errors of the default's.
	var def RealRow
	for _, r := range rep.Real {
		if r.Method == "default" {
			def = r
			if r.Set == "crabs" && r.Accuracy < 0.9 {
				t.Errorf("real data: crabs accuracy %.3f", r.Accuracy)
			}
			continue
		}
		if !math.IsNaN(r.SE) && math.Abs(r.LogML-def.LogML) > 4*math.Hypot(r.SE, def.SE) {
			t.Errorf("real data: %s %s: log ML %.4f ± %.4f, the default's %.4f ± %.4f", r.Set, r.Method, r.LogML, r.SE, def.LogML, def.SE)
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Table 1", "Table 2a", "Table 2b", "Table 3", "Real data", "figure1.png", "surface-p1-set3.png", "| default |"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("tables.md lacks %q", s)
		}
	}
	for _, f := range []string{"figure1.png", "figure2.png", "surface-p1-set3.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() < 200 || len(b) > 400<<10 {
			t.Errorf("%s: %d bytes, %v", f, len(b), err)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--quick"}, {"--quick", "--full", "--out", "x"}, {"--bogus"}, {"--calibration", "--quick", "--out", "x", "--doc", "docs/results.md"}} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 80 || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, rc, out.String(), errb.String())
		}
	}
}

// TestCalibrationQuick runs the calibration study's quick plan (under
// -short, two families of it) and checks its summaries: every run of an
// exact family gives a finite z for log P, the z scores are of the size of
// their standard errors (rms z below 3: fixed seeds, this cannot flake),
// the coverages are fractions, the long-run reference's two estimators
// agree, and the tables and figures are written.
func TestCalibrationQuick(t *testing.T) {
	plan := calibQuick
	if testing.Short() {
		plan.Seeds = 4
		plan.Families = []string{"exp2-p1", "box3-corr"}
	}
	dir := t.TempDir()
	rep, err := RunCalibration(context.Background(), plan, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(plan.Families)*len(calibMethods) {
		t.Fatalf("%d rows for %d families", len(rep.Rows), len(plan.Families))
	}
	for _, r := range rep.Rows {
		s := r.LogP
		if s.Runs != plan.Seeds || s.Failed != 0 {
			t.Errorf("%s %s: %d runs, %d failed", r.Family, r.Method, s.Runs, s.Failed)
		}
		if !(s.RMSZ > 0 && s.RMSZ < 3) {
			t.Errorf("%s %s: log P rms z %v", r.Family, r.Method, s.RMSZ)
		}
		for k, c := range s.Cover {
			if !(c >= 0 && c <= 1) || k > 0 && c < s.Cover[k-1] {
				t.Errorf("%s %s: coverages %v", r.Family, r.Method, s.Cover)
			}
		}
		if p := r.Post; p.Runs > 0 && !(p.RMSZ > 0 && p.RMSZ < 3) {
			t.Errorf("%s %s: posterior rms z %v", r.Family, r.Method, p.RMSZ)
		}
	}
	for _, f := range rep.Families {
		if f.RefSE > 0 && !strings.Contains(f.RefNote, "differ by") {
			t.Errorf("%s: reference note %q", f.Name, f.RefNote)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "calibration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### log P", "### test posteriors", "| exp2-p1 | ep/greedy |", "calibration-logp.png"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("calibration.md lacks %q", s)
		}
	}
	// --merge of the run's own tables gives the same tables.
	mdir := t.TempDir()
	if _, err := MergeCalibration(plan, []string{filepath.Join(dir, "calibration.md")}, mdir); err != nil {
		t.Fatal(err)
	}
	merged, err := os.ReadFile(filepath.Join(mdir, "calibration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, a, _ := bytes.Cut(md, []byte("\n")); !bytes.Equal(a, func() []byte { _, b, _ := bytes.Cut(merged, []byte("\n")); return b }()) {
		t.Errorf("merged tables differ:\n%s\nfrom\n%s", merged, md)
	}
	for _, f := range []string{"calibration-logp.png", "calibration-post.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 200 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestCalibCandidates checks --methods: the tables' names, any other
// METHOD/ORDER, and one clear error for a name that is neither.
func TestCalibCandidates(t *testing.T) {
	got, err := calibCandidates([]string{"smc/greedy", "ep/greedy", "paper-soft", "met/greedy"})
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Candidate{{Method: core.MethodSMC, Order: core.OrderGreedy}, {Method: core.MethodEP, Order: core.OrderGreedy},
		{Method: core.MethodPaperSoft, Order: core.OrderShuffle}, {Method: core.MethodMET, Order: core.OrderGreedy}}
	if !slices.Equal(got, want) {
		t.Errorf("calibCandidates = %v, want %v", got, want)
	}
	if all, err := calibCandidates(nil); err != nil || !slices.Equal(all, calibMethods) {
		t.Errorf("no names: %v, %v; want calibMethods", all, err)
	}
	for _, bad := range []string{"smc", "smc/bogus", "bogus/greedy", "paper-hard/greedy", ""} {
		if _, err := calibCandidates([]string{bad}); err == nil || !strings.Contains(err.Error(), "unknown estimator") {
			t.Errorf("calibCandidates(%q): %v, want an unknown-estimator error", bad, err)
		}
	}
}
