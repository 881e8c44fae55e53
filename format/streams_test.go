package format

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// messageEnds returns the offsets in an Arrow IPC stream at which each
// message (schema, batches) ends, before the end-of-stream marker.
func messageEnds(t *testing.T, data []byte) []int {
	t.Helper()
	g := newIPCGuard(bufio.NewReader(bytes.NewReader(data)))
	var ends []int
	at := 0
	for {
		parts, body, err := g.next()
		if errors.Is(err, io.EOF) {
			return ends
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			at += len(p)
		}
		// An uncompressed body is left in the input for Read to pass on.
		if _, err := g.r.Discard(int(body)); err != nil {
			t.Fatal(err)
		}
		at += int(body)
		ends = append(ends, at)
	}
}

// TestCutAtBatchBoundary: a gpc stream cut after any of its messages is
// refused by its reader, whether or not gpc:rows is there to tell.
func TestCutAtBatchBoundary(t *testing.T) {
	t.Parallel()
	for _, rows := range []bool{true, false} {
		c := sampleCov()
		var buf bytes.Buffer
		tests := c.Test.Len()
		if !rows {
			tests = -1 // unknown: no gpc:rows
		}
		cw := NewCovWriter(&buf, c, tests, nil, 1, memory.NewGoAllocator())
		if err := cw.WriteTest(&c.Test); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		ends := messageEnds(t, data)
		if len(ends) != 1+c.N+c.Test.Len() {
			t.Fatalf("%d messages for %d rows", len(ends), c.N+c.Test.Len())
		}
		for _, end := range ends {
			_, err := ReadCovariance(bytes.NewReader(data[:end]), "in", checkedMem(t))
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("gpc:rows %v, cut at %d of %d bytes: error %v, want a *DataError", rows, end, len(data), err)
			}
		}
		if _, err := ReadCovariance(bytes.NewReader(data), "in", checkedMem(t)); err != nil {
			t.Fatalf("the whole stream: %v", err)
		}
	}
}

// TestNoEndMarker: the end-of-stream marker may be left out of a stream by
// writers in general, but not by gpc's.
func TestNoEndMarker(t *testing.T) {
	t.Parallel()
	const eos = 8 // 0xffffffff, then a zero metadata length
	gpc := writeCov(t, &Covariance{N: 1, Cov: []float64{2}}, nil, 1)
	_, err := ReadCovariance(bytes.NewReader(gpc[:len(gpc)-eos]), "in", checkedMem(t))
	if err == nil || !strings.Contains(err.Error(), "without Arrow's end-of-stream marker") {
		t.Errorf("gpc stream without the marker: error %v", err)
	}
	var dump bytes.Buffer
	if err := Dump(&dump, bytes.NewReader(gpc[:len(gpc)-eos])); err == nil || dump.Len() > 0 {
		t.Errorf("Dump of a gpc stream without the marker: error %v, %d bytes written", err, dump.Len())
	}
	// A stream of another writer (no gpc:schema) may end without it.
	mem := memory.NewGoAllocator()
	other := plainStream(t, mem)
	c, err := ReadCovariance(bytes.NewReader(other[:len(other)-eos]), "in", checkedMem(t))
	if err != nil || c.N != 1 {
		t.Errorf("plain stream without the marker: %v", err)
	}
}

// plainStream is a one-variable covariance without gpc metadata.
func plainStream(t *testing.T, mem memory.Allocator) []byte {
	t.Helper()
	var buf bytes.Buffer
	tab := &Table{Cols: []Column{{Name: "a", Float: []float64{2}}}}
	if err := WriteTable(&buf, tab, Arrow, 1, mem); err != nil {
		t.Fatal(err)
	}
	// WriteTable adds gpc:rows but no gpc:schema.
	return buf.Bytes()
}

// TestDumpRows: Dump refuses a stream whose rows differ from its gpc:rows.
func TestDumpRows(t *testing.T) {
	t.Parallel()
	tab := &Table{Meta: map[string]string{KeySchema: "gpc.posteriors/1"}, Cols: []Column{{Name: "p", Float: []float64{0.1, 0.2, 0.3}}}}
	var buf bytes.Buffer
	tw := NewTableWriter(&buf, Arrow, tab, 4, 1, memory.NewGoAllocator()) // announces 4, writes 3
	if err := tw.Write(tab); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	err := Dump(io.Discard, &buf)
	if err == nil || !strings.Contains(err.Error(), "3 rows but the metadata (gpc:rows) announces 4") {
		t.Errorf("error %v", err)
	}
}

// TestParquetFrame reads a Parquet features file, and refuses one whose
// rows would not fit in the memory given.
func TestParquetFrame(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y", Type: arrow.BinaryTypes.String},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	const n = 100000
	for i := range n {
		rb.Field(0).(*array.Float64Builder).Append(float64(i % 7))
		rb.Field(1).(*array.StringBuilder).Append([]string{"M", "F"}[i%2])
	}
	rec := rb.NewRecord()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.Record{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 30000, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(bytes.NewReader(buf.Bytes()), "in.parquet", checkedMem(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows != n || f.Cols[0].Num[n-1] != float64((n-1)%7) || f.Cols[1].Text[n-1] != "F" {
		t.Errorf("%d rows, last %v %q", f.Rows, f.Cols[0].Num[n-1], f.Cols[1].Text[n-1])
	}
	_, err = ReadFrameLimit(bytes.NewReader(buf.Bytes()), "in.parquet", checkedMem(t), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "100000 rows of 2 columns would take 9.2 MiB in memory, more than the 1.0 MiB available") {
		t.Errorf("error %v", err)
	}
}
