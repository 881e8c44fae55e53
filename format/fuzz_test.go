package format

import (
	"bytes"
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/gpc-mc/gpc/core"
)

// fuzzMax caps a fuzz input: the readers' cost grows with the input, and
// what they must survive (lengths inside the data that lie) needs few bytes.
const fuzzMax = 1 << 20

// watchdog fails the fuzz input if the call it guards takes longer than
// hangAfter (a hang is a finding too). Stop it with the function it returns.
func watchdog() (stop func()) {
	done := make(chan bool)
	go func() {
		select {
		case <-done:
		case <-time.After(hangAfter):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic("hang:\n" + string(buf[:n]))
		}
	}()
	return func() { close(done) }
}

// hangAfter is far beyond what a 1 MiB input takes to read (milliseconds).
const hangAfter = 5 * time.Second

// FuzzReadCovariance feeds arbitrary bytes to the covariance reader (Arrow
// stream, Arrow file and CSV paths, chosen by content). It must never panic:
// either it returns an error, or what it read survives a write and read
// round trip unchanged.
func FuzzReadCovariance(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "interop", "*.arrow*"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	mem := memory.NewGoAllocator()
	for _, c := range []*Covariance{sampleCov(), {N: 1, Cov: []float64{2}}} {
		var buf bytes.Buffer
		if err := WriteCovariance(&buf, c, map[string]string{KeyTool: "fuzz"}, 2, mem); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	for _, s := range []string{"1,0.5\n0.5,1\n", "a,b,lower\n1,0,-1\n0,1,0\n", ",x\n0,1\n", "1\t2\n3\t4\n", "\"1\",2\n2,1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		c, err := ReadCovariance(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		// The streaming reader, one test row at a time, reads the same.
		cr, err := NewCovReader(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			t.Fatalf("NewCovReader fails where ReadCovariance did not: %v", err)
		}
		one := *cr.Train()
		for {
			tr, err := cr.NextTest(1)
			if err != nil {
				t.Fatalf("NextTest(1) fails where NextTest(4096) did not: %v", err)
			}
			if tr == nil {
				break
			}
			one.Test.Cov = append(one.Test.Cov, tr.Cov...)
			one.Test.Var = append(one.Test.Var, tr.Var...)
			one.Test.ID = append(one.Test.ID, tr.ID...)
			one.Test.Y = append(one.Test.Y, tr.Y...)
		}
		cr.Close()
		sameCovNaN(t, &one, c)
		if c.N < 1 || len(c.Cov) != c.N*c.N || len(c.Test.Cov) != c.N*c.Test.Len() {
			t.Fatalf("inconsistent result: N %d, %d entries, %d test entries for %d test rows", c.N, len(c.Cov), len(c.Test.Cov), c.Test.Len())
		}
		var buf bytes.Buffer
		if err := WriteCovariance(&buf, c, nil, 3, mem); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCovariance(&buf, "round trip", mem)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		sameCovNaN(t, back, c)
	})
}

// FuzzDump: the text dump of any bytes never panics.
func FuzzDump(f *testing.F) {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, sampleCov(), nil, 2, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	tab := &Table{Cols: []Column{{Name: "x", Float: []float64{1, 2}}, {Name: "s", Str: []string{"a", "b"}}}}
	buf.Reset()
	if err := WriteTable(&buf, tab, Arrow, 1, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		_ = Dump(io.Discard, bytes.NewReader(data))
	})
}

// FuzzReadAnyTable: any bytes read by gpc-show's reader either fail with an
// error or give a table whose columns all have its row count.
func FuzzReadAnyTable(f *testing.F) {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, sampleCov(), nil, 2, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	tab := &Table{Cols: []Column{{Name: "x", Float: []float64{1, 2}}, {Name: "n", Int: []int64{3, 4}}, {Name: "s", Str: []string{"a", "b"}}}}
	buf.Reset()
	if err := WriteTable(&buf, tab, Arrow, 1, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		got, err := ReadAnyTable(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, c := range got.Cols {
			if c.len() != got.Rows() {
				t.Fatalf("column %q has %d rows, the table %d", c.Name, c.len(), got.Rows())
			}
		}
	})
}

// FuzzReadFrame: any bytes read as a features table either fail with an
// error or give a consistent frame.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{"a,b,y\n1,2,1\n3,4,-1\n", "x\ty\n1\tM\n", "1,2\n3,4\n", "a,b\n,\n", "\"q\",b\n1,2\n"} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "interop", "*.arrow*"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add(parquetSeed(f, nil))
	f.Fuzz(fuzzFrame)
}

// FuzzReadParquet is FuzzReadFrame seeded with Parquet files only, so that
// its time goes to the Parquet decoder (Thrift metadata, pages, codecs),
// the largest of the readers.
func FuzzReadParquet(f *testing.F) {
	f.Add(parquetSeed(f, nil))
	f.Add(parquetSeed(f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))))
	f.Add(parquetSeed(f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false))))
	f.Add(parquetSeed(f, parquet.NewWriterProperties(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Gzip))))
	f.Fuzz(fuzzFrame)
}

// fuzzFrame: any bytes read as a features table either fail with an error
// or give a consistent frame.
func fuzzFrame(t *testing.T, data []byte) {
	if len(data) > fuzzMax {
		return
	}
	defer watchdog()()
	fr, err := ReadFrame(bytes.NewReader(data), "fuzz", memory.NewGoAllocator())
	if err != nil {
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans lines: %q", err)
		}
		return
	}
	if len(fr.Names) != len(fr.Cols) {
		t.Fatalf("%d names for %d columns", len(fr.Names), len(fr.Cols))
	}
	for _, c := range fr.Cols {
		if len(c.Text) != fr.Rows || len(c.Null) != fr.Rows || (c.Num != nil && len(c.Num) != fr.Rows) {
			t.Fatalf("a column of %d values in %d rows", len(c.Text), fr.Rows)
		}
	}
}

// parquetSeed writes a small features table (numbers, a string label, an
// id, a boolean, a null) as Parquet with the given writer properties.
func parquetSeed(f *testing.F, props *parquet.WriterProperties) []byte {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32},
		{Name: "on", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "sex", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rb.Field(0).(*array.Float64Builder).AppendValues([]float64{1.5, 0, -2}, []bool{true, false, true})
	rb.Field(1).(*array.Int32Builder).AppendValues([]int32{3, 4, 5}, nil)
	rb.Field(2).(*array.BooleanBuilder).AppendValues([]bool{true, false, true}, nil)
	rb.Field(3).(*array.StringBuilder).AppendValues([]string{"M", "F", "M"}, nil)
	rb.Field(4).(*array.StringBuilder).AppendValues([]string{"x", "", "z"}, []bool{true, false, true})
	rec := rb.NewRecord()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.Record{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 2, props, pqarrow.DefaultWriterProps()); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzWriteTable: the table writer (the orthant result, the posteriors,
// the summaries) writes any names, strings and numbers so that they read
// back: the Arrow stream dumps to the same values, the CSV parses to the
// same fields, and the text table has one line per row.
func FuzzWriteTable(f *testing.F) {
	f.Add("id", "t1", 0.25, int64(3), uint8(2), uint8(1))
	f.Add("label", "a,\"b\"\n", math.Inf(-1), int64(-1), uint8(1), uint8(0))
	f.Add("", "\x00\t\r", math.NaN(), int64(math.MaxInt64), uint8(5), uint8(3))
	f.Fuzz(func(t *testing.T, name, str string, x float64, i int64, rows, batch uint8) {
		n := int(rows % 8)
		tab := &Table{Meta: map[string]string{KeySchema: "gpc.fuzz/1", "gpc:" + name: str}, Cols: []Column{
			{Name: name, Str: make([]string, n)},
			{Name: "x", Float: make([]float64, n)},
			{Name: "i", Int: make([]int64, n)},
		}}
		for r := range n {
			tab.Cols[0].Str[r] = strings.Repeat(str, 1+r%2)
			tab.Cols[1].Float[r] = x * float64(r)
			tab.Cols[2].Int[r] = i - int64(r)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var arr, csvOut, text bytes.Buffer
		for _, o := range []struct {
			f Format
			w *bytes.Buffer
		}{{Arrow, &arr}, {CSV, &csvOut}, {Text, &text}} {
			if err := WriteTable(o.w, tab, o.f, int(batch), mem); err != nil {
				t.Fatalf("format %d: %v", o.f, err)
			}
		}
		var dump bytes.Buffer
		if err := Dump(&dump, bytes.NewReader(arr.Bytes())); err != nil {
			t.Fatalf("dump of our own stream: %v", err)
		}
		recs, err := csv.NewReader(bytes.NewReader(csvOut.Bytes())).ReadAll()
		if err != nil {
			t.Fatalf("csv: %v\n%q", err, csvOut.String())
		}
		// encoding/csv's reader turns \r\n inside a quoted field into \n
		// (its documentation says so); the bytes written hold \r\n.
		unCR := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
		if len(recs) != n+1 || !reflect.DeepEqual(recs[0], []string{unCR(name), "x", "i"}) {
			t.Fatalf("csv: %d records for %d rows, header %q", len(recs), n, recs[0])
		}
		for r := range n {
			if recs[r+1][0] != unCR(tab.Cols[0].Str[r]) {
				t.Fatalf("csv row %d: %q, wrote %q", r, recs[r+1][0], tab.Cols[0].Str[r])
			}
		}
		lines := strings.Count(text.String(), "\n")
		want := n + 1
		if n == 1 {
			want = len(tab.Cols) // one row: a name/value line per column
		}
		if lines != want || !utf8Valid(text.String()) {
			t.Fatalf("text table of %d rows has %d lines:\n%s", n, lines, text.String())
		}
	})
}

// FuzzOpenCloud: any bytes read as a cloud either fail with an error or
// give a cloud whose parts agree. Seeded with both layouts (test rows
// before and after the particles).
func FuzzOpenCloud(f *testing.F) {
	mem := memory.NewGoAllocator()
	for _, first := range []bool{true, false} {
		f.Add(sampleCloud(f, first, 2, mem))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		cr, err := OpenCloud(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		defer cr.Close()
		n := cr.Train.N
		if len(cr.Train.Cov) != n*n || len(cr.Perm) != n {
			t.Fatalf("train block of %d values, order of %d, for N = %d", len(cr.Train.Cov), len(cr.Perm), n)
		}
		tests := func() bool {
			for {
				tr, err := cr.NextTest(2)
				if err != nil {
					return false
				}
				if tr == nil {
					return true
				}
				if len(tr.Cov) != tr.Len()*n {
					t.Fatalf("%d test values for %d rows", len(tr.Cov), tr.Len())
				}
			}
		}
		if cr.TestsFirst() && !tests() {
			return
		}
		sizes := cr.GroupSizes()
		g, next := 0, 0
		for {
			ps, err := cr.NextParticles()
			if err != nil {
				return
			}
			if ps == nil {
				break
			}
			if ps.Group != g || ps.First != next || len(ps.Z) != len(ps.LogW)*n || len(ps.LogW) == 0 {
				t.Fatalf("particles %d.. of group %d (%d, %d values) where %d of group %d were expected", ps.First, ps.Group, len(ps.LogW), len(ps.Z), next, g)
			}
			if next += len(ps.LogW); next == sizes[g] {
				g, next = g+1, 0
			}
			ps.Release()
		}
		if g != len(sizes) {
			t.Fatalf("the particles ended in group %d of %d", g, len(sizes))
		}
		if !cr.TestsFirst() {
			tests()
		}
	})
}

// sampleCloud is a small cloud stream of sampleCov's train block, two
// groups of particles and its test rows, before the particles (first) or
// after them, in record batches of batch rows.
func sampleCloud(tb testing.TB, first bool, batch int, mem memory.Allocator) []byte {
	c := sampleCov()
	cloud := sampleParticles()
	var buf bytes.Buffer
	var tests *TestRows
	if first {
		tests = &c.Test
	}
	cw, err := NewCloudWriter(&buf, c, nil, tests, map[string]string{KeyGroupSizes: "2,1", KeyGroupLogP: "-2,-2.5", KeyOrder: "2,0,1", KeyFingerprint: Fingerprint(c.Cov)}, batch, mem)
	if err != nil {
		tb.Fatal(err)
	}
	for g := range cloud.Groups {
		if err := cw.WriteParticles(g, &cloud.Groups[g]); err != nil {
			tb.Fatal(err)
		}
	}
	if !first {
		if err := cw.WriteTest(&c.Test); err != nil {
			tb.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sampleParticles is sampleCloud's particles.
func sampleParticles() *core.Cloud {
	return &core.Cloud{N: 3, Groups: []core.CloudGroup{
		{Z: []float64{0.1, 0.2, 0.3, -1, 0, 1}, LogW: []float64{-0.5, -0.9}, LogZ: -2},
		{Z: []float64{0.4, 0.5, 0.6}, LogW: []float64{0}, LogZ: -2.5},
	}}
}

// sameCovNaN is sameCov for values that may hold NaN (a test label that is
// unknown), which DeepEqual never finds equal.
func sameCovNaN(t *testing.T, got, want *Covariance) {
	t.Helper()
	g, w := *got, *want
	g.Test.Y, w.Test.Y = nanToInf(g.Test.Y), nanToInf(w.Test.Y)
	sameCov(t, &g, &w)
}

func nanToInf(v []float64) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x
		if math.IsNaN(x) {
			out[i] = math.MaxFloat64 // no reader gives this for a label
		}
	}
	return out
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// FuzzReadHyper: any bytes read as gpc-fit's table of hyperparameters
// either fail with an error or give rows whose values are finite and
// non-negative, with a name of alpha, beta or bias; and gpc-fit's own
// table round-trips.
func FuzzReadHyper(f *testing.F) {
	for _, s := range []string{"kernel,name,feature,value,standardize\nard,alpha,a,2,1\nard,beta,,3,1\n", "kernel,name,value\nrbf,beta,NaN\n", "kernel,name,value\nrbf,gamma,1\n"} {
		f.Add([]byte(s))
	}
	var buf bytes.Buffer
	t := HyperTable(HyperFit{Kernel: "rbf", LogML: -1}, []HyperRow{{Name: "alpha", Value: 2}, {Name: "beta", Value: 3}}, nil)
	if err := WriteTable(&buf, t, Arrow, 0, NewAllocator()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := ReadFrame(bytes.NewReader(data), "fuzz", NewAllocator())
		if err != nil {
			return
		}
		_, rows, err := ReadHyper(fr)
		if err != nil {
			return
		}
		for _, r := range rows {
			if !(r.Value >= 0) || math.IsInf(r.Value, 1) || r.Name != "alpha" && r.Name != "beta" && r.Name != "bias" {
				t.Errorf("row %+v accepted", r)
			}
		}
	})
}

// FuzzReadPlan: any bytes read as a plan either fail with an error or give
// a factor whose parts are consistent.
func FuzzReadPlan(f *testing.F) {
	mem := memory.NewGoAllocator()
	box := core.Box{N: 3, Cov: []float64{1, 0.5, 0.2, 0.5, 1, 0.3, 0.2, 0.3, 1}}
	for _, c := range []core.Candidate{{Method: core.MethodEP, Order: core.OrderGreedy}, {Method: core.MethodMET, Order: core.OrderSharp}} {
		fac, err := core.Prepare(box, c, 1, 0)
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WritePlan(&buf, &Plan{Parts: fac.Parts()}, mem); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		p, fac, err := ReadPlan(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		if n := p.Parts.N; fac.N != n || len(fac.L) != n*n || len(fac.A) != n || len(fac.Perm) != n {
			t.Fatalf("a plan of %d variables with parts of lengths %d, %d, %d", n, len(fac.L), len(fac.A), len(fac.Perm))
		}
	})
}

// FuzzReadTable: any bytes read as a result table (gpc-merge's reader of
// gpc-orthant's and gpc-predict's shards) either fail with an error or give
// a table whose columns all have its row count, whose metadata StreamMeta
// reads the same, and which writes and reads back bit for bit.
func FuzzReadTable(f *testing.F) {
	mem := memory.NewGoAllocator()
	tab := &Table{Meta: map[string]string{KeySchema: "gpc.orthant/1", KeyTool: "fuzz"}, Cols: []Column{
		{Name: "id", Str: []string{"a", "", "c"}},
		{Name: "log_p", Float: []float64{-1.5, math.Inf(-1), math.NaN()}},
		{Name: "n", Int: []int64{3, 0, -7}},
	}}
	for _, batch := range []int{1, 0} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, tab, Arrow, batch, mem); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, sampleCov(), nil, 2, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		got, err := ReadTable(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		for _, c := range got.Cols {
			if kinds := btoi(c.Float != nil) + btoi(c.Int != nil) + btoi(c.Str != nil); kinds != 1 || c.len() != got.Rows() {
				t.Fatalf("column %q: %d kinds of values, %d rows in a table of %d", c.Name, kinds, c.len(), got.Rows())
			}
		}
		meta, err := StreamMeta(bytes.NewReader(data), "fuzz", mem)
		if err != nil || !reflect.DeepEqual(meta, got.Meta) {
			t.Fatalf("StreamMeta: %v, %v; ReadTable's metadata %v", meta, err, got.Meta)
		}
		var out bytes.Buffer
		if err := WriteTable(&out, got, Arrow, 2, mem); err != nil {
			return // names or metadata the writer refuses
		}
		back, err := ReadTable(&out, "round trip", mem)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if len(back.Cols) != len(got.Cols) {
			t.Fatalf("round trip: %d columns, wrote %d", len(back.Cols), len(got.Cols))
		}
		for i, c := range got.Cols {
			b := back.Cols[i]
			same := b.Name == c.Name && reflect.DeepEqual(b.Int, c.Int) && reflect.DeepEqual(b.Str, c.Str) && len(b.Float) == len(c.Float)
			for j := range c.Float {
				same = same && math.Float64bits(b.Float[j]) == math.Float64bits(c.Float[j])
			}
			if !same {
				t.Fatalf("round trip: column %d reads back as %+v, wrote %+v", i, b, c)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
