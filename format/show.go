package format

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ReadAnyTable reads the whole Arrow IPC stream in r, any schema, as a Table
// for people (gpc-show): float64 columns as numbers (nulls as NaN), int64
// columns without nulls as integers, every other column as text (strings
// unquoted, lists in brackets, nulls empty), and the schema's metadata. A
// stream that was cut short is an error, as for Dump. name names the input
// in messages.
func ReadAnyTable(r io.Reader, name string) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, &DataError{Where: name, Err: fmt.Errorf("malformed Arrow data (%v)", p)}
		}
	}()
	w := &ioWatch{r: r}
	br := bufio.NewReaderSize(w, 64<<10)
	head, _ := br.Peek(8)
	switch {
	case len(head) == 0:
		if w.err != nil {
			return nil, &IOError{Op: "read " + name, Err: w.err}
		}
		return nil, &DataError{Where: name, Err: ErrEmptyInput}
	case !strings.HasPrefix(string(head), string(arrowStreamMagic)):
		return nil, dataErrorf(name, "not an Arrow IPC stream (gpc-show reads the tools' streams; a CSV file is already a table)")
	}
	mem := memory.NewGoAllocator()
	g := newIPCGuard(br)
	sr, err := ipc.NewReader(g, ipc.WithAllocator(mem))
	if err != nil {
		return nil, w.classify(name, err)
	}
	defer sr.Release()
	s := sr.Schema()
	t = &Table{Meta: s.Metadata().ToMap(), Cols: make([]Column, len(s.Fields()))}
	kind := make([]arrow.Type, len(s.Fields()))
	for i, f := range s.Fields() {
		t.Cols[i].Name = f.Name
		kind[i] = f.Type.ID()
		switch {
		case kind[i] == arrow.FLOAT64:
			t.Cols[i].Float = []float64{}
		case kind[i] == arrow.INT64 && !f.Nullable:
			t.Cols[i].Int = []int64{}
		default:
			t.Cols[i].Str = []string{}
		}
	}
	for sr.Next() {
		rec := sr.Record()
		for c := range t.Cols {
			col := &t.Cols[c]
			a := rec.Column(c)
			for i := range a.Len() {
				switch {
				case col.Float != nil:
					v := math.NaN()
					if !a.IsNull(i) {
						v = a.(*array.Float64).Value(i)
					}
					col.Float = append(col.Float, v)
				case col.Int != nil:
					col.Int = append(col.Int, a.(*array.Int64).Value(i))
				default:
					col.Str = append(col.Str, showText(a, i))
				}
			}
		}
	}
	if err := sr.Err(); err != nil {
		return nil, w.classify(name, err)
	}
	if err := g.checkEnd(t.Meta); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	if err := checkRows(t.Meta, t.Rows()); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	return t, nil
}

// showText is element i of a as ReadTable shows it.
func showText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	if s, ok := a.(*array.String); ok {
		return s.Value(i)
	}
	return valueText(a, i)
}
