//go:build linux

package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldOutSets are docs/fitting.md's held-out table: each data set's
// directory (relative to GPC_DATA, or to the repository for the
// multi-class examples), its label column and id column, the kernel
// gpc-fit fits (its defaults otherwise: the data's start, no start given)
// and the particles of the final gpc-train run.
var heldOutSets = []struct {
	name, dir, label, id, kernel string
	examples                     bool
	samples                      int
}{
	{"crabs", "crabs", "y", "", "rbf", false, 20000},
	{"sonar", "sonar", "y", "", "ard", false, 20000},
	{"ionosphere", "ionosphere", "y", "", "ard", false, 20000},
	{"pima", "pima", "y", "", "ard", false, 20000},
	{"iris", "iris", "species", "id", "rbf", true, 20000},
	{"wine", "wine", "class", "id", "rbf", true, 20000},
	{"digits", "digits", "digit", "id", "rbf", true, 6000},
}

// TestHeldOutStudy regenerates docs/fitting.md's held-out table: on each
// data set's fixed split, gpc-fit with its defaults (no start given: the
// data's start) and the kernel of heldOutSets, its hyperparameters read by
// gpc-kernel --hyper, gpc-train and gpc-predict on the test split; beside
// scikit-learn's GaussianProcessClassifier (bench/fit_sklearn.py for two
// classes, with the same kernel; bench/multiclass/sklearn_gpc.py's
// one-vs-rest and one-vs-one for more). It reports test accuracy, the mean
// log predictive probability of the true labels and the fit's CPU and wall
// seconds. Set GPC_HELDOUT_STUDY to all or a comma-separated list of data
// sets; GPC_DATA is the two-class data's directory (default
// /work/shared/data), GPC_PYTHON scikit-learn's Python (default
// /usr/bin/python3).
//
//	GPC_HELDOUT_STUDY=all go test ./bench -run TestHeldOutStudy -v -timeout 60m
func TestHeldOutStudy(t *testing.T) {
	which := os.Getenv("GPC_HELDOUT_STUDY")
	if which == "" || testing.Short() {
		t.Skip("held-out study: set GPC_HELDOUT_STUDY to all or a list of data sets to run it")
	}
	data := os.Getenv("GPC_DATA")
	if data == "" {
		data = "/work/shared/data"
	}
	python := os.Getenv("GPC_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "../cmd/...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tool := func(name string) string { return filepath.Join(bin, name) }
	var lines []string
	for _, ds := range heldOutSets {
		if which != "all" && !strings.Contains(","+which+",", ","+ds.name+",") {
			continue
		}
		dir := filepath.Join(data, ds.dir)
		if ds.examples {
			dir = filepath.Join("..", "examples", ds.dir)
		}
		train, test := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
		common := []string{"--standardize", "--label", ds.label, "--train", train}
		if ds.id != "" {
			common = append(common, "--id", ds.id)
		}
		// gpc-fit, timed.
		hyper := filepath.Join(t.TempDir(), "hyper.arrows")
		fitCmd := exec.Command(tool("gpc-fit"), append(append([]string{}, common...), "--kernel", ds.kernel)...)
		var fitOut, fitErr bytes.Buffer
		fitCmd.Stdout, fitCmd.Stderr = &fitOut, &fitErr
		t0 := time.Now()
		if err := fitCmd.Run(); err != nil {
			t.Fatalf("%s: gpc-fit: %v\n%s", ds.name, err, fitErr.String())
		}
		wall := time.Since(t0).Seconds()
		ru := fitCmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		if err := os.WriteFile(hyper, fitOut.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if fitErr.Len() > 0 {
			t.Logf("%s: gpc-fit said: %s", ds.name, strings.TrimSpace(fitErr.String()))
		}
		show := func(args ...string) string {
			out, err := exec.Command(tool("gpc-show"), args...).Output()
			if err != nil {
				t.Fatalf("%s: gpc-show: %v", ds.name, err)
			}
			return string(out)
		}
		meta := show("--meta", hyper)
		logML, seLogML, point := hyperSummary(t, show("--format", "csv", hyper))
		t.Logf("%s: gpc-fit %.1f CPU s (%.1f s): log ML %.3f (se %.3f) at %s", ds.name, cpu, wall, logML, seLogML, point)
		for _, key := range []string{"gpc:start", "gpc:exact_gain", "gpc:ran_off", "gpc:estimates", "gpc:iterations"} {
			for _, l := range strings.Split(meta, "\n") {
				if strings.HasPrefix(l, key+" ") {
					t.Logf("%s: %s", ds.name, l)
				}
			}
		}
		// The pipeline on the test split.
		pipe := fmt.Sprintf("set -o pipefail; %s --hyper %s %s --test %s | %s --samples %d | %s --format csv",
			tool("gpc-kernel"), hyper, strings.Join(common, " "), test, tool("gpc-train"), ds.samples, tool("gpc-predict"))
		out, err := exec.Command("bash", "-c", pipe).Output()
		if err != nil {
			t.Fatalf("%s: %s: %v", ds.name, pipe, err)
		}
		acc, mlpp, n := scorePosteriors(t, out)
		classes := "2"
		if header := strings.SplitN(string(out), "\n", 2)[0]; strings.Contains(header, ",p_") {
			classes = strconv.Itoa(strings.Count(header, ",p_"))
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %d | gpc-fit (%s) | %s | %.3f (%.3f) | %.3f | %.3f | %.1f (%.1f) |", ds.name, classes, n, ds.kernel, point, logML, seLogML, acc, mlpp, cpu, wall))
		// scikit-learn.
		if !ds.examples {
			skKernel := ds.kernel
			sk, err := exec.Command(python, "fit_sklearn.py", train, test, skKernel).Output()
			if err != nil {
				t.Logf("%s: scikit-learn: %v", ds.name, err)
				continue
			}
			var v struct {
				Seconds float64   `json:"seconds"`
				CPU     float64   `json:"cpu_seconds"`
				P       []float64 `json:"test_p"`
			}
			if err := json.Unmarshal(sk, &v); err != nil {
				t.Fatal(err)
			}
			_, te, _, err := LoadSplit(dir)
			if err != nil {
				t.Fatal(err)
			}
			a, m := Score(v.P, te.Y)
			lines = append(lines, fmt.Sprintf("| | | | scikit-learn (%s) | | | %.3f | %.3f | %.1f (%.1f) |", skKernel, a, m, v.CPU, v.Seconds))
			continue
		}
		args := []string{"multiclass/sklearn_gpc.py", train, test, ds.label}
		if ds.id != "" {
			args = append(args, ds.id)
		}
		t0 = time.Now()
		sk, err := exec.Command(python, args...).Output()
		if err != nil {
			t.Logf("%s: scikit-learn: %v", ds.name, err)
			continue
		}
		t.Logf("%s: scikit-learn took %.1f s (wall, both modes)", ds.name, time.Since(t0).Seconds())
		rows, err := csv.NewReader(bytes.NewReader(sk)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows[1:] {
			a, _ := strconv.ParseFloat(r[1], 64)
			m, _ := strconv.ParseFloat(r[2], 64)
			c, _ := strconv.ParseFloat(r[3], 64)
			lines = append(lines, fmt.Sprintf("| | | | scikit-learn (rbf, %s) | | | %.3f | %.3f | %.1f |", r[0], a, m, c))
		}
	}
	t.Log("table:\n" + strings.Join(lines, "\n"))
}

// hyperSummary reads gpc-fit's table as CSV: the log ML, its standard
// error, and the fitted point in brief (ard: the range of the length
// scales, how many ran off, beta).
func hyperSummary(t *testing.T, table string) (logML, se float64, point string) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(table)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("gpc-fit's table: %v", err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(r []string, name string) float64 {
		v, err := strconv.ParseFloat(r[col[name]], 64)
		if err != nil {
			t.Fatalf("column %s: %v", name, err)
		}
		return v
	}
	logML, se = num(rows[1], "log_ml"), num(rows[1], "se_log_ml")
	var alphas []float64
	var parts []string
	off := 0
	for _, r := range rows[1:] {
		switch r[col["name"]] {
		case "alpha":
			alphas = append(alphas, num(r, "value"))
			if r[col["bound"]] != "" {
				off++
			}
		case "beta":
			parts = append(parts, fmt.Sprintf("beta %.3g", num(r, "value")))
		case "bias":
			parts = append(parts, fmt.Sprintf("bias %.3g", num(r, "value")))
		}
	}
	switch {
	case len(alphas) == 1:
		parts = append([]string{fmt.Sprintf("alpha %.3g", alphas[0])}, parts...)
	case len(alphas) > 1:
		lo, hi := math.Inf(1), 0.0
		for _, a := range alphas {
			lo, hi = math.Min(lo, a), math.Max(hi, a)
		}
		parts = append([]string{fmt.Sprintf("alpha %.3g-%.3g (%d of %d ran off)", lo, hi, off, len(alphas))}, parts...)
	}
	return logML, se, strings.Join(parts, ", ")
}

// scorePosteriors reads gpc-predict's CSV output and returns the accuracy,
// the mean log predictive probability of the true labels and the number
// of test points: two classes (p, label, y; p is P(y = +1)) or more
// (p_<class>, label, y).
func scorePosteriors(t *testing.T, out []byte) (acc, mlpp float64, n int) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("gpc-predict's output: %v", err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		y, label := r[col["y"]], r[col["label"]]
		var p float64
		if i, ok := col["p"]; ok {
			p, _ = strconv.ParseFloat(r[i], 64)
			if yv, _ := strconv.ParseFloat(y, 64); yv < 0 {
				p = 1 - p
			}
		} else {
			p, _ = strconv.ParseFloat(r[col["p_"+y]], 64)
		}
		if label == y {
			acc++
		}
		mlpp += math.Log(math.Max(p, 1e-300))
		n++
	}
	return acc / float64(n), mlpp / float64(n), n
}
