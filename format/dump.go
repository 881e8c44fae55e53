package format

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Dump writes a canonical text form of the Arrow IPC stream in r: the
// schema (field names, types, nullability), its metadata sorted by key, then
// every row with each value printed exactly (floats with strconv 'g', -1,
// lists in brackets, nulls as "null"). Golden files compare this text, which
// survives Arrow library upgrades that change the bytes (STYLE.md section 7).
// A stream that was cut short is an error and nothing is written: a gpc
// stream (with gpc:schema) without the end-of-stream marker, or a stream
// whose rows differ from its gpc:rows.
func Dump(w io.Writer, r io.Reader) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &DataError{Where: "dump", Err: fmt.Errorf("malformed Arrow data (%v)", p)}
		}
	}()
	mem := memory.NewGoAllocator()
	g := newIPCGuard(bufio.NewReader(r))
	sr, err := ipc.NewReader(g, ipc.WithAllocator(mem))
	if err != nil {
		return &DataError{Where: "dump", Err: cutShort(err)}
	}
	defer sr.Release()
	var b bytes.Buffer
	s := sr.Schema()
	b.WriteString("schema:\n")
	for _, f := range s.Fields() {
		fmt.Fprintf(&b, "  %s: %s", f.Name, f.Type)
		if f.Nullable {
			b.WriteString(" (nullable)")
		}
		b.WriteByte('\n')
	}
	b.WriteString("metadata:\n")
	md := s.Metadata()
	keys := slices.Sorted(slices.Values(md.Keys()))
	for _, k := range keys {
		v, _ := md.GetValue(k)
		fmt.Fprintf(&b, "  %s = %s\n", k, v)
	}
	row := 0
	for batch := 0; sr.Next(); batch++ {
		rec := sr.Record()
		fmt.Fprintf(&b, "batch %d: %d rows\n", batch, rec.NumRows())
		for i := range int(rec.NumRows()) {
			cells := make([]string, rec.NumCols())
			for c := range cells {
				cells[c] = valueText(rec.Column(c), i)
			}
			fmt.Fprintf(&b, "  %d: %s\n", row, strings.Join(cells, " | "))
			row++
		}
	}
	if err := sr.Err(); err != nil {
		return &DataError{Where: "dump", Err: cutShort(err)}
	}
	meta := md.ToMap()
	if err := g.checkEnd(meta); err != nil {
		return &DataError{Where: "dump", Err: err}
	}
	if err := checkRows(meta, row); err != nil {
		return &DataError{Where: "dump", Err: err}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// checkRows compares the rows a stream had with its gpc:rows, when it has
// one.
func checkRows(meta map[string]string, rows int) error {
	v, ok := meta[KeyRows]
	if !ok {
		return nil
	}
	want, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("metadata %s = %q is not a row count", KeyRows, v)
	}
	if want != rows {
		return fmt.Errorf("%d rows but the metadata (%s) announces %d: the stream was cut short", rows, KeyRows, want)
	}
	return nil
}

// valueText prints element i of a for Dump.
func valueText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch a := a.(type) {
	case *array.Float64:
		return floatText(a.Value(i))
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.FixedSizeList:
		s, e := a.ValueOffsets(i)
		vals := a.ListValues()
		parts := make([]string, 0, e-s)
		for j := s; j < e; j++ {
			parts = append(parts, valueText(vals, int(j)))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return a.ValueStr(i)
}

func floatText(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
