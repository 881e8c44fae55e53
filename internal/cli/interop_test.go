package cli

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
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// The interoperability test: Apache Arrow's JavaScript implementation
// (format/testdata/interop/roundtrip.mjs on the machine's Node.js) writes
// features and covariances, the tools run on them, and it reads every
// stream the tools write back, value for value.

// jsTool returns the path of roundtrip.mjs once Node.js and the npm package
// are there. Without them the test is skipped, except in CI (CI=true),
// where .ci/run installs them and their absence is a failure.
func jsTool(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(interop)
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node (Node.js) is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "apache-arrow", "package.json")); err != nil {
		missing = "the npm package apache-arrow is not installed (run: npm ci --prefix format/testdata/interop)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("interoperability test: %s; .ci/run installs it", missing)
		}
		t.Skipf("interoperability test skipped: %s", missing)
	}
	return filepath.Join(dir, "roundtrip.mjs")
}

// jsColumn and jsSpec are what roundtrip.mjs writes.
type jsColumn struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Size   int    `json:"size,omitempty"`
	Values any    `json:"values"`
}

type jsSpec struct {
	Format   string            `json:"format"`
	Metadata map[string]string `json:"metadata"`
	Batches  []int             `json:"batches,omitempty"`
	Columns  []jsColumn        `json:"columns"`
}

// jsTable is what roundtrip.mjs read prints.
type jsTable struct {
	Fields []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
	} `json:"fields"`
	Metadata map[string]string `json:"metadata"`
	NumRows  int               `json:"numRows"`
	Batches  int               `json:"batches"`
	Columns  map[string][]any  `json:"columns"`
}

func jsWrite(t *testing.T, script string, spec jsSpec, out string) {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specPath := out + ".json"
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command("node", script, "write", specPath, out).CombinedOutput(); err != nil {
		t.Fatalf("node roundtrip.mjs write: %v\n%s", err, msg)
	}
}

// jsRead reads a stream with Arrow's JavaScript implementation.
func jsRead(t *testing.T, script string, data []byte) *jsTable {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.arrows")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, "read", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node roundtrip.mjs read: %v\n%s", err, stderr.String())
	}
	var tab jsTable
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatal(err)
	}
	// gpc:rows, where a stream has it, is what the reader found.
	if v, ok := tab.Metadata[format.KeyRows]; ok && v != strconv.Itoa(tab.NumRows) {
		t.Errorf("Arrow JS read %d rows, gpc:rows says %s", tab.NumRows, v)
	}
	return &tab
}

// num is a number as roundtrip.mjs prints it (nil for a null: NaN).
func num(t *testing.T, v any) float64 {
	t.Helper()
	if v == nil {
		return math.NaN()
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func nums(t *testing.T, v any) []float64 {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not a list", v, v)
	}
	out := make([]float64, len(l))
	for i, x := range l {
		out[i] = num(t, x)
	}
	return out
}

// same compares floats exactly (bit for bit but for NaN == NaN).
func same(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

func column(t *testing.T, tab *jsTable, name string) []any {
	t.Helper()
	c, ok := tab.Columns[name]
	if !ok {
		t.Fatalf("Arrow JS finds no column %q among %v", name, tab.Fields)
	}
	return c
}

// interopFeatures is a small labelled data set: two classes of six crabs,
// with an id, a float64, a float32 and an int32 feature (values exact in
// every type), then five test rows with some labels missing.
func interopFeatures() (train, test []jsColumn, trainCSV, testCSV string) {
	x1 := []any{0.5, 1.25, -0.75, 2, 0.125, 1.5, -1, 0.25, 1.75, -0.5, 0.875, 2.5}
	x2 := []any{1, 0.5, 1.5, -0.25, 0.75, 0, 2, -1, 0.5, 1.25, -0.5, 0.25}
	grp := []any{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	sex := []any{"M", "F", "M", "F", "F", "M", "M", "F", "F", "M", "F", "M"}
	var ids []any
	for i := range x1 {
		ids = append(ids, fmt.Sprintf("c%02d", i))
	}
	train = []jsColumn{{Name: "name", Type: "utf8", Values: ids}, {Name: "x1", Type: "float64", Values: x1},
		{Name: "x2", Type: "float32", Values: x2}, {Name: "grp", Type: "int32", Values: grp}, {Name: "sex", Type: "utf8", Values: sex}}
	// The test file's columns in another order, two labels unknown.
	test = []jsColumn{{Name: "grp", Type: "int32", Values: []any{1, 0, 1, 0, 1}}, {Name: "x2", Type: "float32", Values: []any{0.5, -0.5, 1, 2.25, 0}},
		{Name: "sex", Type: "utf8", Values: []any{"M", nil, "F", nil, "F"}}, {Name: "x1", Type: "float64", Values: []any{1, 0.5, -0.25, 1.125, 3}},
		{Name: "name", Type: "utf8", Values: []any{"t0", "t1", "t2", "t3", "t4"}}}
	toCSV := func(cols []jsColumn) string {
		var b strings.Builder
		w := csv.NewWriter(&b)
		rec := make([]string, len(cols))
		for i, c := range cols {
			rec[i] = c.Name
		}
		w.Write(rec)
		for r := range len(cols[0].Values.([]any)) {
			for i, c := range cols {
				v := c.Values.([]any)[r]
				rec[i] = ""
				if v != nil {
					rec[i] = fmt.Sprint(v)
				}
			}
			w.Write(rec)
		}
		w.Flush()
		return b.String()
	}
	return train, test, toCSV(train), toCSV(test)
}

func TestArrowJSInterop(t *testing.T) {
	script := jsTool(t)
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }

	// 1. Features written by Arrow JS (a stream in three batches, and a
	// file) give the covariance that the same features in CSV give, byte
	// for byte.
	train, test, trainCSV, testCSV := interopFeatures()
	jsWrite(t, script, jsSpec{Format: "stream", Batches: []int{5, 0, 7}, Columns: train, Metadata: map[string]string{"source": "arrow-js"}}, path("train.arrows"))
	jsWrite(t, script, jsSpec{Format: "file", Columns: test}, path("test.arrow"))
	for name, text := range map[string]string{"train.csv": trainCSV, "test.csv": testCSV} {
		if err := os.WriteFile(path(name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kargs := []string{"--label", "sex", "--positive", "M", "--id", "name", "--alpha", "1.5", "--beta", "2", "--batch-size", "2"}
	cov := runCLI(t, Kernel, cliCase{args: append([]string{"--train", path("train.arrows"), "--test", path("test.arrow")}, kargs...)})
	covCSV := runCLI(t, Kernel, cliCase{args: append([]string{"--train", path("train.csv"), "--test", path("test.csv")}, kargs...)})
	if !bytes.Equal(cov, covCSV) {
		t.Error("gpc-kernel's covariance from Arrow JS features differs from the one from the same features in CSV")
	}

	// 2. Arrow JS reads gpc-kernel's covariance stream: every value, as
	// gpc's own reader has it.
	jc := jsRead(t, script, cov)
	want, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	n, tests := want.N, want.Test.Len()
	if jc.NumRows != n+tests || jc.Metadata[format.KeySchema] != format.SchemaCovariance || jc.Metadata["gpc:kernel"] != "rbf" {
		t.Fatalf("Arrow JS reads %d rows, metadata %v", jc.NumRows, jc.Metadata)
	}
	if f := jc.Fields[0]; f.Name != "cov" || f.Type != fmt.Sprintf("FixedSizeList[%d]<Float64>", n) {
		t.Errorf("cov column as Arrow JS sees it: %+v", f)
	}
	covCol, varCol, idCol, yCol := column(t, jc, "cov"), column(t, jc, "var"), column(t, jc, "id"), column(t, jc, "y")
	for r := range n + tests {
		row := nums(t, covCol[r])
		var wantRow []float64
		wantVar, wantID, wantY := math.NaN(), "", math.NaN()
		if r < n {
			wantRow = want.Cov[r*n : r*n+n]
			wantID, wantY = want.ID[r], want.Y[r]
		} else {
			k := r - n
			wantRow = want.Test.Cov[k*n : k*n+n]
			wantVar, wantID, wantY = want.Test.Var[k], want.Test.ID[k], want.Test.Y[k]
		}
		for j := range n {
			if !same(row[j], wantRow[j]) {
				t.Fatalf("row %d, cov[%d]: Arrow JS reads %v, gpc %v", r, j, row[j], wantRow[j])
			}
		}
		if !same(num(t, varCol[r]), wantVar) || idCol[r] != wantID || !same(num(t, yCol[r]), wantY) {
			t.Errorf("row %d: var %v id %v y %v; gpc reads %v %q %v", r, varCol[r], idCol[r], yCol[r], wantVar, wantID, wantY)
		}
	}

	// 3. Arrow JS writes a covariance (an equicorrelated matrix, rho = 1/2,
	// P(v >= 0) = 1/(d+1)) with bounds; gpc-orthant's result, read back by
	// Arrow JS, is within 4 standard errors of the exact value.
	const d = 6
	var rows []any
	for i := range d {
		r := make([]any, d)
		for j := range d {
			r[j] = 0.5
			if i == j {
				r[j] = 1.0
			}
		}
		rows = append(rows, r)
	}
	lower, upper := make([]any, d), make([]any, d)
	for i := range d {
		lower[i], upper[i] = 0.0, "Infinity"
	}
	jsWrite(t, script, jsSpec{Format: "stream", Batches: []int{4, 2}, Columns: []jsColumn{
		{Name: "cov", Type: "fixedlist", Size: d, Values: rows}, {Name: "lower", Type: "float64", Values: lower}, {Name: "upper", Type: "float64", Values: upper}}}, path("equi.arrows"))
	res := runCLI(t, Orthant, cliCase{args: []string{path("equi.arrows"), "--samples", "20000"}})
	jr := jsRead(t, script, res)
	logP, se := num(t, column(t, jr, "log_p")[0]), num(t, column(t, jr, "se_log_p")[0])
	if exact := -math.Log(d + 1); jr.NumRows != 1 || math.Abs(logP-exact) > 4*se || column(t, jr, "n")[0] != "6" || column(t, jr, "samples")[0] != "20000" {
		t.Errorf("gpc-orthant as Arrow JS reads it: %d rows, log_p %v (exact %v), se %v, n %v", jr.NumRows, logP, exact, se, column(t, jr, "n")[0])
	}

	// 4. Arrow JS writes gpc-kernel's covariance again, with its metadata
	// (batches of 5 rows, sliced); gpc-train and gpc-predict on it give
	// what they give on gpc-kernel's own bytes.
	var covRows, vars, ids, ys, roles []any
	for r := range n + tests {
		covRows = append(covRows, covCol[r])
		vars, ids, ys = append(vars, varCol[r]), append(ids, idCol[r]), append(ys, yCol[r])
		roles = append(roles, column(t, jc, "role")[r])
	}
	jsWrite(t, script, jsSpec{Format: "stream", Batches: []int{5, 5, 5, 2}, Metadata: jc.Metadata, Columns: []jsColumn{
		{Name: "cov", Type: "fixedlist", Size: n, Values: covRows}, {Name: "y", Type: "float64", Values: ys},
		{Name: "id", Type: "utf8", Values: ids}, {Name: "var", Type: "float64", Values: vars}, {Name: "role", Type: "utf8", Values: roles}}}, path("cov-js.arrows"))
	covJS, err := os.ReadFile(path("cov-js.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	targs := []string{"--samples", "2000", "--batch-size", "100"}
	cloud := runCLI(t, Train, cliCase{args: targs, stdin: covJS})
	if goCloud := runCLI(t, Train, cliCase{args: targs, stdin: cov}); !bytes.Equal(cloud, goCloud) {
		t.Error("gpc-train's cloud from the Arrow JS covariance differs from the one from gpc-kernel's")
	}

	// 5. Arrow JS reads the cloud: the train block, the factor's rows (row
	// k of L, its first k + 1 entries), the test rows (before the
	// particles: they are few), the particles with their normalized
	// weights, each group followed by its row with its estimate.
	jcl := jsRead(t, script, cloud)
	cr, err := format.OpenCloud(bytes.NewReader(cloud), "cloud", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	kinds, z, logW, group, groupLogP := column(t, jcl, "kind"), column(t, jcl, "z"), column(t, jcl, "log_w"), column(t, jcl, "group"), column(t, jcl, "log_p")
	if jcl.NumRows != 2*n+tests+2000+cr.Groups() || cr.Factor == nil || jcl.Metadata[format.KeySchema] != format.SchemaCloud || jcl.Metadata[format.KeyTestsFirst] != strconv.Itoa(tests) || !cr.TestsFirst() {
		t.Fatalf("the cloud as Arrow JS reads it: %d rows, metadata %v", jcl.NumRows, jcl.Metadata)
	}
	r := 0
	for ; r < n; r++ {
		row := nums(t, column(t, jcl, "cov")[r])
		for j := range n {
			if kinds[r] != "train" || !same(row[j], cr.Train.Cov[r*n+j]) {
				t.Fatalf("cloud row %d: %v %v", r, kinds[r], row)
			}
		}
	}
	for ; r < 2*n; r++ {
		k := r - n
		row := nums(t, column(t, jcl, "cov")[r])
		if kinds[r] != "factor" || len(row) != k+1 {
			t.Fatalf("cloud row %d: %v, %d entries", r, kinds[r], len(row))
		}
		for j := range row {
			if !same(row[j], cr.Factor.L[k*n+j]) {
				t.Fatalf("cloud row %d: %v, L[%d][%d] = %v, gpc reads %v", r, kinds[r], k, j, row[j], cr.Factor.L[k*n+j])
			}
		}
	}
	for ; r < 2*n+tests; r++ {
		if kinds[r] != "test" || !same(num(t, column(t, jcl, "var")[r]), want.Test.Var[r-2*n]) {
			t.Fatalf("cloud row %d: %v", r, kinds[r])
		}
	}
	cl, err := cr.LoadParticles(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for g := range cl.Groups {
		grp := &cl.Groups[g]
		for p := range grp.Len() {
			zr := nums(t, z[r])
			if kinds[r] != "particle" || group[r] != strconv.Itoa(g) || !same(num(t, logW[r]), grp.LogW[p]) || !same(zr[n-1], grp.Z[p*n+n-1]) {
				t.Fatalf("cloud row %d: %v group %v log_w %v; gpc reads group %d log_w %v", r, kinds[r], group[r], logW[r], g, grp.LogW[p])
			}
			sums[group[r].(string)] += math.Exp(num(t, logW[r]))
			r++
		}
		// The group row: the group's estimate of log P.
		if kinds[r] != "group" || group[r] != strconv.Itoa(g) || !same(num(t, groupLogP[r]), grp.LogZ) {
			t.Fatalf("cloud row %d: %v group %v log_p %v; gpc reads group %d log_p %v", r, kinds[r], group[r], groupLogP[r], g, grp.LogZ)
		}
		r++
	}
	for g, s := range sums {
		if math.Abs(s-1) > 1e-9 { // normalized weights: their exps sum to 1 in each group
			t.Errorf("group %s: weights sum to %v", g, s)
		}
	}

	// 6. Arrow JS reads gpc-predict's posteriors: the values its CSV
	// output has, and the ids and true labels of the test file.
	post := runCLI(t, Predict, cliCase{args: []string{"--batch-size", "2"}, stdin: cloud})
	postCSV := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	jp := jsRead(t, script, post)
	recs, err := csv.NewReader(bytes.NewReader(postCSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if jp.NumRows != tests || jp.Batches != 3 || len(recs) != tests+1 || jp.Metadata[format.KeyLogML] == "" {
		t.Fatalf("posteriors as Arrow JS reads them: %d rows in %d batches, metadata %v", jp.NumRows, jp.Batches, jp.Metadata)
	}
	for i, rec := range recs[1:] {
		p, _ := strconv.ParseFloat(rec[1], 64)
		se, _ := strconv.ParseFloat(rec[2], 64)
		if column(t, jp, "id")[i] != rec[0] || !same(num(t, column(t, jp, "p")[i]), p) || !same(num(t, column(t, jp, "se")[i]), se) ||
			column(t, jp, "label")[i] != rec[3] || column(t, jp, "y")[i] != rec[4] {
			t.Errorf("posterior %d: Arrow JS reads %v %v %v %v %v; the CSV has %v", i, column(t, jp, "id")[i], column(t, jp, "p")[i],
				column(t, jp, "se")[i], column(t, jp, "label")[i], column(t, jp, "y")[i], rec)
		}
	}
	join := func(v []any) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	if ids, ys := join(column(t, jp, "id")), join(column(t, jp, "y")); ids != "t0,t1,t2,t3,t4" || ys != "M,,F,,F" {
		t.Errorf("ids %s, true labels %s", ids, ys)
	}
}
