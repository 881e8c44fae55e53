package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// The bad-input catalogue: every kind of bad input the tools meet, the
// one line each says on standard error and its exit status. This table is
// the single source of docs/bad-input.md: TestBadInputCatalogue runs every
// row and fails when the document's table is not exactly what the tools
// said (go test ./internal/cli -run TestBadInputCatalogue -update rewrites
// it, for review in the diff).

// badInput is one row of the catalogue.
type badInput struct {
	tool  string // gpc-kernel, gpc-orthant, gpc-train, gpc-predict, gpc-tune, gpc-mcmc, gpc-merge, gpc-fit or gpc-show
	what  string // the bad input, in words
	args  []string
	stdin string            // the name of the standard input in the document ("" for none)
	input func() []byte     // standard input
	files map[string][]byte // files the args name as @name
	full  bool              // standard output is a full disk
	code  int
	want  string // a part of the message that must be there
}

var runners = map[string]func([]string, io.Reader, io.Writer, io.Writer) int{
	"gpc-kernel": Kernel, "gpc-orthant": Orthant, "gpc-train": Train, "gpc-predict": Predict,
	"gpc-tune": Tune, "gpc-mcmc": MCMC, "gpc-merge": Merge, "gpc-fit": Fit, "gpc-show": Show,
}

// withMeta returns the Arrow stream data with its metadata key set to v
// (what an edit by hand would leave).
func withMeta(t *testing.T, data []byte, key, v string) []byte {
	t.Helper()
	tab, err := format.ReadTable(bytes.NewReader(data), "shard", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tab.Meta[key] = v
	var b bytes.Buffer
	if err := format.WriteTable(&b, tab, format.Arrow, 0, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fixtures are the streams the catalogue spoils, made once by the tools.
type fixtures struct {
	cov, cloud, post      []byte // gpc-kernel, gpc-train (--method ep: its cloud holds the factor rows), gpc-predict on the tiny data set, small batches
	good3, notPD          []byte
	vecchia, vecchiaCloud []byte // gpc-kernel --vecchia 3, gpc-train on the tiny data set
	keptCloud             []byte // gpc-train on the tiny training set's Vecchia model: it keeps particle paths
}

var (
	fixOnce sync.Once
	fix     fixtures
)

func getFixtures(t *testing.T) *fixtures {
	fixOnce.Do(func() {
		fix.cov = runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "1.5", "--batch-size", "2")})
		fix.cloud = runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4", "--batch-size", "2", "--method", "ep"}, stdin: fix.cov})
		fix.post = runCLI(t, Predict, cliCase{args: []string{"--batch-size", "1"}, stdin: fix.cloud})
		fix.good3 = covStream(t, &format.Covariance{N: 3, Cov: []float64{1, 0.5, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 1}}, nil)
		fix.notPD = covStream(t, &format.Covariance{N: 2, Cov: []float64{1, 2, 2, 1}}, nil)
		fix.vecchia = runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "1.5", "--vecchia", "3", "--batch-size", "2")})
		fix.vecchiaCloud = runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4", "--batch-size", "2"}, stdin: fix.vecchia})
		fix.keptCloud = runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5", "--vecchia", "3")})})
	})
	return &fix
}

// shardFixtures are gpc-orthant's shards of a 3 x 3 covariance, the
// files of the merge's rows of the catalogue.
type shardFixtures struct{ files map[string][]byte }

var (
	shardOnce sync.Once
	shardFix  shardFixtures
)

func getShardFixtures(t *testing.T) *shardFixtures {
	shardOnce.Do(func() {
		run := func(args ...string) []byte {
			return runCLI(t, Orthant, cliCase{args: append([]string{"--samples", "200", "--groups", "4", "--format", "arrow", "testdata/equicorr3.csv"}, args...)})
		}
		s1 := run("--shard", "1/2")
		shardFix.files = map[string][]byte{
			"shard-0.arrows":         run("--shard", "0/2"),
			"shard-1.arrows":         s1,
			"copy-of-shard-1.arrows": s1,
			"seed-2-shard-1.arrows":  run("--shard", "1/2", "--seed", "2"),
			"shard-1-of-3.arrows":    run("--shard", "1/3"),
			"cut-shard-1.arrows":     cut(t, s1, 2, false),
			"short-shard-1.arrows":   cut(t, s1, 2, true),
			"orthant.arrows":         run(),
		}
		s0 := shardFix.files["shard-0.arrows"]
		shardFix.files["bad-n-shard-0.arrows"] = withMeta(t, s0, format.KeyShardN, "three")
		shardFix.files["bad-ess-shard-0.arrows"] = withMeta(t, s0, format.KeyShardESS, "1.5")
		fx := getFixtures(t)
		train := func(args ...string) []byte {
			return runCLI(t, Train, cliCase{args: append([]string{"--samples", "64", "--groups", "4", "--batch-size", "2"}, args...), stdin: fx.cov})
		}
		c1 := train("--shard", "1/2")
		shardFix.files["cloud-shard-0.arrows"] = train("--shard", "0/2")
		shardFix.files["cut-cloud-shard-1.arrows"] = cut(t, c1, len(messageEnds(t, c1))-1, false)
		shardFix.files["short-cloud-shard-1.arrows"] = cut(t, c1, len(messageEnds(t, c1))-1, true)
		shardFix.files["batch-3-cloud-shard-1.arrows"] = train("--shard", "1/2", "--batch-size", "3")
		plan := run("--prepare-only")
		shardFix.files["plan.arrows"] = plan
		shardFix.files["cut-plan.arrows"] = cut(t, plan, 1, false)
		shardFix.files["short-plan.arrows"] = cut(t, plan, 1, true)
		shardFix.files["broken-plan.arrows"] = brokenPlan(t, plan)
		shardFix.files["tune-grid.arrows"] = runCLI(t, Tune, cliCase{args: tinyTrain(tuneGridArgs...)})
	})
	return &shardFix
}

// tuneGridArgs are the catalogue's gpc-tune grid (with tinyTrain).
var tuneGridArgs = []string{"--beta", "1,2", "--samples", "200", "--exploit", "0", "--no-optimize", "--format", "arrow"}

// brokenPlan is plan with its first two variables' input indices equal.
func brokenPlan(t *testing.T, plan []byte) []byte {
	t.Helper()
	p, _, err := format.ReadPlan(bytes.NewReader(plan), "plan", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	p.Parts.Perm[0] = p.Parts.Perm[1]
	var b bytes.Buffer
	if err := format.WritePlan(&b, p, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ipcEOS is Arrow's end-of-stream marker.
var ipcEOS = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// messageEnds returns the offsets at which the messages of an Arrow IPC
// stream end (schema first, then the record batches), read from the
// stream's framing: a continuation marker, the metadata length, the
// metadata (a flatbuffer Message whose field 3 is the body length), the
// body.
func messageEnds(t *testing.T, data []byte) []int {
	t.Helper()
	var ends []int
	at := 0
	for at+8 <= len(data) {
		metaLen := int(binary.LittleEndian.Uint32(data[at+4:]))
		if metaLen == 0 {
			return ends
		}
		meta := data[at+8 : at+8+metaLen]
		root := int(binary.LittleEndian.Uint32(meta))
		vt := root - int(int32(binary.LittleEndian.Uint32(meta[root:])))
		var body int64
		if vlen := int(binary.LittleEndian.Uint16(meta[vt:])); vlen > 10 {
			if off := int(binary.LittleEndian.Uint16(meta[vt+10:])); off != 0 {
				body = int64(binary.LittleEndian.Uint64(meta[root+off:]))
			}
		}
		at += 8 + metaLen + int(body)
		ends = append(ends, at)
	}
	t.Fatalf("no end-of-stream marker in %d bytes", len(data))
	return nil
}

// cut returns the stream cut after its first k messages (the schema and
// k-1 batches), without the end-of-stream marker, or with it (as a copy
// that dropped batches would be).
func cut(t *testing.T, data []byte, k int, marker bool) []byte {
	t.Helper()
	ends := messageEnds(t, data)
	if k >= len(ends) {
		t.Fatalf("cut after %d of %d messages", k, len(ends))
	}
	out := bytes.Clone(data[:ends[k-1]])
	if marker {
		out = append(out, ipcEOS...)
	}
	return out
}

// tinyTrain is args after the tiny training set's flags.
func tinyTrain(args ...string) []string {
	return append([]string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name"}, args...)
}

func text(s string) func() []byte { return func() []byte { return []byte(s) } }

// table is an Arrow stream of float64 and string columns, written by
// format's table writer (no gpc:schema).
func table(t *testing.T, cols ...format.Column) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := format.WriteTable(&buf, &format.Table{Cols: cols}, format.Arrow, 0, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func catalogue(t *testing.T) []badInput {
	fx := getFixtures(t)
	sh := getShardFixtures(t)
	const trainCSV = "a,b,y\n1,2,1\n2,1,-1\n"
	const train3CSV = "a,y\n1,a\n2,b\n3,c\n"
	manyClasses := func() []byte { // 257 classes, one point each
		var b strings.Builder
		b.WriteString("x,y\n")
		for i := range 257 {
			fmt.Fprintf(&b, "%d,c%d\n", i, i)
		}
		return []byte(b.String())
	}
	huge := func() []byte { // 400000 training rows: a 1.2 TB covariance
		var b strings.Builder
		b.WriteString("x,y\n")
		for i := range 400000 {
			b.WriteString([]string{"1,1\n", "2,-1\n"}[i%2])
		}
		return []byte(b.String())
	}
	return []badInput{
		// gpc-orthant: the covariance reader, the matrix, the flags.
		{tool: "gpc-orthant", what: "empty input", stdin: "/dev/null", code: ExitData, want: "stdin: empty input"},
		{tool: "gpc-orthant", what: "binary data that is neither Arrow nor text", stdin: "junk.bin", input: text("\x00\x01\x02\x03\x04\x05\x06\x07\x08"), code: ExitData, want: "binary content"},
		{tool: "gpc-orthant", what: "an Arrow stream truncated inside a message", stdin: "truncated.arrows", input: func() []byte { return fx.good3[:len(fx.good3)-40] }, code: ExitData, want: "stdin: batch 1"},
		{tool: "gpc-orthant", what: "a gpc stream cut at a batch boundary (no end-of-stream marker)", stdin: "cut.arrows", input: func() []byte { return cut(t, fx.cov, 3, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-orthant", what: "a stream with fewer rows than its gpc:rows (batches dropped, marker kept)", stdin: "short.arrows", input: func() []byte { return cut(t, fx.cov, 6, true) }, code: ExitData, want: "10 rows but the metadata (gpc:rows) announces 12"},
		{tool: "gpc-orthant", what: "a stream with a schema and no rows", stdin: "schema-only.arrows", input: func() []byte { return cut(t, fx.cov, 1, true) }, code: ExitData, want: "no rows"},
		{tool: "gpc-orthant", what: "wrong gpc:schema: a cloud where a covariance is expected", stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, code: ExitData, want: `schema "gpc.cloud/3" where a covariance stream`},
		{tool: "gpc-orthant", what: "wrong gpc:schema: posteriors where a covariance is expected", stdin: "posteriors.arrows", input: func() []byte { return fx.post }, code: ExitData, want: `schema "gpc.posteriors/1"`},
		{tool: "gpc-orthant", what: "schema mismatch: a cov column that is not a list", stdin: "cov-float.arrows", input: func() []byte { return table(t, format.Column{Name: "cov", Float: []float64{1}}) }, code: ExitData, want: `column "cov": type float64`},
		{tool: "gpc-orthant", what: "schema mismatch: a text column among the matrix columns", stdin: "text-column.arrows", input: func() []byte {
			return table(t, format.Column{Name: "a", Float: []float64{1, 0}}, format.Column{Name: "b", Str: []string{"0", "1"}})
		}, code: ExitData, want: `column "b" has type utf8`},
		{tool: "gpc-orthant", what: "NaN in a CSV matrix", stdin: "nan.csv", input: text("1,NaN\nNaN,1\n"), code: ExitData, want: "line 1, column 2"},
		{tool: "gpc-orthant", what: "Inf in a CSV matrix", stdin: "inf.csv", input: text("1,0\n0,Inf\n"), code: ExitData, want: "line 2, column 2"},
		{tool: "gpc-orthant", what: "NaN in an Arrow matrix", stdin: "nan.arrows", input: func() []byte {
			return table(t, format.Column{Name: "a", Float: []float64{1, math.NaN()}}, format.Column{Name: "b", Float: []float64{0, 1}})
		}, code: ExitData, want: `row 1, column "a": value NaN`},
		{tool: "gpc-orthant", what: "an empty (null) CSV entry", stdin: "null.csv", input: text("1,\n0,1\n"), code: ExitData, want: "line 1, column 2: empty field"},
		{tool: "gpc-orthant", what: "a ragged CSV matrix", stdin: "ragged.csv", input: text("1,0\n0\n"), code: ExitData, want: "line 2"},
		{tool: "gpc-orthant", what: "a CSV matrix that is not square", stdin: "3x2.csv", input: text("1,0\n0,1\n0,0\n"), code: ExitData, want: "not square"},
		{tool: "gpc-orthant", what: "an Arrow matrix that is not square", stdin: "3x2.arrows", input: func() []byte {
			return table(t, format.Column{Name: "a", Float: []float64{1, 0, 0}}, format.Column{Name: "b", Float: []float64{0, 1, 0}})
		}, code: ExitData, want: "not square"},
		{tool: "gpc-orthant", what: "an asymmetric matrix", stdin: "asym.csv", input: text("1,0.5\n0.4,1\n"), code: ExitData, want: "not symmetric"},
		{tool: "gpc-orthant", what: "a matrix that is not positive definite", stdin: "notpd.arrows", input: func() []byte { return fx.notPD }, code: ExitData, want: "not positive definite"},
		{tool: "gpc-orthant", what: "a lower bound above its upper bound", stdin: "box.csv", input: text("a,b,lower,upper\n1,0,1,0\n0,1,0,1\n"), code: ExitData, want: "exceeds its upper bound"},
		{tool: "gpc-orthant", what: "Parquet where a covariance is expected", stdin: "cov.parquet", input: text("PAR1\x00\x00\x00\x00PAR1"), code: ExitData, want: "Parquet is not read as a covariance"},
		{tool: "gpc-orthant", what: "--order interleave on a covariance without labels", args: []string{"testdata/equicorr3.csv", "--order", "interleave"}, code: ExitData, want: "has none"},
		{tool: "gpc-orthant", what: "absurd flag: --samples 0", args: []string{"--samples", "0"}, stdin: "cov.csv", input: text("1\n"), code: ExitUsage, want: "--samples 0"},
		{tool: "gpc-orthant", what: "a run that cannot fit in memory: --samples 10^15", args: []string{"--samples", "1000000000000000", "testdata/equicorr3.csv"}, code: ExitUsage, want: "use fewer samples"},
		{tool: "gpc-orthant", what: "a run that cannot fit in memory: a fixed --groups whose groups do not", args: []string{"--samples", "100000", "--groups", "2", "--max-memory", "1MB", "testdata/equicorr3.csv"}, code: ExitUsage, want: "use fewer samples"},
		{tool: "gpc-orthant", what: "absurd flag: --max-memory 8XB", args: []string{"--max-memory", "8XB", "testdata/equicorr3.csv"}, code: ExitUsage, want: "is not a memory size"},
		{tool: "gpc-orthant", what: "absurd flag: more groups than pairs of particles", args: []string{"--samples", "100", "--groups", "60"}, code: ExitUsage, want: "--groups 60"},
		{tool: "gpc-orthant", what: "absurd flag: --ess outside (0, 1]", args: []string{"--ess", "1.5"}, code: ExitUsage, want: "--ess 1.5"},
		{tool: "gpc-orthant", what: "absurd flag: negative --jitter", args: []string{"--jitter=-1"}, code: ExitUsage, want: "--jitter"},
		{tool: "gpc-orthant", what: "absurd flag: negative --threads", args: []string{"--threads=-1"}, code: ExitUsage, want: "--threads -1"},
		{tool: "gpc-orthant", what: "an unknown --method", args: []string{"--method", "mcmc"}, code: ExitUsage, want: "--method"},
		{tool: "gpc-orthant", what: "an unknown flag", args: []string{"--frobnicate"}, code: ExitUsage, want: "unknown flag"},
		{tool: "gpc-orthant", what: "two inputs", args: []string{"a.csv", "b.csv"}, code: ExitUsage, want: "unexpected argument"},
		{tool: "gpc-orthant", what: "an input file that does not exist", args: []string{"no-such-file.csv"}, code: ExitIO, want: "no such file"},
		{tool: "gpc-orthant", what: "an input that cannot be read (a directory)", args: []string{"testdata"}, code: ExitIO, want: "is a directory"},
		// gpc-kernel: features and labels.
		{tool: "gpc-kernel", what: "no label column", args: []string{"--train", "-", "--label", "class"}, stdin: "train.csv", input: text(trainCSV), code: ExitData, want: `no label column "class"`},
		{tool: "gpc-kernel", what: "one class only", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,y\n1,1\n2,1\n"), code: ExitData, want: `every training label is "1": a classifier needs at least two classes`},
		{tool: "gpc-kernel", what: "more classes than gpc handles (an identifier as the label)", args: []string{"--train", "-"}, stdin: "train.csv", input: manyClasses, code: ExitData, want: `label value "c256" is the 257-th: gpc classifies into at most 256 classes`},
		{tool: "gpc-kernel", what: "--positive with more than two classes", args: []string{"--train", "-", "--positive", "b"}, stdin: "train.csv", input: text(train3CSV), code: ExitData, want: "--positive chooses between two classes"},
		{tool: "gpc-kernel", what: "--class-beta without one value per class", args: []string{"--train", "-", "--class-beta", "1,2"}, stdin: "train.csv", input: text(train3CSV), code: ExitUsage, want: `--class-beta has 2 values for the 3 classes "a", "b", "c"`},
		{tool: "gpc-kernel", what: "a test label unseen in training (multi-class)", args: []string{"--train", "@train3.csv", "--test", "-"}, files: map[string][]byte{"train3.csv": []byte(train3CSV)}, stdin: "test.csv", input: text("a,y\n1,d\n"), code: ExitData, want: `line 2, column "y": unknown label "d": the training labels have 3 classes, "a", "b", "c"`},
		{tool: "gpc-kernel", what: "numeric labels other than +1/-1 or 1/0", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,y\n1,2\n2,3\n"), code: ExitData, want: "numeric labels must be +1/-1 or 1/0"},
		{tool: "gpc-kernel", what: "an unknown label in the test file", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--test", "-"}, stdin: "test.csv", input: text("name,a,b,sex\nt1,1,2,X\n"), code: ExitData, want: `unknown label "X"`},
		{tool: "gpc-tune", what: "training labels of one class", args: []string{"--train", "-", "--beta", "1,2", "--label", "sex", "--positive", "M"}, stdin: "train.csv", input: text("a,sex\n1,M\n2,M\n"), code: ExitData, want: `every training label is "M"`},
		{tool: "gpc-kernel", what: "text labels without --positive", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,y\n1,cat\n2,dog\n"), code: ExitData, want: "give --positive"},
		{tool: "gpc-kernel", what: "--positive that is not a label value", args: []string{"--train", "-", "--positive", "cow"}, stdin: "train.csv", input: text("a,y\n1,cat\n2,dog\n"), code: ExitData, want: `--positive "cow" is not a label value`},
		{tool: "gpc-kernel", what: "a missing (null) training label", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,y\n1,1\n2,\n3,-1\n"), code: ExitData, want: "line 3, column \"y\": the label is missing"},
		{tool: "gpc-kernel", what: "mismatched feature columns: the test file lacks one", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--test", "-"}, stdin: "test.csv", input: text("name,a\nt1,1\n"), code: ExitData, want: `no column "b"`},
		{tool: "gpc-kernel", what: "mismatched feature columns: the test file has another", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--test", "-"}, stdin: "test.csv", input: text("name,a,b,c\nt1,1,2,3\n"), code: ExitData, want: `column "c" is not among`},
		{tool: "gpc-kernel", what: "NaN in a feature", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n1,NaN,1\n2,1,-1\n"), code: ExitData, want: `line 2, column "b"`},
		{tool: "gpc-kernel", what: "a missing (NA) feature value", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n1,NA,1\n2,1,-1\n"), code: ExitData, want: `line 2, column "b": feature value "NA"`},
		{tool: "gpc-kernel", what: "text in a feature column", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n1,x,1\n2,1,-1\n"), code: ExitData, want: `"x" is not a number`},
		{tool: "gpc-kernel", what: "a CSV header naming a column twice", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,a,y\n1,2,1\n"), code: ExitData, want: `column name "a" appears twice`},
		{tool: "gpc-kernel", what: "a ragged CSV file", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n1,2\n"), code: ExitData, want: "line 2"},
		{tool: "gpc-kernel", what: "a header and no rows", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n"), code: ExitData, want: "no training rows"},
		{tool: "gpc-kernel", what: "an empty file", args: []string{"--train", "-"}, stdin: "/dev/null", code: ExitData, want: "empty input"},
		{tool: "gpc-kernel", what: "a run that cannot fit in memory: 400000 training rows", args: []string{"--train", "-"}, stdin: "big.csv", input: huge, code: ExitData, want: "400000 training rows make a 400000 x 400000 covariance of about 1.2 TiB"},
		{tool: "gpc-kernel", what: "--kernel ard with one --alpha per feature too many", args: []string{"--train", "-", "--kernel", "ard", "--alpha", "1,2,3"}, stdin: "train.csv", input: text(trainCSV), code: ExitUsage, want: "needs 2 length scale(s) alpha, got 3"},
		{tool: "gpc-kernel", what: "absurd flag: negative --beta", args: []string{"--train", "-", "--beta=-1"}, stdin: "train.csv", input: text(trainCSV), code: ExitUsage, want: "beta -1"},
		{tool: "gpc-kernel", what: "no --train", args: []string{}, code: ExitUsage, want: "missing flags: --train"},
		{tool: "gpc-kernel", what: "--train and --test both on standard input", args: []string{"--train", "-", "--test", "-"}, code: ExitUsage, want: "cannot both"},
		{tool: "gpc-kernel", what: "--id naming a column of neither file", args: []string{"--train", "-", "--test", "@test.csv", "--id", "name"}, stdin: "train.csv", input: text(trainCSV), files: map[string][]byte{"test.csv": []byte("b,a\n1,2\n")}, code: ExitData, want: `no column "name" (--id) in the training file stdin`},
		{tool: "gpc-kernel", what: "--label and --id the same column", args: []string{"--train", "-", "--id", "y"}, code: ExitUsage, want: "same column"},
		{tool: "gpc-kernel", what: "a --train file that does not exist", args: []string{"--train", "no-such-file.csv"}, code: ExitIO, want: "no such file"},

		// gpc-train: the covariance stream.
		{tool: "gpc-train", what: "wrong gpc:schema: a cloud where a covariance is expected", stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, code: ExitData, want: `schema "gpc.cloud/3"`},
		{tool: "gpc-train", what: "a covariance that is not positive definite", stdin: "notpd.arrows", input: func() []byte { return fx.notPD }, code: ExitData, want: "not positive definite"},
		{tool: "gpc-train", what: "a covariance stream cut inside the train block", stdin: "cut.arrows", input: func() []byte { return cut(t, fx.cov, 3, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-train", what: "a features file where a covariance is expected", stdin: "train.csv", input: text("sp,FL,RW,y\n0,8.8,7.7,1\n1,9.2,7.8,-1\n"), code: ExitData, want: "the matrix is not square: 3 columns but 2 rows"},
		{tool: "gpc-train", what: "a header without rows", stdin: "x.csv", input: text("x\n"), code: ExitData, want: "1 columns but 0 rows"},
		{tool: "gpc-train", what: "absurd flag: --samples 1", args: []string{"--samples", "1"}, code: ExitUsage, want: "--samples 1"},
		{tool: "gpc-train", what: "a negative flag value: --samples -5", args: []string{"--samples", "-5"}, code: ExitUsage, want: "--samples -5: at least 2 particles are needed"},
		{tool: "gpc-train", what: "a --max-memory too small for the particles", args: []string{"--max-memory", "1KB"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitUsage, want: "raise --max-memory or use fewer samples"},
		{tool: "gpc-train", what: "a cloud that cannot fit in memory: --samples 10^13", args: []string{"--samples", "10000000000000"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitUsage, want: "use fewer samples"},
		{tool: "gpc-train", what: "absurd flag: --batch-size 0", args: []string{"--batch-size", "0"}, code: ExitUsage, want: "--batch-size 0"},

		// gpc-predict: the cloud, and a cloud with a covariance.
		{tool: "gpc-predict", what: "empty input", stdin: "/dev/null", code: ExitData, want: "empty input"},
		{tool: "gpc-predict", what: "a covariance where a cloud is expected", stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "where a cloud"},
		{tool: "gpc-predict", what: "posteriors where a cloud is expected", stdin: "posteriors.arrows", input: func() []byte { return fx.post }, code: ExitData, want: `schema "gpc.posteriors/1" where a cloud`},
		{tool: "gpc-predict", what: "CSV where a cloud is expected", stdin: "cloud.csv", input: text("1,0\n0,1\n"), code: ExitData, want: "a cloud is an Arrow IPC stream"},
		{tool: "gpc-predict", what: "a cloud truncated inside its schema", stdin: "truncated.arrows", input: func() []byte { return fx.cloud[:300] }, code: ExitData, want: "the stream ends inside its schema, the first message: it was cut short"},
		{tool: "gpc-predict", what: "a cloud truncated inside a record batch's metadata", stdin: "truncated.arrows", input: func() []byte { return fx.cloud[:messageEnds(t, fx.cloud)[5]+100] }, code: ExitData, want: "batch 5: the stream ends inside message 6's metadata: it was cut short"},
		{tool: "gpc-predict", what: "a cloud truncated inside a record batch's body", stdin: "truncated.arrows", input: func() []byte { return fx.cloud[:messageEnds(t, fx.cloud)[6]-8] }, code: ExitData, want: "the stream ends inside message 6's body (a record batch's data): it was cut short"},
		{tool: "gpc-predict", what: "a cloud cut at a batch boundary among the particles", stdin: "cut.arrows", input: func() []byte { return cut(t, fx.cloud, 3, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-predict", what: "a cloud cut at its last batch boundary", stdin: "cut.arrows", input: func() []byte { return cut(t, fx.cloud, len(messageEnds(t, fx.cloud))-1, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-predict", what: "a cloud with fewer rows than its gpc:rows (batches dropped, marker kept)", stdin: "short.arrows", input: func() []byte { return cut(t, fx.cloud, len(messageEnds(t, fx.cloud))-1, true) }, code: ExitData, want: "before the row of group 3: it was cut short"},
		{tool: "gpc-predict", what: "a cloud with test rows before the particles but no gpc:tests_first", stdin: "cloud.arrows", input: func() []byte {
			return bytes.Replace(fx.cloud, []byte(format.KeyTestsFirst), []byte("gpc:tests_firsX"), 1)
		}, code: ExitData, want: `a "test" row where particle 0 of group 0 was expected`},
		{tool: "gpc-predict", what: "a cloud without its gpc:group_sizes metadata", stdin: "cloud.arrows", input: func() []byte {
			return bytes.Replace(fx.cloud, []byte(format.KeyGroupSizes), []byte("gpc:group_sizeX"), 1)
		}, code: ExitData, want: "metadata gpc:group_sizes is missing"},
		{tool: "gpc-predict", what: "a cloud without its gpc:order metadata", stdin: "cloud.arrows", input: func() []byte {
			return bytes.Replace(fx.cloud, []byte("gpc:order\x00"), []byte("gpc:orde_\x00"), 1)
		}, code: ExitData, want: "metadata gpc:order is missing"},
		{tool: "gpc-predict", what: "a cloud whose factor rows do not match its metadata (EP's sites gone)", stdin: "cloud.arrows", input: func() []byte {
			return bytes.Replace(fx.cloud, []byte(format.KeyFactorTau), []byte("gpc:factor_taX"), 1)
		}, code: ExitData, want: `column "z" has 1 entries, want 0`},
		{tool: "gpc-predict", what: "a cloud with factor rows that calls itself gpc.cloud/2", stdin: "cloud.arrows", input: func() []byte {
			return bytes.Replace(fx.cloud, []byte(format.SchemaCloud), []byte("gpc.cloud/2"), 1)
		}, code: ExitData, want: "metadata gpc:factor in a gpc.cloud/2 stream"},
		{tool: "gpc-predict", what: "a cloud and a covariance that do not belong together", args: []string{"--cloud", "@cloud.arrows", "-"}, stdin: "other-cov.arrows",
			files: map[string][]byte{"cloud.arrows": fx.cloud},
			input: func() []byte {
				return runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "2")})
			}, code: ExitData, want: "is not the one cloud.arrows was trained on"},
		{tool: "gpc-predict", what: "--cloud and the input both on standard input", args: []string{"--cloud", "-"}, code: ExitUsage, want: "--cloud - reads the cloud from standard input, so the covariance stream cannot come from there too"},
		{tool: "gpc-predict", what: "--cloud - (the cloud on standard input) with another covariance's file", args: []string{"--cloud", "-", "@other-cov.arrows"}, stdin: "cloud.arrows",
			files: map[string][]byte{"other-cov.arrows": runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "2")})},
			input: func() []byte { return fx.cloud }, code: ExitData, want: "is not the one stdin was trained on"},
		{tool: "gpc-predict", what: "absurd flag: --batch-size 0", args: []string{"--batch-size", "0"}, code: ExitUsage, want: "--batch-size 0"},
		{tool: "gpc-predict", what: "an unknown --count", args: []string{"--count", "exact"}, code: ExitUsage, want: "--count"},
		{tool: "gpc-predict", what: "a --cloud file that does not exist", args: []string{"--cloud", "@no-such-cloud.arrows"}, code: ExitIO, want: "no such file"},
		{tool: "gpc-predict", what: "an input file that does not exist", args: []string{"no-such-file.arrows"}, code: ExitIO, want: "no such file"},
		{tool: "gpc-predict", what: "a cloud without test rows (gpc-kernel had no --test)", stdin: "cloud.arrows", input: func() []byte {
			return runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: runCLI(t, Kernel, cliCase{args: tinyTrain()})})
		}, code: ExitData, want: "the cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict: give gpc-kernel --test FILE, or save the cloud"},
		{tool: "gpc-predict", what: "a covariance without test rows beside a saved cloud", args: []string{"--cloud", "@cloud.arrows", "-"}, stdin: "train-cov.arrows",
			files: map[string][]byte{"cloud.arrows": fx.cloud},
			input: func() []byte { return runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5")}) },
			code:  ExitData, want: "the covariance has no test rows"},

		// gpc-show: any stream.
		{tool: "gpc-show", what: "empty input", stdin: "/dev/null", code: ExitData, want: "empty input"},
		{tool: "gpc-show", what: "CSV where a stream is expected", args: []string{"testdata/tiny-train.csv"}, code: ExitData, want: "not an Arrow IPC stream (gpc-show reads the tools' streams; a CSV file is already a table)"},
		{tool: "gpc-show", what: "a stream cut at a batch boundary", stdin: "cut.arrows", input: func() []byte { return cut(t, fx.cloud, 3, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		// Every tool: an output that cannot be written.
		{tool: "gpc-orthant", what: "an output that cannot be written (a full disk)", args: []string{"testdata/equicorr3.csv", "--samples", "100"}, stdin: "", full: true, code: ExitIO, want: "write output: no space left on device"},
		// gpc-tune: the grid, the stages' flags, the features.
		{tool: "gpc-tune", what: "nothing to tune: no hyperparameter with several values", args: tinyTrain("--beta", "2"), code: ExitUsage, want: "nothing to tune"},
		{tool: "gpc-tune", what: "a range that is not LO:HI:K", args: tinyTrain("--beta", "1:10"), code: ExitUsage, want: `--beta "1:10": a range is LO:HI:K`},
		{tool: "gpc-tune", what: "a range with LO above HI", args: tinyTrain("--beta", "10:1:3"), code: ExitUsage, want: "0 < LO < HI"},
		{tool: "gpc-tune", what: "a range of one value", args: tinyTrain("--alpha", "1:10:1"), code: ExitUsage, want: "at least 2"},
		{tool: "gpc-tune", what: "NaN in a grid", args: tinyTrain("--beta", "1,NaN"), code: ExitUsage, want: `"NaN" is not a finite number`},
		{tool: "gpc-tune", what: "Inf in a grid", args: tinyTrain("--alpha", "1,Inf"), code: ExitUsage, want: `"Inf" is not a finite number`},
		{tool: "gpc-tune", what: "zero in a grid (the grid is in log)", args: tinyTrain("--beta", "0,1"), code: ExitUsage, want: "grid values must be > 0"},
		{tool: "gpc-tune", what: "a value listed twice", args: tinyTrain("--beta", "1,3,1"), code: ExitUsage, want: "listed twice"},
		{tool: "gpc-tune", what: "a grid of more than 10^6 points", args: tinyTrain("--alpha", "1:2:1001", "--beta", "1:2:1001"), code: ExitUsage, want: "more than 1000000 points"},
		{tool: "gpc-tune", what: "--alpha for the linear kernel", args: tinyTrain("--kernel", "linear", "--alpha", "2", "--beta", "1,2"), code: ExitUsage, want: "no length scale"},
		{tool: "gpc-tune", what: "--kernel ard with too few --alpha", args: tinyTrain("--kernel", "ard", "--alpha", "1:4:3", "--beta", "1,2"), code: ExitUsage, want: "1 given, the training file has 2 features (a, b)"},
		{tool: "gpc-tune", what: "absurd flag: --exploit-samples 1", args: tinyTrain("--beta", "1,2", "--exploit-samples", "1"), code: ExitUsage, want: "--exploit-samples 1"},
		{tool: "gpc-tune", what: "absurd flag: negative --exploit", args: tinyTrain("--beta", "1,2", "--exploit=-1"), code: ExitUsage, want: "--exploit -1"},
		{tool: "gpc-tune", what: "a run that cannot fit in memory: --exploit-samples 10^15", args: tinyTrain("--beta", "1,2", "--exploit-samples", "1000000000000000"), code: ExitUsage, want: "--exploit-samples 1000000000000000: a group of"},
		{tool: "gpc-tune", what: "NaN in a feature", args: []string{"--train", "-", "--beta", "1,2"}, stdin: "train.csv", input: text("a,b,y\n1,NaN,1\n2,1,-1\n"), code: ExitData, want: `line 2, column "b"`},
		{tool: "gpc-mcmc", what: "more than two classes", args: []string{"--train", "-"}, stdin: "train.csv", input: text(train3CSV), code: ExitData, want: "this tool handles two"},
		{tool: "gpc-tune", what: "no label column", args: []string{"--train", "-", "--beta", "1,2", "--label", "class"}, stdin: "train.csv", input: text(trainCSV), code: ExitData, want: `no label column "class"`},
		{tool: "gpc-tune", what: "wrong input: a covariance stream where features are expected", args: []string{"--train", "-", "--beta", "1,2"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "a gpc.covariance/1 stream, not features"},
		{tool: "gpc-tune", what: "a --train file that does not exist", args: []string{"--train", "no-such-file.csv", "--beta", "1,2"}, code: ExitIO, want: "no such file"},
		// gpc-mcmc: the chain's flags, the test file, the posteriors file.
		{tool: "gpc-mcmc", what: "--posteriors without --test", args: tinyTrain("--posteriors", "p.csv"), code: ExitUsage, want: "--posteriors needs --test"},
		{tool: "gpc-mcmc", what: "--test without --posteriors", args: tinyTrain("--test", "testdata/tiny-test.csv"), code: ExitUsage, want: "--test needs --posteriors"},
		{tool: "gpc-mcmc", what: "a starting --beta of 0 (the chain moves in log beta)", args: tinyTrain("--beta", "0"), code: ExitUsage, want: "--beta 0"},
		{tool: "gpc-mcmc", what: "a starting --alpha of NaN", args: tinyTrain("--alpha", "NaN"), code: ExitUsage, want: "alpha NaN"},
		{tool: "gpc-mcmc", what: "absurd flag: --prior-sd 0", args: tinyTrain("--prior-sd", "0"), code: ExitUsage, want: "--prior-sd 0"},
		{tool: "gpc-mcmc", what: "absurd flag: --step NaN", args: tinyTrain("--step", "NaN"), code: ExitUsage, want: "--step NaN"},
		{tool: "gpc-mcmc", what: "absurd flag: --iterations 0", args: tinyTrain("--iterations", "0"), code: ExitUsage, want: "--iterations 0"},
		{tool: "gpc-mcmc", what: "absurd flag: negative --refresh", args: tinyTrain("--refresh=-1"), code: ExitUsage, want: "--refresh -1"},
		{tool: "gpc-mcmc", what: "--kernel ard with one --alpha too many", args: tinyTrain("--kernel", "ard", "--alpha", "1,2,3"), code: ExitUsage, want: "needs 2 length scale(s) alpha, got 3"},
		{tool: "gpc-mcmc", what: "a run that cannot fit in memory: --samples 10^15", args: tinyTrain("--samples", "1000000000000000"), code: ExitUsage, want: "use fewer samples"},
		{tool: "gpc-mcmc", what: "--train and --test both on standard input", args: []string{"--train", "-", "--test", "-", "--posteriors", "p.csv"}, code: ExitUsage, want: "cannot both read standard input"},
		{tool: "gpc-mcmc", what: "mismatched feature columns: the test file lacks one", args: tinyTrain("--test", "-", "--posteriors", "@p.csv"), stdin: "test.csv", input: text("name,a,sex\nt1,1,M\n"), code: ExitData, want: `no column "b"`},
		{tool: "gpc-mcmc", what: "wrong input: a cloud where features are expected", args: []string{"--train", "-"}, stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, code: ExitData, want: "a gpc.cloud/3 stream, not features"},
		{tool: "gpc-mcmc", what: "a --posteriors file that cannot be created", args: tinyTrain("--test", "testdata/tiny-test.csv", "--posteriors", "no-such-dir/p.csv", "--samples", "64", "--iterations", "2", "--burn", "0"), code: ExitIO, want: "create --posteriors"},

		// gpc-fit: a gradient where there is none, an optimizer that does not
		// converge, a non-finite gradient; gpc-kernel --hyper's table.
		{tool: "gpc-fit", what: "a run that cannot fit in memory: 400000 training rows on the dense path", args: []string{"--train", "-"}, stdin: "big.csv", input: huge, code: ExitData, want: "gpc-fit --vecchia auto fits on the Vecchia path instead"},
		{tool: "gpc-fit", what: "--vecchia with a flag of the exact stage but not --vecchia-exact: --hessian", args: tinyTrain("--vecchia", "3", "--hessian"), code: ExitUsage, want: "--hessian with --vecchia: it is the exact stage's"},
		{tool: "gpc-fit", what: "--vecchia-exact with a flag the Vecchia path does not have: --no-ep", args: tinyTrain("--vecchia", "3", "--vecchia-exact", "--no-ep"), code: ExitUsage, want: "--no-ep with --vecchia"},
		{tool: "gpc-fit", what: "--vecchia-exact without --vecchia", args: tinyTrain("--vecchia-exact"), code: ExitUsage, want: "--vecchia-exact without --vecchia"},
		{tool: "gpc-fit", what: "--vecchia-exact with three classes", args: []string{"--train", "-", "--vecchia", "2", "--vecchia-exact"}, stdin: "train.csv", input: text(train3CSV), code: ExitUsage, want: "built for two"},
		{tool: "gpc-fit", what: "--vecchia with a kernel per class", args: []string{"--train", "-", "--vecchia", "3", "--per-class"}, stdin: "train.csv", input: text(train3CSV), code: ExitUsage, want: "--per-class with --vecchia"},
		{tool: "gpc-fit", what: "--vecchia m with no more than m training points", args: tinyTrain("--vecchia", "50"), code: ExitUsage, want: "give --vecchia below"},
		{tool: "gpc-fit", what: "--vecchia auto with no more than 50 training points", args: tinyTrain("--vecchia", "auto"), code: ExitUsage, want: "--vecchia auto: it conditions each point on m = 50 neighbours"},
		{tool: "gpc-fit", what: "--vecchia with more neighbours than the Vecchia path takes", args: tinyTrain("--vecchia", "255"), code: ExitUsage, want: "at most 254 neighbours"},
		{tool: "gpc-fit", what: "--vecchia from a start where the kernel is practically diagonal: --alpha 1e-160", args: tinyTrain("--vecchia", "3", "--alpha", "1e-160"), code: ExitData, want: "practically diagonal"},
		{tool: "gpc-fit", what: "a method without a gradient: --method paper-hard", args: tinyTrain("--method", "paper-hard"), code: ExitUsage, want: "gives no gradient"},
		{tool: "gpc-fit", what: "a starting --beta of 0 (the fit moves log beta)", args: tinyTrain("--beta", "0"), code: ExitUsage, want: "--beta 0"},
		{tool: "gpc-fit", what: "absurd flag: --rounds 0", args: tinyTrain("--rounds", "0"), code: ExitUsage, want: "--rounds 0"},
		{tool: "gpc-fit", what: "absurd flag: --prior-sd NaN", args: tinyTrain("--prior-sd", "NaN"), code: ExitUsage, want: "--prior-sd NaN"},
		{tool: "gpc-fit", what: "an optimizer that does not converge: one iteration from far away", args: []string{"--train", "../../examples/crabs/train.csv", "--standardize", "--no-ep", "--rounds", "1", "--iterations", "1", "--alpha", "0.3", "--beta", "0.1"}, code: ExitData, want: "did not converge"},
		{tool: "gpc-fit", what: "a start where the kernel is practically diagonal: matern32 at --alpha 1e-160", args: tinyTrain("--kernel", "matern32", "--alpha", "1e-160"), code: ExitData, want: "practically diagonal"},
		{tool: "gpc-fit", what: "a start where the kernel is practically diagonal: sonar's ard at the old default, --alpha 1", args: []string{"--train", "../../bench/repro/testdata/sonar/train.csv", "--standardize", "--kernel", "ard", "--alpha", "1"}, code: ExitData, want: "start from a larger --alpha"},
		{tool: "gpc-fit", what: "a start where the kernel is practically constant: --alpha 1e9", args: tinyTrain("--alpha", "1e9"), code: ExitData, want: "start from a smaller --alpha"},
		{tool: "gpc-fit", what: "a start where the latent function is negligible: --beta 1e-9", args: tinyTrain("--beta", "1e-9"), code: ExitData, want: "start from a larger --beta"},
		{tool: "gpc-fit", what: "a fit that ends where the latent function is negligible: labels no linear function of the feature explains", args: []string{"--train", "-", "--kernel", "linear"}, stdin: "train.csv", input: text("a,y\n1.00,1\n1.01,-1\n1.02,1\n1.03,-1\n0.99,-1\n0.98,1\n1.04,-1\n0.97,1\n"), code: ExitData, want: "at the fit's end the latent function is negligible"},
		{tool: "gpc-fit", what: "every training point the same", args: []string{"--train", "-"}, stdin: "train.csv", input: text("a,b,y\n1,2,1\n1,2,-1\n1,2,1\n"), code: ExitData, want: "every training point is the same"},
		{tool: "gpc-fit", what: "absurd flag: --restarts -1", args: tinyTrain("--restarts", "-1"), code: ExitUsage, want: "--restarts -1"},
		{tool: "gpc-fit", what: "--per-class with two classes", args: tinyTrain("--per-class"), code: ExitUsage, want: "for three or more classes"},
		{tool: "gpc-fit", what: "--class-beta without one value per class", args: []string{"--train", "-", "--class-beta", "1,2"}, stdin: "train.csv", input: text(train3CSV), code: ExitUsage, want: `--class-beta has 2 values for the 3 classes`},
		{tool: "gpc-kernel", what: "--hyper: a kernel per class, for two classes", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: "hyper.csv", input: text("kernel,name,value,class\nrbf,alpha,2,M\nrbf,beta,3,M\n"), code: ExitData, want: "a kernel per class (class \"M\"), but the training labels have two classes"},
		{tool: "gpc-kernel", what: "--hyper: a kernel per class, one class missing", args: []string{"--train", "@train3.csv", "--hyper", "-"}, files: map[string][]byte{"train3.csv": []byte(train3CSV)}, stdin: "hyper.csv", input: text("kernel,name,value,class\nrbf,alpha,2,a\nrbf,beta,3,a\nrbf,alpha,2,b\nrbf,beta,3,b\n"), code: ExitData, want: `no hyperparameters for class "c"`},
		{tool: "gpc-kernel", what: "--hyper: a kernel per class, a class the training labels lack", args: []string{"--train", "@train3.csv", "--hyper", "-"}, files: map[string][]byte{"train3.csv": []byte(train3CSV)}, stdin: "hyper.csv", input: text("kernel,name,value,class\nrbf,alpha,2,z\nrbf,beta,3,z\n"), code: ExitData, want: `hyperparameters of class "z": the training labels have no such class`},
		{tool: "gpc-kernel", what: "--hyper: a table without a value column", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: "hyper.csv", input: text("kernel,name\nrbf,beta\n"), code: ExitData, want: `no column "value"`},
		{tool: "gpc-kernel", what: "--hyper: fitted with --standardize, used without", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: "hyper.csv", input: text("kernel,name,feature,value,standardize\nrbf,alpha,,2,1\nrbf,beta,,3,1\n"), code: ExitData, want: "fitted with --standardize"},
		{tool: "gpc-kernel", what: "--hyper: an ard length scale of a feature the training file lacks", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: "hyper.csv", input: text("kernel,name,feature,value\nard,alpha,a,2\nard,alpha,c,2\nard,beta,,3\n"), code: ExitData, want: `feature "c"`},
		{tool: "gpc-kernel", what: "--hyper: a negative value", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: "hyper.csv", input: text("kernel,name,value\nrbf,alpha,2\nrbf,beta,-3\n"), code: ExitData, want: "beta value"},
		{tool: "gpc-kernel", what: "--hyper and --train both on standard input", args: []string{"--train", "-", "--hyper", "-"}, code: ExitUsage, want: "cannot both read standard input"},

		{tool: "gpc-kernel", what: "an output that cannot be written (a full disk)", args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name"}, full: true, code: ExitIO, want: "write covariance: no space left on device"},
		{tool: "gpc-train", what: "an output that cannot be written (a full disk)", args: []string{"--samples", "100"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, full: true, code: ExitIO, want: "write cloud: arrow/ipc: could not write payload message body: no space left on device"},
		{tool: "gpc-predict", what: "an output that cannot be written (a full disk)", stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, full: true, code: ExitIO, want: "write output: no space left on device"},
		{tool: "gpc-tune", what: "an output that cannot be written (a full disk)", args: tinyTrain("--beta", "1,2", "--samples", "64", "--exploit-samples", "64", "--no-optimize"), full: true, code: ExitIO, want: "no space left on device"},
		{tool: "gpc-mcmc", what: "an output that cannot be written (a full disk)", args: tinyTrain("--samples", "64", "--iterations", "2", "--burn", "0"), full: true, code: ExitIO, want: "write output: no space left on device"},

		// gpc-orthant --shard and gpc-merge: shards that are not one run's, once each, whole.
		{tool: "gpc-orthant", what: "--shard that is not I/K", args: []string{"--shard", "2", "testdata/equicorr3.csv"}, code: ExitUsage, want: `--shard "2": must be I/K`},
		{tool: "gpc-orthant", what: "--shard I/K with I not below K", args: []string{"--shard", "4/4", "testdata/equicorr3.csv"}, code: ExitUsage, want: "I must be from 0 to K-1"},
		{tool: "gpc-train", what: "--shard with --format csv (a shard is an Arrow stream)", args: []string{"--shard", "0/2", "--format", "csv"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitUsage, want: "--shard writes a shard of the cloud"},
		{tool: "gpc-tune", what: "--shard with the exploit or optimum stage (they need the whole grid)", args: tinyTrain("--beta", "1,2", "--shard", "0/2"), code: ExitUsage, want: "--shard splits the grid stage only"},
		{tool: "gpc-predict", what: "--shard on a multi-class cloud", args: []string{"--shard", "0/2"}, stdin: "iris-cloud.arrows", input: func() []byte {
			cov := runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "4", "--beta", "256", "--label", "species", "--id", "id", "--train", "../../examples/iris/train.csv", "--test", "../../examples/iris/test.csv"}})
			return runCLI(t, Train, cliCase{args: []string{"--samples", "200"}, stdin: cov})
		}, code: ExitUsage, want: "multi-class cloud's posteriors are not sharded"},
		{tool: "gpc-orthant", what: "more shards than particle groups", args: []string{"--shard", "0/9", "--groups", "4", "--samples", "100", "testdata/equicorr3.csv"}, code: ExitUsage, want: "at most one shard per group"},
		{tool: "gpc-merge", what: "a missing shard", args: []string{"@shard-0.arrows"}, files: sh.files, code: ExitData, want: "shard 1/2 missing"},
		{tool: "gpc-merge", what: "a shard given twice", args: []string{"@shard-0.arrows", "@shard-1.arrows", "@copy-of-shard-1.arrows"}, files: sh.files, code: ExitData, want: "shard 1/2 again"},
		{tool: "gpc-merge", what: "a shard of another run (another seed)", args: []string{"@shard-0.arrows", "@seed-2-shard-1.arrows"}, files: sh.files, code: ExitData, want: "of another run"},
		{tool: "gpc-merge", what: "a shard of the same run split another way (K differs)", args: []string{"@shard-0.arrows", "@shard-1-of-3.arrows"}, files: sh.files, code: ExitData, want: "of another run"},
		{tool: "gpc-merge", what: "a shard cut at a batch boundary (no end-of-stream marker)", args: []string{"@shard-0.arrows", "@cut-shard-1.arrows"}, files: sh.files, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-merge", what: "a shard with fewer rows than its gpc:rows (batches dropped, marker kept)", args: []string{"@shard-0.arrows", "@short-shard-1.arrows"}, files: sh.files, code: ExitData, want: "the stream was cut short"},
		{tool: "gpc-merge", what: "a shard whose gpc:shard_n is not a number (metadata edited)", args: []string{"@bad-n-shard-0.arrows", "@shard-1.arrows"}, files: sh.files, code: ExitData, want: "is not a number"},
		{tool: "gpc-merge", what: "a shard whose resampling threshold gpc:shard_ess_threshold is not in (0, 1] (metadata edited)", args: []string{"@bad-ess-shard-0.arrows", "@shard-1.arrows"}, files: sh.files, code: ExitData, want: "is not a resampling threshold"},
		{tool: "gpc-merge", what: "a result that is not a shard", args: []string{"@shard-0.arrows", "@orthant.arrows"}, files: sh.files, code: ExitData, want: "not a shard stream"},
		{tool: "gpc-merge", what: "a cloud shard cut at a batch boundary (no end-of-stream marker)", args: []string{"@cloud-shard-0.arrows", "@cut-cloud-shard-1.arrows"}, files: sh.files, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-merge", what: "a cloud shard with fewer rows than its gpc:rows (batches dropped, marker kept)", args: []string{"@cloud-shard-0.arrows", "@short-cloud-shard-1.arrows"}, files: sh.files, code: ExitData, want: "the stream was cut short"},
		{tool: "gpc-merge", what: "a cloud shard of another run (another --batch-size)", args: []string{"@cloud-shard-0.arrows", "@batch-3-cloud-shard-1.arrows"}, files: sh.files, code: ExitData, want: "of another run"},
		{tool: "gpc-merge", what: "a shard of gpc-train and one of gpc-orthant", args: []string{"@cloud-shard-0.arrows", "@shard-1.arrows"}, files: sh.files, code: ExitData, want: "of another run"},
		{tool: "gpc-merge", what: "a shard file that does not exist", args: []string{"@shard-0.arrows", "@no-such-shard.arrows"}, files: sh.files, code: ExitIO, want: "no such file"},
		{tool: "gpc-orthant", what: "--prepare-only with --plan", args: []string{"--prepare-only", "--plan", "plan.arrows", "testdata/equicorr3.csv"}, code: ExitUsage, want: "not both"},
		{tool: "gpc-orthant", what: "a plan (--plan) prepared with another seed", args: []string{"--samples", "200", "--plan", "@plan.arrows", "--seed", "2", "testdata/equicorr3.csv"}, files: sh.files, code: ExitData, want: "prepared for another input or other flags"},
		{tool: "gpc-train", what: "a plan (--plan) prepared for another input", args: []string{"--samples", "200", "--plan", "@plan.arrows"}, files: sh.files, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "prepared for another input or other flags"},
		{tool: "gpc-orthant", what: "a plan cut after its schema (no end-of-stream marker)", args: []string{"--samples", "200", "--plan", "@cut-plan.arrows", "testdata/equicorr3.csv"}, files: sh.files, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-orthant", what: "a plan with fewer rows than its gpc:rows (batch dropped, marker kept)", args: []string{"--samples", "200", "--plan", "@short-plan.arrows", "testdata/equicorr3.csv"}, files: sh.files, code: ExitData, want: "the stream was cut short"},
		{tool: "gpc-orthant", what: "a plan whose order is not a permutation", args: []string{"--samples", "200", "--plan", "@broken-plan.arrows", "testdata/equicorr3.csv"}, files: sh.files, code: ExitData, want: "not a permutation"},
		{tool: "gpc-orthant", what: "a result given as --plan", args: []string{"--samples", "200", "--plan", "@orthant.arrows", "testdata/equicorr3.csv"}, files: sh.files, code: ExitData, want: "not a plan"},
		{tool: "gpc-orthant", what: "--plan - (standard input) with the input on standard input too", args: []string{"--plan", "-"}, stdin: "plan.arrows", input: func() []byte { return sh.files["plan.arrows"] }, code: ExitUsage, want: "name the input file"},
		{tool: "gpc-orthant", what: "--prepare-only for a run that cannot fit in memory (as the run itself: a fixed --groups whose groups do not)", args: []string{"--prepare-only", "--samples", "100000", "--groups", "2", "--max-memory", "1MB", "testdata/equicorr3.csv"}, code: ExitUsage, want: "use fewer samples"},
		{tool: "gpc-tune", what: "--from a grid of another run (another seed)", args: tinyTrain(append([]string{"--from", "@tune-grid.arrows", "--seed", "2"}, tuneGridArgs...)...), files: sh.files, code: ExitData, want: "not this run's grid"},
		{tool: "gpc-tune", what: "--from a shard of a grid (merge the shards first)", args: tinyTrain(append([]string{"--from", "@shard-0.arrows"}, tuneGridArgs...)...), files: sh.files, code: ExitData, want: "not a gpc-tune grid"},
		{tool: "gpc-tune", what: "--from with --shard", args: tinyTrain("--beta", "1,2", "--exploit", "0", "--no-optimize", "--from", "grid.arrows", "--shard", "0/2"), code: ExitUsage, want: "not both"},
		{tool: "gpc-orthant", what: "--fingerprint without --shard", args: []string{"--fingerprint", "testdata/equicorr3.csv"}, code: ExitUsage, want: "give --shard I/K"},
		{tool: "gpc-predict", what: "more shards than test rows", args: []string{"--shard", "0/9"}, stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, code: ExitUsage, want: "at most one shard per row"},
		// The Vecchia path (docs/vecchia.md).
		{tool: "gpc-kernel", what: "--vecchia with as many neighbours as training points (m >= N)", args: tinyTrain("--vecchia", "8"), code: ExitUsage, want: "--vecchia 8: the training data have 8 points"},
		{tool: "gpc-kernel", what: "--vecchia auto on fewer training points than the least m it tries (30)", args: tinyTrain("--vecchia", "auto"), code: ExitUsage, want: "--vecchia auto: it conditions each point on at least m = 30 neighbours, and the training data have 8 points"},
		{tool: "gpc-kernel", what: "--vecchia with a kernel per class (three classes)", args: []string{"--train", "-", "--vecchia", "1", "--class-beta", "1,2,3"}, stdin: "train.csv", input: text(train3CSV), code: ExitUsage, want: "the multi-class Vecchia model has one kernel shared by its 3 classes"},
		{tool: "gpc-kernel", what: "--vecchia on a dense covariance stream (no features to find neighbours by)", args: []string{"--train", "-", "--vecchia", "3"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "a gpc.covariance/1 stream, not features"},
		{tool: "gpc-kernel", what: "absurd flag: --vecchia -1", args: tinyTrain("--vecchia=-1"), code: ExitUsage, want: "--vecchia -1"},
		{tool: "gpc-kernel", what: "absurd flag: --vecchia past the most neighbours a point takes (vecchia.MaxM)", args: tinyTrain("--vecchia", "255"), code: ExitUsage, want: "--vecchia 255: at most 254 neighbours"},
		{tool: "gpc-kernel", what: "absurd flag: --vecchia neither a count nor auto", args: tinyTrain("--vecchia", "many"), code: ExitUsage, want: "is not a count of neighbours"},
		{tool: "gpc-kernel", what: "absurd flag: --vecchia-nugget outside (0, 1)", args: tinyTrain("--vecchia", "3", "--vecchia-nugget", "1"), code: ExitUsage, want: "--vecchia-nugget 1"},
		{tool: "gpc-orthant", what: "a Vecchia model cut at a batch boundary (no end-of-stream marker)", stdin: "cut-model.arrows", input: func() []byte { return cut(t, fx.vecchia, 2, false) }, code: ExitData, want: "without Arrow's end-of-stream marker"},
		{tool: "gpc-train", what: "a Vecchia model with fewer rows than its gpc:rows", stdin: "short-model.arrows", input: func() []byte { return cut(t, fx.vecchia, 2, true) }, code: ExitData, want: "the stream was cut short"},
		{tool: "gpc-orthant", what: "a Vecchia model whose row conditions on a later row", stdin: "later.arrows", input: func() []byte {
			return editVecchia(t, fx.vecchia, func(s *format.VecchiaStream) { s.Model.Nbr[s.Model.Start[3]] = 5 })
		}, code: ExitData, want: "row 3: neighbour 5 is not an increasing position below 3"},
		{tool: "gpc-orthant", what: "a Vecchia model with a NaN coefficient", stdin: "nan.arrows", input: func() []byte {
			return editVecchia(t, fx.vecchia, func(s *format.VecchiaStream) { s.Model.Coef[s.Model.Start[4]] = math.NaN() })
		}, code: ExitData, want: "coefficient NaN is not finite"},
		{tool: "gpc-orthant", what: "a Vecchia model with a negative conditional variance", stdin: "negvar.arrows", input: func() []byte {
			return editVecchia(t, fx.vecchia, func(s *format.VecchiaStream) { s.Model.CondVar[2] = -1 })
		}, code: ExitData, want: "row 2: conditional variance -1"},
		{tool: "gpc-train", what: "--method on a Vecchia model", args: []string{"--method", "ep"}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "has one estimator"},
		{tool: "gpc-orthant", what: "a dense covariance's plan (--plan) for a Vecchia model", args: []string{"--plan", "@plan.arrows"}, files: sh.files, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitData, want: "not a plan of a Vecchia model"},
		{tool: "gpc-predict", what: "--cloud with a Vecchia cloud that keeps no particle paths (its model had test rows, and gpc-train had no --keep)", args: []string{"--cloud", "@vecchia-cloud.arrows"}, files: map[string][]byte{"vecchia-cloud.arrows": fx.vecchiaCloud}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "this Vecchia cloud keeps no particle paths"},
		{tool: "gpc-predict", what: "--cloud with a Vecchia cloud and a covariance stream", args: []string{"--cloud", "@kept-cloud.arrows"}, files: map[string][]byte{"kept-cloud.arrows": fx.keptCloud}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "not a Vecchia model"},
		{tool: "gpc-predict", what: "--cloud with a Vecchia cloud and a Vecchia model of another kernel (its training part's fingerprint is not the cloud's)", args: []string{"--cloud", "@kept-cloud.arrows"}, files: map[string][]byte{"kept-cloud.arrows": fx.keptCloud}, stdin: "model2.arrows", input: func() []byte {
			return runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "2", "--vecchia", "3")})
		}, code: ExitData, want: "is not the one kept-cloud.arrows was trained on"},
		{tool: "gpc-predict", what: "--cloud with a Vecchia cloud and a multi-class Vecchia model", args: []string{"--cloud", "@kept-cloud.arrows"}, files: map[string][]byte{"kept-cloud.arrows": fx.keptCloud}, stdin: "model3.arrows", input: func() []byte { return vecchia3(t, train3CSV, "a,y\n1.5,a\n2.5,c\n") }, code: ExitData, want: "is a 3-class Vecchia model and kept-cloud.arrows a two-class Vecchia cloud"},
		{tool: "gpc-predict", what: "--cloud with a Vecchia cloud whose kept paths do not fit in --max-memory", args: []string{"--cloud", "@kept-cloud.arrows", "--max-memory", "1KB"}, files: map[string][]byte{"kept-cloud.arrows": fx.keptCloud}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "raise --max-memory, or train the cloud with a smaller --keep"},
		{tool: "gpc-predict", what: "--cloud with a dense cloud and a Vecchia model", args: []string{"--cloud", "@cloud.arrows"}, files: map[string][]byte{"cloud.arrows": fx.cloud}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitData, want: "is a dense cloud"},
		{tool: "gpc-predict", what: "--count hard with --cloud on a Vecchia cloud", args: []string{"--cloud", "@kept-cloud.arrows", "--count", "hard"}, files: map[string][]byte{"kept-cloud.arrows": fx.keptCloud}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "whose kept paths predict by the soft count"},
		{tool: "gpc-predict", what: "a Vecchia cloud that keeps paths, cut short after a group's weights row (with the end-of-stream marker)", args: []string{"--cloud", "@kept-cloud.arrows"}, files: map[string][]byte{"kept-cloud.arrows": cut(t, fx.keptCloud, 3, true)}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitData, want: "the stream was cut short"},
		{tool: "gpc-merge", what: "Vecchia cloud shards of runs that keep other particle paths (gpc-train --keep)", args: []string{"@keep-shard-0.arrows", "@keep-shard-1.arrows"}, files: map[string][]byte{
			"keep-shard-0.arrows": runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4", "--keep", "8", "--shard", "0/2"}, stdin: fx.vecchia}),
			"keep-shard-1.arrows": runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4", "--keep", "16", "--shard", "1/2"}, stdin: fx.vecchia}),
		}, code: ExitData, want: "of another run"},
		{tool: "gpc-train", what: "--keep on a covariance stream", args: []string{"--keep", "10"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitUsage, want: "--keep is for a Vecchia model's cloud"},
		{tool: "gpc-predict", what: "--cloud with a multi-class Vecchia cloud and a two-class Vecchia model", args: []string{"--cloud", "@kept3.arrows"}, files: map[string][]byte{"kept3.arrows": runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: vecchia3(t, train3CSV, "")})}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitData, want: "is a two-class Vecchia model and kept3.arrows a 3-class Vecchia cloud"},
		{tool: "gpc-train", what: "--keep below the particle groups (each keeps at least one path)", args: []string{"--keep", "3"}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "each keeps at least one path"},
		{tool: "gpc-train", what: "absurd flag: --keep neither a count nor auto", args: []string{"--keep", "-3"}, stdin: "model.arrows", input: func() []byte { return fx.vecchia }, code: ExitUsage, want: "--keep -3: give a count"},
		{tool: "gpc-predict", what: "--count hard on a Vecchia cloud", args: []string{"--count", "hard"}, stdin: "vecchia-cloud.arrows", input: func() []byte { return fx.vecchiaCloud }, code: ExitUsage, want: "soft count"},
		{tool: "gpc-predict", what: "a Vecchia cloud cut inside a message", stdin: "cut-cloud.arrows", input: func() []byte { return fx.vecchiaCloud[:len(fx.vecchiaCloud)-30] }, code: ExitData, want: "it was cut short"},
		{tool: "gpc-predict", what: "a Vecchia cloud without test rows (gpc-kernel had no --test), refused at its schema, while gpc-train still estimates (the cloud cut after it)", stdin: "head-of-cloud.arrows", input: func() []byte {
			return cut(t, runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5", "--vecchia", "3")})}), 1, false)
		}, code: ExitData, want: "the Vecchia cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict here: save it (gpc-train > cloud.arrows: without test rows it keeps particle paths)"},
		{tool: "gpc-train", what: "a Vecchia model whose proposal's incomplete factorisation breaks down even with its later sites nearly removed (conditionals far weaker than the labels)", stdin: "weak.arrows", input: func() []byte { return brokenStream(t) }, code: ExitData, want: "breaks down even with the later sites nearly removed"},
		// More than two classes on the Vecchia path.
		{tool: "gpc-train", what: "a multi-class Vecchia model whose training label is not a class index", stdin: "model3.arrows", input: func() []byte {
			return editVecchia(t, vecchia3(t, train3CSV, ""), func(s *format.VecchiaStream) { s.Y[1] = 3 })
		}, code: ExitData, want: "training row 1: y = 3 is not a class index (0 to 2)"},
		{tool: "gpc-train", what: "a multi-class Vecchia model with a training row's orthant bounds", stdin: "model3.arrows", input: func() []byte {
			return editVecchia(t, vecchia3(t, train3CSV, ""), func(s *format.VecchiaStream) { s.Model.Lower[2], s.Model.Upper[2] = math.Inf(-1), 0 })
		}, code: ExitData, want: "training row 2: bounds [-Inf, 0] where a multi-class Vecchia model's are [0, +Inf)"},
		{tool: "gpc-predict", what: "--shard on a multi-class Vecchia cloud", args: []string{"--shard", "0/2"}, stdin: "vecchia-cloud3.arrows", input: func() []byte {
			return runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: vecchia3(t, train3CSV, "a,y\n1.5,a\n2.5,c\n")})
		}, code: ExitUsage, want: "a multi-class cloud's posteriors are not sharded yet"},
		{tool: "gpc-train", what: "--prepare-only on a multi-class Vecchia model", args: []string{"--prepare-only"}, stdin: "model3.arrows", input: func() []byte { return vecchia3(t, train3CSV, "") }, code: ExitUsage, want: "a multi-class Vecchia model, whose preparation has no plan stream yet"},
		{tool: "gpc-train", what: "--plan on a multi-class Vecchia model", args: []string{"--plan", "plan.arrows"}, stdin: "model3.arrows", input: func() []byte { return vecchia3(t, train3CSV, "") }, code: ExitUsage, want: "a multi-class Vecchia model, whose preparation has no plan stream yet"},
		// gpc-show --summary: a stream whose particle groups' estimates are whole.
		{tool: "gpc-show", what: "--summary of a stream without particle groups' estimates (a covariance)", args: []string{"--summary"}, stdin: "cov.arrows", input: func() []byte { return fx.cov }, code: ExitData, want: "the stream holds no particle groups' estimates"},
		{tool: "gpc-show", what: "--summary of a cloud shard (a range of the groups)", args: []string{"--summary"}, stdin: "cloud-shard-0.arrows", input: func() []byte {
			return runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4", "--shard", "0/2"}, stdin: fx.cov})
		}, code: ExitData, want: "a shard holds a range of the groups: merge the shards first"},
		{tool: "gpc-show", what: "--summary and --meta together", args: []string{"--summary", "--meta"}, stdin: "cloud.arrows", input: func() []byte { return fx.cloud }, code: ExitUsage, want: "--meta and --summary print different things"},
	}
}

// vecchia3 is gpc-kernel --vecchia 1's multi-class Vecchia model of the
// training CSV train and, unless "", the test CSV test.
func vecchia3(t *testing.T, train, test string) []byte {
	t.Helper()
	args := []string{"--train", "-", "--vecchia", "1"}
	if test != "" {
		f := filepath.Join(t.TempDir(), "test.csv")
		if err := os.WriteFile(f, []byte(test), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--test", f)
	}
	return runCLI(t, Kernel, cliCase{args: args, stdin: []byte(train)})
}

// editVecchia returns the Vecchia stream data with its model edited (what
// a writer with a bug would leave).
func editVecchia(t *testing.T, data []byte, edit func(*format.VecchiaStream)) []byte {
	t.Helper()
	s, err := format.ReadVecchia(bytes.NewReader(data), "model", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	edit(s)
	var b bytes.Buffer
	if err := format.WriteVecchia(&b, s, 2, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// availRE matches the memory figure of a message about memory, which is
// the machine's.
var availRE = regexp.MustCompile(`only [0-9.]+ (bytes|[KMGTPE]iB) of memory is available`)

// prefixRE matches a Go package's error prefix inside a message (after
// the tool's name or a wrapping error's text), which the tools leave out.
var prefixRE = regexp.MustCompile(`: (format|core|gp|fit|gemm): `)

const catalogueDoc = "../../docs/bad-input.md"

// catalogueMarks delimit the generated table in the document.
const (
	catalogueBegin = "<!-- begin catalogue: generated by go test ./internal/cli -run TestBadInputCatalogue -update -->"
	catalogueEnd   = "<!-- end catalogue -->"
)

// TestBadInputCatalogue runs every row of the catalogue: the exit status,
// one line on standard error that contains the expected words, nothing on
// standard output; then it checks docs/bad-input.md against the messages.
func TestBadInputCatalogue(t *testing.T) {
	cases := catalogue(t)
	msgs := make([]string, len(cases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%d %s %s", i+1, c.tool, c.what), func(t *testing.T) {
				t.Parallel()
				msgs[i] = runBad(t, c)
			})
		}
	})
	if t.Failed() {
		return
	}
	var tab strings.Builder
	tab.WriteString("| # | tool | bad input | command | exit | message on standard error |\n|---|---|---|---|---|---|\n")
	for i, c := range cases {
		fmt.Fprintf(&tab, "| %d | %s | %s | %s | %d | %s |\n", i+1, c.tool, cellMD(c.what), code(command(c)), c.code, code(msgs[i]))
	}
	doc, err := os.ReadFile(catalogueDoc)
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Index(doc, []byte(catalogueBegin))
	e := bytes.Index(doc, []byte(catalogueEnd))
	if b < 0 || e < b {
		t.Fatalf("%s has no %q ... %q section", catalogueDoc, catalogueBegin, catalogueEnd)
	}
	b += len(catalogueBegin) + 1
	if *update {
		out := append(append(bytes.Clone(doc[:b]), tab.String()...), doc[e:]...)
		if err := os.WriteFile(catalogueDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(doc[b:e]); got != tab.String() {
		gl, wl := strings.Split(got, "\n"), strings.Split(tab.String(), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := at(gl, i), at(wl, i)
			if g != w {
				t.Fatalf("%s is out of date (go test ./internal/cli -run TestBadInputCatalogue -update, then review the diff); first difference, line %d of the table:\n doc:   %s\n tools: %s", catalogueDoc, i+1, g, w)
			}
		}
	}
	if len(cases) < 20 {
		t.Errorf("%d rows: the catalogue needs at least 20 kinds of bad input", len(cases))
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(nothing)"
}

// runBad runs one row and returns its message, with the machine's memory
// figure and the temporary directory taken out.
func runBad(t *testing.T, c badInput) string {
	dir := t.TempDir()
	for name, data := range c.files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := make([]string, len(c.args))
	for i, a := range c.args {
		if name, ok := strings.CutPrefix(a, "@"); ok {
			a = filepath.Join(dir, name)
		}
		args[i] = a
	}
	var in []byte
	if c.input != nil {
		in = c.input()
	}
	var out, errb bytes.Buffer
	var stdout io.Writer = &out
	if c.full {
		stdout = fullDisk{}
	}
	code := runners[c.tool](args, bytes.NewReader(in), stdout, &errb)
	msg := errb.String()
	if code != c.code {
		t.Fatalf("exit %d, want %d; stderr %q", code, c.code, msg)
	}
	if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, c.tool+": ") {
		t.Fatalf("stderr is not one line %q: %q", c.tool+": ...", msg)
	}
	if out.Len() > 0 {
		t.Errorf("%d bytes on stdout", out.Len())
	}
	msg = strings.ReplaceAll(strings.TrimSuffix(msg, "\n"), dir+string(os.PathSeparator), "")
	if !strings.Contains(msg, c.want) {
		t.Errorf("stderr %q does not contain %q", msg, c.want)
	}
	if prefixRE.MatchString(strings.TrimPrefix(msg, c.tool)) {
		t.Errorf("stderr %q shows a package's error prefix (format:, core:, ...): the tool's name is the line's only prefix", msg)
	}
	return availRE.ReplaceAllString(msg, "only N GiB of memory is available")
}

// fullDisk is an output on a full disk, as /dev/full is.
type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// command is how the document shows a row's command line.
func command(c badInput) string {
	parts := []string{c.tool}
	for _, a := range c.args {
		a = strings.TrimPrefix(a, "@")
		if a == "" || strings.ContainsAny(a, " \"'") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	if c.stdin != "" {
		parts = append(parts, "<", c.stdin)
	}
	if c.full {
		parts = append(parts, ">", "/dev/full")
	}
	return strings.Join(parts, " ")
}

// code is a Markdown code span in a table cell.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + cellMD(s) + " " + fence
}

func cellMD(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// TestStreamsDoNotLie: every kind of stream the tools write (covariance,
// cloud, posteriors, orthant result, tuning table, MCMC samples and
// posteriors, orthant and cloud shards), cut after any of its messages, with
// or without the end-of-stream marker put back, is refused by gpc's
// readers (format.Dump reads any of them): by the missing marker, or by
// gpc:rows.
func TestStreamsDoNotLie(t *testing.T) {
	fx := getFixtures(t)
	orthant := runCLI(t, Orthant, cliCase{args: []string{"--samples", "200"}, stdin: fx.cov})
	tune := runCLI(t, Tune, cliCase{args: tinyTrain("--beta", "1,2,4", "--samples", "64", "--exploit-samples", "64", "--no-optimize")})
	dir := t.TempDir()
	mcmc := runCLI(t, MCMC, cliCase{args: tinyTrain("--samples", "64", "--iterations", "5", "--burn", "0", "--test", "testdata/tiny-test.csv", "--posteriors", dir+"/post.arrows")})
	mcmcPost := mustRead(t, dir+"/post.arrows")
	for _, s := range []struct {
		name string
		data []byte
	}{{"covariance", fx.cov}, {"cloud", fx.cloud}, {"posteriors", fx.post}, {"orthant result", orthant},
		{"tuning table", tune}, {"MCMC samples", mcmc}, {"MCMC posteriors", mcmcPost},
		{"orthant shard", getShardFixtures(t).files["shard-1.arrows"]}, {"cloud shard", getShardFixtures(t).files["cloud-shard-0.arrows"]}} {
		var meta bytes.Buffer
		if err := format.Dump(&meta, bytes.NewReader(s.data)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !strings.Contains(meta.String(), "gpc:rows = ") {
			t.Errorf("%s: no gpc:rows", s.name)
		}
		ends := messageEnds(t, s.data)
		for k := 1; k < len(ends); k++ {
			for _, marker := range []bool{false, true} {
				if err := format.Dump(io.Discard, bytes.NewReader(cut(t, s.data, k, marker))); err == nil {
					t.Errorf("%s cut after %d of %d messages (end marker %v) reads as complete", s.name, k, len(ends), marker)
				}
			}
		}
	}
}
