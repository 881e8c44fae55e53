package format

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Dictionary-encoded columns (a pandas category, an R factor, a Polars
// Categorical) are read as their values, from an Arrow IPC stream, an
// Arrow IPC file and Parquet that stored the Arrow schema, in two record
// batches (the second with a delta-free replacement dictionary is not
// written by Arrow's Go writer; one dictionary serves both).
func TestDictionaryFrame(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y", Type: dict, Nullable: true},
		{Name: "k", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.PrimitiveTypes.Int64}},
	}, nil)
	labels := []string{"setosa", "virginica", "", "versicolor", "setosa"}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	var recs []arrow.Record
	for b := range 2 {
		for i, s := range labels {
			rb.Field(0).(*array.Float64Builder).Append(float64(10*b + i))
			if s == "" {
				rb.Field(1).AppendNull()
			} else if err := rb.Field(1).(*array.BinaryDictionaryBuilder).AppendString(s); err != nil {
				t.Fatal(err)
			}
			if err := rb.Field(2).(*array.Int64DictionaryBuilder).Append(int64(i % 2 * 7)); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, rb.NewRecord())
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var stream, pq bytes.Buffer
	w := ipc.NewWriter(&stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	fpath := filepath.Join(t.TempDir(), "file.arrow")
	file, err := os.Create(fpath)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fw, err := ipc.NewFileWriter(file, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	fileBytes, err := os.ReadFile(fpath)
	if err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(schema, recs)
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &pq, 1024, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"stream.arrows", stream.Bytes()}, {"file.arrow", fileBytes}, {"in.parquet", pq.Bytes()}} {
		var mem memory.Allocator = checkedMem(t)
		if in.name == "file.arrow" {
			// Arrow v17's FileReader does not release the messages of the
			// dictionaries it reads (ipc/file_reader.go, readDictionaries):
			// garbage for the Go allocator, a leak for a checked one.
			mem = memory.NewGoAllocator()
		}
		f, err := ReadFrame(bytes.NewReader(in.data), in.name, mem)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if f.Rows != 2*len(labels) {
			t.Fatalf("%s: %d rows, want %d", in.name, f.Rows, 2*len(labels))
		}
		y, k := &f.Cols[f.Column("y")], &f.Cols[f.Column("k")]
		if y.Num != nil || k.Num == nil {
			t.Errorf("%s: y numeric %v, k numeric %v; want text and numbers", in.name, y.Num != nil, k.Num != nil)
		}
		for r := range f.Rows {
			want := labels[r%len(labels)]
			if y.Text[r] != want || y.Null[r] != (want == "") {
				t.Errorf("%s: row %d: y %q (null %v), want %q", in.name, r, y.Text[r], y.Null[r], want)
			}
			if wk := float64(r % len(labels) % 2 * 7); k.Num != nil && k.Num[r] != wk {
				t.Errorf("%s: row %d: k %v, want %v", in.name, r, k.Num[r], wk)
			}
		}
	}
}
