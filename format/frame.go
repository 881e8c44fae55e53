package format

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Frame is a table of named columns: the features files users have (CSV,
// Parquet, Arrow IPC), read whole. Every column keeps the text of its
// values (for labels and identifiers); a column whose values are all
// numbers also has them as float64.
type Frame struct {
	Name  string // the input, for messages
	Names []string
	Cols  []FrameColumn
	Rows  int
	// Line maps a row to where it is in the input, for messages: "line 7"
	// for CSV, "row 6" for Arrow and Parquet.
	Line func(row int) string
}

// FrameColumn is one column of a Frame.
type FrameColumn struct {
	// Text holds every value as text; a null is "".
	Text []string
	// Num holds the values as numbers when the column is numeric (an Arrow
	// or Parquet number column, or CSV text that parses as numbers
	// throughout), else nil. A null is NaN.
	Num []float64
	// Null marks the null or empty values.
	Null []bool
}

// Column returns the index of the column called name, or -1.
func (f *Frame) Column(name string) int {
	for i, n := range f.Names {
		if n == name {
			return i
		}
	}
	return -1
}

// ReadFrame reads a features table from r, detecting the form from the
// content: an Arrow IPC stream or file, Parquet, or CSV text (comma, tab or
// semicolon separated; a first line with names is the header, else the
// columns are named 1, 2, ... by position).
func ReadFrame(r io.Reader, name string, mem memory.Allocator) (f *Frame, err error) {
	in, err := openInput(r, name)
	if err != nil {
		return nil, err
	}
	switch in.kind {
	case kindText:
		return readCSVFrame(in)
	case kindParquet:
		defer recoverArrow(name, &err)
		data, err := io.ReadAll(in.br)
		if err != nil {
			return nil, in.w.classify(name, err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			return nil, dataErrorf(name, "not a readable Parquet file: %v", err)
		}
		defer tbl.Release()
		tr := array.NewTableReader(tbl, 4096)
		defer tr.Release()
		return readArrowFrame(name, tbl.Schema(), func() (arrow.Record, error) {
			if tr.Next() {
				return tr.Record(), nil
			}
			return nil, tr.Err()
		})
	}
	defer recoverArrow(name, &err)
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, err
	}
	defer src.release()
	return readArrowFrame(name, schema, func() (arrow.Record, error) {
		rec, err := src.next()
		if err != nil {
			return nil, in.w.classify(name, err)
		}
		return rec, nil
	})
}

func readCSVFrame(in *input) (*Frame, error) {
	t, err := readCSV(in.br, in.name, in.w)
	if err != nil {
		return nil, err
	}
	f := &Frame{Name: in.name, Rows: len(t.rows), Line: func(r int) string { return "line " + strconv.Itoa(t.lines[r]) }}
	seen := map[string]bool{}
	for i, h := range t.header {
		h = strings.TrimSpace(h)
		if !t.hasHeader {
			h = strconv.Itoa(i + 1)
		}
		if seen[h] {
			return nil, dataErrorf(in.name+": header", "column name %q appears twice", h)
		}
		seen[h] = true
		f.Names = append(f.Names, h)
		c := FrameColumn{Text: make([]string, f.Rows), Null: make([]bool, f.Rows), Num: make([]float64, f.Rows)}
		for r, rec := range t.rows {
			v := strings.TrimSpace(rec[i])
			c.Text[r] = v
			c.Null[r] = v == "" || v == "NA"
			if c.Num == nil {
				continue
			}
			if c.Null[r] {
				c.Num[r] = nan
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				c.Num = nil
				continue
			}
			c.Num[r] = x
		}
		f.Cols = append(f.Cols, c)
	}
	return f, nil
}

// readArrowFrame reads the record batches from next into a Frame.
func readArrowFrame(name string, schema *arrow.Schema, next func() (arrow.Record, error)) (*Frame, error) {
	f := &Frame{Name: name, Line: func(r int) string { return "row " + strconv.Itoa(r) }}
	numeric := make([]bool, schema.NumFields())
	for i, fd := range schema.Fields() {
		switch {
		case isNumeric(fd.Type) || fd.Type.ID() == arrow.BOOL:
			numeric[i] = true
		case fd.Type.ID() == arrow.STRING || fd.Type.ID() == arrow.LARGE_STRING:
		default:
			return nil, dataErrorf(name, "column %q has type %s; gpc reads numbers, booleans and strings", fd.Name, fd.Type)
		}
		f.Names = append(f.Names, fd.Name)
		c := FrameColumn{}
		if numeric[i] {
			c.Num = []float64{}
		}
		f.Cols = append(f.Cols, c)
	}
	for {
		rec, err := next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		for i := range f.Cols {
			c := &f.Cols[i]
			a := rec.Column(i)
			for r := range int(rec.NumRows()) {
				null := a.IsNull(r)
				c.Null = append(c.Null, null)
				switch {
				case null:
					c.Text = append(c.Text, "")
					if numeric[i] {
						c.Num = append(c.Num, nan)
					}
				case numeric[i]:
					var v float64
					if b, ok := a.(*array.Boolean); ok {
						if b.Value(r) {
							v = 1
						}
					} else {
						v, _ = numAt(a, r)
					}
					c.Num = append(c.Num, v)
					c.Text = append(c.Text, strconv.FormatFloat(v, 'g', -1, 64))
				default:
					s, _ := strAt(a, r)
					c.Text = append(c.Text, s)
				}
			}
		}
		f.Rows += int(rec.NumRows())
	}
	return f, nil
}

var nan = math.NaN()

// Describe says where row r of column c is, for messages.
func (f *Frame) Describe(r, c int) string {
	return fmt.Sprintf("%s: %s, column %q", f.Name, f.Line(r), f.Names[c])
}
