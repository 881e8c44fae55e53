package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// mvtnormScript estimates the orthant probability P(v >= 0) of each
// one-factor problem (a line of loadings d; R = d d' + diag(1 - d^2)) with
// pmvnorm's GenzBretz (randomized lattice rules with variable
// prioritization), using all maxpts points (abseps = releps = 0), and
// prints log P, pmvnorm's error estimate (3.5 standard errors of P) and the
// CPU seconds.
const mvtnormScript = `
suppressMessages(library(mvtnorm))
a <- commandArgs(TRUE)
L <- as.matrix(read.csv(a[1], header = FALSE))
m <- as.numeric(a[2])
set.seed(as.numeric(a[3]))
for (i in seq_len(nrow(L))) {
  d <- L[i, ]
  S <- outer(d, d); diag(S) <- 1
  t <- system.time(p <- pmvnorm(lower = rep(0, length(d)), upper = rep(Inf, length(d)), corr = S,
    algorithm = GenzBretz(maxpts = m, abseps = 0, releps = 0)))
  cat(sprintf("%.17g %.17g %.6g\n", log(p), attr(p, "error"), t[["user.self"]] + t[["sys.self"]]))
}
`

// mvtnorm is R's mvtnorm package, run through Rscript.
type mvtnorm struct {
	rscript string
	version string
	note    string // why it is not used
}

func newMvtnorm(disabled bool) *mvtnorm {
	if disabled {
		return &mvtnorm{note: "skipped (--no-r)"}
	}
	rs, err := exec.LookPath("Rscript")
	if err != nil {
		return &mvtnorm{note: "skipped: Rscript is not installed (Debian: apt-get install r-cran-mvtnorm)"}
	}
	out, err := exec.Command(rs, "-e", `cat(as.character(packageVersion("mvtnorm")), R.version$major, R.version$minor)`).Output()
	if err != nil {
		return &mvtnorm{note: "skipped: R's mvtnorm package is not installed (Debian: apt-get install r-cran-mvtnorm)"}
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return &mvtnorm{note: fmt.Sprintf("skipped: unexpected answer from R: %q", out)}
	}
	return &mvtnorm{rscript: rs, version: fmt.Sprintf("mvtnorm %s (R %s.%s)", f[0], f[1], f[2])}
}

func (r *mvtnorm) ok() bool { return r.rscript != "" }

// table1 runs the problems of a Table 1 cell (the loadings of
// bench.Experiment1 with the same seed) through pmvnorm with maxpts = m.
func (r *mvtnorm) table1(ctx context.Context, n, m, problems int, seed uint64) (T1Row, error) {
	row := T1Row{N: n, M: m, Problems: problems, Method: "mvtnorm"}
	f, err := os.CreateTemp("", "repro-loadings-*.csv")
	if err != nil {
		return row, err
	}
	defer os.Remove(f.Name())
	var buf bytes.Buffer
	exact := make([]float64, problems)
	for p := range problems {
		d := bench.Loadings(n, seed+uint64(p))
		exact[p] = oracle.OneFactorLogP(d)
		for i, v := range d {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return row, err
	}
	if err := f.Close(); err != nil {
		return row, err
	}
	cmd := exec.CommandContext(ctx, r.rscript, "-e", mvtnormScript, f.Name(), strconv.Itoa(m), strconv.FormatUint(seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return row, fmt.Errorf("Rscript: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != problems {
		return row, fmt.Errorf("Rscript: %d lines for %d problems: %q", len(lines), problems, out)
	}
	apes := make([]float64, problems)
	var z2 float64
	honest := true // pmvnorm reports an error of 0 when P underflows
	for p, l := range lines {
		var logP, errP, secs float64
		if _, err := fmt.Sscan(l, &logP, &errP, &secs); err != nil {
			return row, fmt.Errorf("Rscript: line %q: %w", l, err)
		}
		apes[p] = 100 * math.Abs(logP-exact[p]) / math.Abs(exact[p])
		// pmvnorm's error is 3.5 standard errors of P; of log P that is
		// errP / (3.5 P).
		z := (logP - exact[p]) / (errP / 3.5 / math.Exp(logP))
		z2 += z * z
		honest = honest && errP > 0
		row.CPU += secs / float64(problems)
	}
	row.MAPE, row.MAPESE = bench.MeanSE(apes)
	row.RMSZ = math.Sqrt(z2 / float64(problems))
	if !honest {
		row.RMSZ = math.NaN()
	}
	return row, nil
}
