// Command repro regenerates the paper's tables and figures beside gpc's own
// numbers (issue 6): Table 1 (Experiment 1), Tables 2a and 2b (Experiment
// 2), Figures 1 and 2 (accuracy against CPU time on Experiment 2 problem 3),
// Table 3 (Experiment 4) and the real data sets. It writes tables.md (the
// markdown tables), log.txt (every number, as the run goes) and the figures
// as PNG into --out; with --doc, it also rewrites the generated part of
// docs/results.md (the run's commit, date, CPU and core/ hash, and the
// tables) and copies the figures into docs/results/.
//
//	go run ./bench/repro --quick --out /tmp/repro   # seconds: the CI smoke run
//	go run ./bench/repro --full --out /tmp/repro --doc docs/results.md   # the published run
//
// With --calibration it runs the calibration study instead (issue 19,
// docs/calibration.md): every estimator's log P and test posteriors over
// many seeds against exact or long-run references, written to
// calibration.md and two PNG figures in --out.
//
//	go run ./bench/repro --calibration --quick --out /tmp/calib   # seconds: the CI smoke run
//	go run ./bench/repro --calibration --full --out /tmp/calib    # the published study
//
// A study split by --families across processes or machines is put back
// together with --merge a/calibration.md,b/calibration.md.
//
// R's mvtnorm (pmvnorm, GenzBretz) is the external peer for the orthant
// probabilities of Table 1 when Rscript and the package are installed;
// otherwise its column is skipped with a note.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "the smoke run: small problems, seconds")
	full := fs.Bool("full", false, "the published run (docs/results.md says how long it took)")
	out := fs.String("out", "", "directory for tables.md, log.txt and the PNG figures (required)")
	noR := fs.Bool("no-r", false, "skip R's mvtnorm even when it is installed")
	calib := fs.Bool("calibration", false, "run the calibration study (docs/calibration.md) instead of the tables")
	families := fs.String("families", "", "with --calibration: only these families (comma-separated)")
	methods := fs.String("methods", "", "with --calibration: only these estimators (comma-separated, as the tables name them)")
	seeds := fs.Int("seeds", 0, "with --calibration: seeds per estimator and family (0: the plan's)")
	groups := fs.Int("groups", 0, "with --calibration: particle groups per run (0: the plan's)")
	merge := fs.String("merge", "", "with --calibration: rebuild the study from these calibration.md files of runs over disjoint --families (comma-separated) instead of running it")
	doc := fs.String("doc", "", "rewrite the generated part of this markdown file (docs/results.md) and copy the figures beside it")
	if err := fs.Parse(args); err != nil {
		return 80
	}
	if *quick == *full || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "repro: give exactly one of --quick and --full, and --out DIR")
		return 80
	}
	if *calib && *doc != "" {
		fmt.Fprintln(stderr, "repro: --doc rewrites docs/results.md from the tables' run, not from --calibration")
		return 80
	}
	// The code's provenance is taken before the run: what was compiled.
	var prov *Provenance
	if *doc != "" {
		root, err := repoRoot(".")
		if err == nil {
			prov, err = provenance(root)
		}
		if err != nil {
			fmt.Fprintln(stderr, "repro:", err)
			return 74
		}
		if _, err := os.Stat(*doc); err != nil {
			fmt.Fprintln(stderr, "repro:", err)
			return 74
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "repro:", err)
		return 74
	}
	logf, err := os.Create(filepath.Join(*out, "log.txt"))
	if err != nil {
		fmt.Fprintln(stderr, "repro:", err)
		return 74
	}
	defer logf.Close()
	if *calib {
		cp := calibQuick
		if *full {
			cp = calibFull
		}
		if *families != "" {
			cp.Families = strings.Split(*families, ",")
		}
		if *methods != "" {
			cp.Methods = strings.Split(*methods, ",")
		}
		cp.Seeds = cmp.Or(*seeds, cp.Seeds)
		cp.Groups = cmp.Or(*groups, cp.Groups)
		var rep *CalibReport
		if *merge != "" {
			rep, err = MergeCalibration(cp, strings.Split(*merge, ","), *out)
		} else {
			rep, err = RunCalibration(ctx, cp, *out, io.MultiWriter(stderr, logf))
		}
		if err != nil {
			fmt.Fprintln(stderr, "repro:", err)
			return 1
		}
		fmt.Fprintf(stdout, "repro: calibration %s done in %.0f s; tables in %s/calibration.md\n", cp.Name, rep.Seconds, *out)
		return 0
	}
	plan := quickPlan
	if *full {
		plan = fullPlan
	}
	plan.NoR = *noR
	rep, err := Run(ctx, plan, *out, io.MultiWriter(stderr, logf))
	if err != nil {
		fmt.Fprintln(stderr, "repro:", err)
		return 1
	}
	if *doc != "" {
		prov.Date = time.Now().UTC()
		if err := writeDoc(*doc, rep, prov, "go run ./bench/repro "+strings.Join(args, " "), *out); err != nil {
			fmt.Fprintln(stderr, "repro:", err)
			return 74
		}
	}
	fmt.Fprintf(stdout, "repro: %s mode done in %.0f s; tables in %s/tables.md\n", plan.Name, rep.Seconds, *out)
	return 0
}
