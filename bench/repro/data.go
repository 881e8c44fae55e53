package main

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/internal/cli"
)

// The real data sets, copied with their provenance (README.md in each
// folder) from the project's shared data: train.csv and test.csv, numeric
// features and a y column of +-1 (USPS gzipped).
//
//go:embed testdata
var dataFS embed.FS

// dataset is a CSV's features (row-major) and labels.
type dataset struct {
	rows, d int
	x, y    []float64
}

// openData returns the content of testdata/<name>/<file>, unzipping a
// .csv.gz.
func openData(name, file string) ([]byte, error) {
	p := "testdata/" + name + "/" + file
	b, err := fs.ReadFile(dataFS, p)
	if err == nil {
		return b, nil
	}
	z, err2 := fs.ReadFile(dataFS, p+".gz")
	if err2 != nil {
		return nil, fmt.Errorf("data set %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("data set %s: %w", name, err)
	}
	return io.ReadAll(zr)
}

// loadSet reads a data set's training and test files.
func loadSet(name string) (train, test *dataset, err error) {
	if train, err = loadCSV(name, "train.csv"); err != nil {
		return nil, nil, err
	}
	if test, err = loadCSV(name, "test.csv"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func loadCSV(name, file string) (*dataset, error) {
	b, err := openData(name, file)
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("data set %s/%s: %v rows, %v", name, file, len(recs), err)
	}
	yc := -1
	for j, h := range recs[0] {
		if h == "y" {
			yc = j
		}
	}
	if yc < 0 {
		return nil, fmt.Errorf("data set %s/%s: no y column", name, file)
	}
	ds := &dataset{rows: len(recs) - 1, d: len(recs[0]) - 1}
	for i, rec := range recs[1:] {
		for j, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("data set %s/%s: row %d column %d: %q", name, file, i+1, j+1, s)
			}
			if j == yc {
				ds.y = append(ds.y, v)
			} else {
				ds.x = append(ds.x, v)
			}
		}
	}
	return ds, nil
}

// RealRow is one data set and method of the pipeline table.
type RealRow struct {
	Set                string
	N, NTest, D        int
	Method             string
	LogML, SE          float64
	Accuracy           float64
	In2, MaxZ, MeanAbs float64 // agreement of the posteriors with the default's (bench.Agreement)
	CPU                float64 // CPU seconds of the pipeline (kernel, train, predict)
	Chosen             string  // method/order the tool used
}

// cliMethodArgs are the tools' flags of a row of Methods.
func cliMethodArgs(meth string) (train, predict []string) {
	switch meth {
	case "default":
		return nil, nil
	case "paper-hard":
		return []string{"--method", "paper-hard", "--order", "shuffle"}, []string{"--count", "hard"}
	case "paper-soft":
		return []string{"--method", "paper-soft", "--order", "shuffle"}, nil
	}
	m, o, _ := strings.Cut(meth, "/")
	return []string{"--method", m, "--order", o}, nil
}

// pipeline runs the tools in-process on one data set, as the README's
// first command does (--standardize --alpha sqrt(d) --beta 4, M particles):
// gpc-kernel | gpc-train | gpc-predict. It returns the summary of
// gpc-train (log ML) and the posteriors with their standard errors.
func pipeline(dir, set, meth string, m int) (row RealRow, p, se []float64, err error) {
	paths := map[string]string{}
	for _, f := range []string{"train.csv", "test.csv"} {
		b, err := openData(set, f)
		if err != nil {
			return row, nil, nil, err
		}
		paths[f] = filepath.Join(dir, set+"-"+f)
		if err := os.WriteFile(paths[f], b, 0o644); err != nil {
			return row, nil, nil, err
		}
	}
	tr, te, err := loadSet(set)
	if err != nil {
		return row, nil, nil, err
	}
	row = RealRow{Set: set, N: tr.rows, NTest: te.rows, D: tr.d, Method: meth}
	tool := func(name string, f func([]string, io.Reader, io.Writer, io.Writer) int, args []string, in []byte) ([]byte, error) {
		var out, errb bytes.Buffer
		if rc := f(args, bytes.NewReader(in), &out, &errb); rc != 0 {
			return nil, fmt.Errorf("%s %s: exit %d: %s", name, strings.Join(args, " "), rc, strings.TrimSpace(errb.String()))
		}
		return out.Bytes(), nil
	}
	targs, pargs := cliMethodArgs(meth)
	targs = append(targs, "--samples", strconv.Itoa(m))
	alpha := strconv.FormatFloat(math.Sqrt(float64(tr.d)), 'g', -1, 64)
	c0 := cpuSeconds()
	cov, err := tool("gpc-kernel", cli.Kernel, []string{"--standardize", "--alpha", alpha, "--beta", "4", "--train", paths["train.csv"], "--test", paths["test.csv"], "--format", "arrow"}, nil)
	if err != nil {
		return row, nil, nil, err
	}
	cloud, err := tool("gpc-train", cli.Train, append([]string{"--format", "arrow", "-q"}, targs...), cov)
	if err != nil {
		return row, nil, nil, err
	}
	post, err := tool("gpc-predict", cli.Predict, append([]string{"--format", "csv", "-q"}, pargs...), cloud)
	if err != nil {
		return row, nil, nil, err
	}
	row.CPU = cpuSeconds() - c0
	// The summary row: the same estimate again (same seed), for log ML.
	sum, err := tool("gpc-train", cli.Train, append([]string{"--format", "csv", "-q"}, targs...), cov)
	if err != nil {
		return row, nil, nil, err
	}
	s, err := csv.NewReader(bytes.NewReader(sum)).ReadAll()
	if err != nil || len(s) != 2 {
		return row, nil, nil, fmt.Errorf("gpc-train summary: %q", sum)
	}
	col := map[string]string{}
	for j, h := range s[0] {
		col[h] = s[1][j]
	}
	row.LogML, _ = strconv.ParseFloat(col["log_ml"], 64)
	row.SE, _ = strconv.ParseFloat(col["se_log_ml"], 64)
	row.Chosen = col["method"] + "/" + col["order"]
	recs, err := csv.NewReader(bytes.NewReader(post)).ReadAll()
	if err != nil || len(recs) != te.rows+1 {
		return row, nil, nil, fmt.Errorf("gpc-predict: %d rows, %v", len(recs), err)
	}
	right := 0
	for i, r := range recs[1:] { // id,p,se,label,y
		pv, _ := strconv.ParseFloat(r[1], 64)
		sv, _ := strconv.ParseFloat(r[2], 64)
		p, se = append(p, pv), append(se, sv)
		if (pv > 0.5) == (te.y[i] > 0) {
			right++
		}
	}
	row.Accuracy = float64(right) / float64(te.rows)
	return row, p, se, nil
}
