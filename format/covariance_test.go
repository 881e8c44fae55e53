package format

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// sampleCov is a 3-variable covariance with every attribute and two test rows.
func sampleCov() *Covariance {
	return &Covariance{
		N:     3,
		Cov:   []float64{2, 0.5, -0.25, 0.5, 1, 0.125, -0.25, 0.125, 3},
		Lower: []float64{0, -1, math.Inf(-1)},
		Upper: []float64{math.Inf(1), 2, 0.5},
		Mean:  []float64{0.1, 0, -0.3},
		Y:     []float64{1, -1, 1},
		ID:    []string{"a", "b", "c"},
		Test: TestRows{
			Cov: []float64{0.1, 0.2, 0.3, -0.4, 0.5, -0.6},
			Var: []float64{1.5, 2.5},
			ID:  []string{"t1", "t2"},
			Y:   []float64{1, -1},
		},
	}
}

func writeCov(t *testing.T, c *Covariance, meta map[string]string, batch int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, c, meta, batch, checkedMem(t)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sameCov(t *testing.T, got, want *Covariance) {
	t.Helper()
	if got.N != want.N || !reflect.DeepEqual(got.Cov, want.Cov) || !reflect.DeepEqual(got.Lower, want.Lower) ||
		!reflect.DeepEqual(got.Upper, want.Upper) || !reflect.DeepEqual(got.Mean, want.Mean) ||
		!reflect.DeepEqual(got.Y, want.Y) || !reflect.DeepEqual(got.ID, want.ID) ||
		!reflect.DeepEqual(got.Test.Cov, want.Test.Cov) || !reflect.DeepEqual(got.Test.Var, want.Test.Var) ||
		!reflect.DeepEqual(got.Test.ID, want.Test.ID) || !reflect.DeepEqual(got.Test.Y, want.Test.Y) {
		t.Errorf("read\n%+v\nwant\n%+v", got, want)
	}
}

func TestCovarianceRoundTrip(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2, 4096} {
		want := sampleCov()
		data := writeCov(t, want, map[string]string{"gpc:kernel": "rbf"}, batch)
		got, err := ReadCovariance(bytes.NewReader(data), "test", checkedMem(t))
		if err != nil {
			t.Fatal(err)
		}
		sameCov(t, got, want)
		if got.Meta["gpc:kernel"] != "rbf" || got.Meta[KeySchema] != SchemaCovariance || got.Meta[KeyRows] != "5" {
			t.Errorf("metadata %v", got.Meta)
		}
		// Short reads must not matter.
		for _, r := range []io.Reader{iotest.OneByteReader(bytes.NewReader(data)), iotest.HalfReader(bytes.NewReader(data))} {
			got, err := ReadCovariance(r, "test", checkedMem(t))
			if err != nil {
				t.Fatal(err)
			}
			sameCov(t, got, want)
		}
	}
}

// TestInterop reads covariances written by Apache Arrow's JavaScript
// implementation (testdata/interop/gen.mjs).
func TestInterop(t *testing.T) {
	t.Parallel()
	eq := make([]float64, 25)
	for i := range eq {
		eq[i] = 0.5
	}
	for i := range 5 {
		eq[i*5+i] = 1
	}
	three := []float64{1, 0.5, -0.2, 0.5, 1, 0.3, -0.2, 0.3, 1}
	for _, c := range []struct {
		file   string
		n      int
		cov    []float64
		layout string
		lower  bool
	}{
		{"js-fixedlist.arrows", 5, eq, "cov column", true},
		{"js-list.arrows", 5, eq, "cov column", false},
		{"js-columns.arrows", 3, three, "N numeric columns", false},
		{"js-columns.arrow", 3, three, "N numeric columns", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "interop", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ReadCovariance(f, c.file, checkedMem(t))
			if err != nil {
				t.Fatal(err)
			}
			if got.N != c.n || !reflect.DeepEqual(got.Cov, c.cov) || got.Layout != c.layout {
				t.Errorf("N %d layout %q cov %v", got.N, got.Layout, got.Cov)
			}
			if c.lower && (got.Lower == nil || got.ID[4] != "v4") {
				t.Errorf("attributes: lower %v id %v", got.Lower, got.ID)
			}
		})
	}
}

func TestReadCSV(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		want       *Covariance
	}{
		{"no header", "1,0.5\n0.5,2\n", &Covariance{N: 2, Cov: []float64{1, 0.5, 0.5, 2}}},
		{"header", "a,b\n1,0.5\n0.5,2\n", &Covariance{N: 2, Cov: []float64{1, 0.5, 0.5, 2}}},
		{"tabs and blanks", "1\t 0.5\n 0.5\t2\n", &Covariance{N: 2, Cov: []float64{1, 0.5, 0.5, 2}}},
		{"crlf", "1,0.5\r\n0.5,2\r\n", &Covariance{N: 2, Cov: []float64{1, 0.5, 0.5, 2}}},
		{"attributes and pandas index", ",x1,x2,lower,upper,mean,id\n0,1,0.5,-1,Inf,0.5,p\n1,0.5,2,0,3,0,q\n",
			&Covariance{N: 2, Cov: []float64{1, 0.5, 0.5, 2}, Lower: []float64{-1, 0}, Upper: []float64{math.Inf(1), 3}, Mean: []float64{0.5, 0}, ID: []string{"p", "q"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadCovariance(strings.NewReader(c.text), "in.csv", checkedMem(t))
			if err != nil {
				t.Fatal(err)
			}
			sameCov(t, got, c.want)
		})
	}
}

// TestBadInput: every bad input is a *DataError whose message says where.
func TestBadInput(t *testing.T) {
	t.Parallel()
	good := writeCov(t, sampleCov(), nil, 2)
	mem := memory.NewGoAllocator()
	stream := func(fields []arrow.Field, meta map[string]string, fill func(*array.RecordBuilder)) []byte {
		md := arrow.MetadataFrom(meta)
		s := arrow.NewSchema(fields, &md)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(mem))
		if fill != nil {
			rb := array.NewRecordBuilder(mem, s)
			fill(rb)
			rec := rb.NewRecord()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			rb.Release()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	f64 := arrow.PrimitiveTypes.Float64
	listOf := func(n int32, elem arrow.DataType) arrow.DataType { return arrow.FixedSizeListOf(n, elem) }
	appendRows := func(rows [][]float64) func(*array.RecordBuilder) {
		return func(rb *array.RecordBuilder) {
			lb := rb.Field(0).(*array.FixedSizeListBuilder)
			vb := lb.ValueBuilder().(*array.Float64Builder)
			for _, r := range rows {
				lb.Append(true)
				vb.AppendValues(r, nil)
			}
		}
	}

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"blank csv", []byte("\n\n"), "empty input"},
		{"binary", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}, "binary content"},
		{"parquet", []byte("PAR1xxxxxxxx"), "Parquet"},
		{"truncated mid-message", good[:len(good)/2], "batch"},
		{"truncated schema", good[:12], "the stream ends inside its schema, the first message: it was cut short"},
		{"schema only", stream([]arrow.Field{{Name: ColCov, Type: listOf(2, f64)}}, nil, nil), "no rows"},
		{"wrong gpc:schema", stream([]arrow.Field{{Name: ColCov, Type: listOf(1, f64)}}, map[string]string{KeySchema: "gpc.cloud/1"}, appendRows([][]float64{{1}})), "gpc.cloud/1"},
		{"list of strings", stream([]arrow.Field{{Name: ColCov, Type: listOf(1, arrow.BinaryTypes.String)}}, nil, nil), "float64"},
		{"cov not a list", stream([]arrow.Field{{Name: ColCov, Type: f64}}, nil, nil), "FixedSizeList"},
		{"string matrix column", stream([]arrow.Field{{Name: "a", Type: f64}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil, nil), `column "b"`},
		{"lower is a string", stream([]arrow.Field{{Name: ColCov, Type: listOf(1, f64)}, {Name: ColLower, Type: arrow.BinaryTypes.String}}, nil, nil), `column "lower"`},
		{"NaN entry", stream([]arrow.Field{{Name: ColCov, Type: listOf(2, f64)}}, nil, appendRows([][]float64{{1, 0}, {math.NaN(), 1}})), "row 1, cov[0]"},
		{"Inf entry", stream([]arrow.Field{{Name: ColCov, Type: listOf(2, f64)}}, nil, appendRows([][]float64{{1, math.Inf(1)}, {0, 1}})), "row 0, cov[1]"},
		{"null row", stream([]arrow.Field{{Name: ColCov, Type: listOf(2, f64), Nullable: true}}, nil, func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.FixedSizeListBuilder).AppendNull()
		}), "null"},
		{"too few rows", stream([]arrow.Field{{Name: ColCov, Type: listOf(3, f64)}}, nil, appendRows([][]float64{{1, 0, 0}, {0, 1, 0}})), "only 2 rows"},
		{"cut at a batch boundary", stream([]arrow.Field{{Name: ColCov, Type: listOf(2, f64)}}, map[string]string{KeyRows: "3"}, appendRows([][]float64{{1, 0}, {0, 1}})), "announces 3"},
		{"test row without var", stream([]arrow.Field{{Name: ColCov, Type: listOf(1, f64)}}, nil, appendRows([][]float64{{1}, {0.5}})), `needs a "var" column`},
		{"test row bad var", stream([]arrow.Field{{Name: ColCov, Type: listOf(1, f64)}, {Name: ColVar, Type: f64, Nullable: true}}, nil, func(rb *array.RecordBuilder) {
			appendRows([][]float64{{1}, {0.5}})(rb)
			vb := rb.Field(1).(*array.Float64Builder)
			vb.AppendNull()
			vb.Append(-1)
		}), "variance must be a positive"},
		{"csv ragged", []byte("1,2\n3\n"), "line 2"},
		{"csv not square", []byte("1,0\n0,1\n0,0\n"), "not square"},
		{"csv NaN", []byte("1,NaN\nNaN,1\n"), "line 1, column 2"},
		{"csv bad number", []byte("a,b\n1,x\n2,3\n"), `line 2, column 2 (b): "x" is not a number`},
		{"csv empty field", []byte("1,\n0,1\n"), "empty field"},
		{"csv var column", []byte("a,var\n1,2\n"), "var"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCovariance(bytes.NewReader(c.data), "in", checkedMem(t))
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a *DataError", err, err)
			}
			if de.ExitCode() != ExitData {
				t.Errorf("exit code %d", de.ExitCode())
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

// TestReadFailure: a failing reader is an I/O error, not a data error.
func TestReadFailure(t *testing.T) {
	t.Parallel()
	boom := errors.New("device on fire")
	good := writeCov(t, sampleCov(), nil, 1)
	for _, r := range []io.Reader{
		iotest.ErrReader(boom),
		io.MultiReader(bytes.NewReader(good[:100]), iotest.ErrReader(boom)),
		iotest.DataErrReader(io.MultiReader(strings.NewReader("1,0\n0,1\n"), iotest.ErrReader(boom))),
	} {
		_, err := ReadCovariance(r, "in", checkedMem(t))
		var ie *IOError
		if !errors.As(err, &ie) || !errors.Is(err, boom) {
			t.Errorf("error %v (%T), want an *IOError wrapping the cause", err, err)
		}
	}
}

func TestTableFormats(t *testing.T) {
	t.Parallel()
	tab := &Table{
		Meta: map[string]string{KeySchema: SchemaOrthant, "gpc:seed": "1"},
		Cols: []Column{
			{Name: "log_p", Float: []float64{-1.5, math.Inf(-1)}},
			{Name: "n", Int: []int64{3, 40}},
			{Name: "method", Str: []string{"smc", "paper-hard"}},
		},
	}
	var csvOut, text, arr bytes.Buffer
	for _, c := range []struct {
		f Format
		w *bytes.Buffer
	}{{CSV, &csvOut}, {Text, &text}, {Arrow, &arr}} {
		if err := WriteTable(c.w, tab, c.f, 1, checkedMem(t)); err != nil {
			t.Fatal(err)
		}
	}
	if want := "log_p,n,method\n-1.5,3,smc\n-Inf,40,paper-hard\n"; csvOut.String() != want {
		t.Errorf("csv\n%s\nwant\n%s", csvOut.String(), want)
	}
	if want := "log_p   n  method\n -1.5   3  smc\n -Inf  40  paper-hard\n"; text.String() != want {
		t.Errorf("text\n%q\nwant\n%q", text.String(), want)
	}
	var dump bytes.Buffer
	if err := Dump(&dump, &arr); err != nil {
		t.Fatal(err)
	}
	want := `schema:
  log_p: float64
  n: int64
  method: utf8
metadata:
  gpc:rows = 2
  gpc:schema = gpc.orthant/1
  gpc:seed = 1
batch 0: 1 rows
  0: -1.5 | 3 | "smc"
batch 1: 1 rows
  1: -Inf | 40 | "paper-hard"
`
	if dump.String() != want {
		t.Errorf("dump\n%s\nwant\n%s", dump.String(), want)
	}
}

// builderCov writes c (train block, labels, test rows with labels and
// variances: gpc-kernel's shape) the plain way, every row appended through
// Arrow's builders: the reference for CovWriter's views.
func builderCov(t *testing.T, c *Covariance, batch int) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := CovarianceSchema(c.N, false, false, false, true, false, true, map[string]string{KeyRows: strconv.Itoa(c.N + c.Test.Len())})
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rows := 0
	flush := func() {
		rec := rb.NewRecord()
		defer rec.Release()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rows = 0
	}
	n := c.N
	for r := range n + c.Test.Len() {
		lb := rb.Field(0).(*array.FixedSizeListBuilder)
		lb.Append(true)
		var row []float64
		var y, v float64
		if r < n {
			row, y, v = c.Cov[r*n:r*n+n], c.Y[r], math.NaN()
		} else {
			row, y, v = c.Test.Cov[(r-n)*n:(r-n+1)*n], c.Test.Y[r-n], c.Test.Var[r-n]
		}
		lb.ValueBuilder().(*array.Float64Builder).AppendValues(row, nil)
		rb.Field(1).(*array.Float64Builder).Append(y)
		if r < n {
			rb.Field(2).(*array.Float64Builder).AppendNull()
			rb.Field(3).(*array.StringBuilder).Append("train")
		} else {
			rb.Field(2).(*array.Float64Builder).Append(v)
			rb.Field(3).(*array.StringBuilder).Append("test")
		}
		if rows++; rows == batch {
			flush()
		}
	}
	if rows > 0 {
		flush()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCovWriterViews: the covariance stream is byte for byte the one
// Arrow's builders make, whatever the batch size and however the test rows
// arrive (a batch within one slice is written as a view, the others are
// copied).
func TestCovWriterViews(t *testing.T) {
	t.Parallel()
	const n, tests = 5, 7
	c := &Covariance{N: n, Cov: make([]float64, n*n), Y: make([]float64, n)}
	c.Test = TestRows{Cov: make([]float64, tests*n), Var: make([]float64, tests), Y: make([]float64, tests)}
	for i := range c.Cov {
		c.Cov[i] = float64(i) / 8
	}
	for i := range c.Test.Cov {
		c.Test.Cov[i] = -float64(i) / 16
	}
	for i := range n {
		c.Y[i] = float64(1 - 2*(i%2))
	}
	for i := range tests {
		c.Test.Var[i], c.Test.Y[i] = 1+float64(i), 1
	}
	for _, batch := range []int{1, 2, 3, 5, 6, 12, 4096} {
		want := builderCov(t, c, batch)
		for _, chunk := range []int{1, 2, 3, tests} {
			var buf bytes.Buffer
			cw := NewCovWriter(&buf, c, tests, nil, batch, checkedMem(t))
			for lo := 0; lo < tests; lo += chunk {
				hi := min(lo+chunk, tests)
				part := TestRows{Cov: slices.Clone(c.Test.Cov[lo*n : hi*n]), Var: c.Test.Var[lo:hi], Y: c.Test.Y[lo:hi]}
				if err := cw.WriteTest(&part); err != nil {
					t.Fatal(err)
				}
				clear(part.Cov) // the writer holds no view of a caller's rows after WriteTest
			}
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("batch %d, test rows %d at a time: %d bytes, not the builders' %d", batch, chunk, buf.Len(), len(want))
			}
		}
	}
}

// TestCovBatchRows: a covariance stream's record batches hold at most 32
// MiB of matrix entries, so that the reader's guard passes each body
// through without a copy.
func TestCovBatchRows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, batch, want int }{
		{3, 4096, 4096}, {1024, 4096, 4096}, {1025, 4096, 4092}, {10000, 4096, 419}, {10000, 100, 100},
		{5000, 0, 1}, {1 << 23, 4096, 1}, {1<<22 + 1, 4096, 1},
	} {
		if got := CovBatchRows(c.n, c.batch); got != c.want {
			t.Errorf("CovBatchRows(%d, %d) = %d, want %d", c.n, c.batch, got, c.want)
		}
		if got := CovBatchRows(c.n, c.batch); got > 1 && 8*c.n*got > trustedLen/2 {
			t.Errorf("N = %d: %d rows are %d bytes, over 32 MiB", c.n, got, 8*c.n*got)
		}
	}
}

// TestFingerprinter: values written in any pieces have Fingerprint's
// fingerprint.
func TestFingerprinter(t *testing.T) {
	t.Parallel()
	v := make([]float64, 3000)
	for i := range v {
		v[i] = math.Sin(float64(i)) * 1e3
	}
	v[7], v[8] = math.Inf(-1), math.Copysign(0, -1)
	want := Fingerprint(v)
	for _, piece := range []int{1, 7, 1024, 1025, 3000} {
		f := NewFingerprinter()
		for lo := 0; lo < len(v); lo += piece {
			f.Write(v[lo:min(lo+piece, len(v))])
		}
		if got := f.Sum(); got != want {
			t.Errorf("written %d values at a time: %s, want %s", piece, got, want)
		}
	}
	if got, want := NewFingerprinter().Sum(), Fingerprint(nil); got != want {
		t.Errorf("nothing written: %s, want %s", got, want)
	}
}
