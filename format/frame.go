package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
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
func ReadFrame(r io.Reader, name string, mem memory.Allocator) (*Frame, error) {
	return ReadFrameLimit(r, name, mem, 0)
}

// FrameValueBytes is about what one value of a Frame takes in memory: its
// text, its float64 and its null flag.
const FrameValueBytes = 48

// ReadFrameLimit is ReadFrame for a reader with at most maxBytes of memory
// to spare (0: no limit): a table whose rows times columns times
// FrameValueBytes exceed it is a *DataError, found before the memory is
// taken. A Parquet file says its row count up front, and run-length
// encoding can pack billions of rows into a few bytes.
func ReadFrameLimit(r io.Reader, name string, mem memory.Allocator, maxBytes int64) (f *Frame, err error) {
	in, err := openInput(r, name)
	if err != nil {
		return nil, err
	}
	lim := frameLimit{name: name, max: maxBytes}
	switch in.kind {
	case kindText:
		f, err := readCSVFrame(in)
		if err == nil {
			err = lim.check(int64(f.Rows), len(f.Cols))
		}
		return f, err
	case kindParquet:
		return readParquetFrame(in, mem, lim)
	}
	defer recoverArrow(name, &err)
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, err
	}
	defer src.release()
	return readArrowFrame(name, schema, lim, func() (arrow.Record, error) {
		rec, err := src.next()
		if err != nil {
			return nil, in.w.classify(name, err)
		}
		return rec, nil
	})
}

// frameLimit bounds the memory a Frame may take.
type frameLimit struct {
	name string
	max  int64
}

func (l frameLimit) check(rows int64, cols int) error {
	if l.max <= 0 || cols == 0 {
		return nil
	}
	if need := float64(rows) * float64(cols) * FrameValueBytes; need > float64(l.max) {
		return dataErrorf(l.name, "%d rows of %d columns would take %s in memory, more than the %s available", rows, cols, Bytes(need), Bytes(float64(l.max)))
	}
	return nil
}

// Bytes formats a byte count for people: 1.5 GiB, 300 MiB.
func Bytes(n float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(n, 'f', 0, 64) + " bytes"
	}
	return strconv.FormatFloat(n, 'f', 1, 64) + " " + units[i]
}

// parquetBatch is the most rows read from a Parquet column at once.
const parquetBatch = 1 << 16

// readParquetFrame reads a Parquet file column by column, in this
// goroutine. (pqarrow.ReadTable reads the columns in goroutines of its
// own, where a panic of the decoder on corrupt data cannot be recovered and
// kills the process.) Only flat columns of the types a Frame holds are
// read, and the row count the file claims is checked against lim first.
func readParquetFrame(in *input, mem memory.Allocator, lim frameLimit) (f *Frame, err error) {
	name := in.name
	defer recoverArrow(name, &err)
	data, err := io.ReadAll(in.br)
	if err != nil {
		return nil, in.w.classify(name, err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, dataErrorf(name, "not a readable Parquet file: %v", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, dataErrorf(name, "not a readable Parquet file: %v", err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, dataErrorf(name, "not a readable Parquet file: %v", err)
	}
	if len(fr.Manifest.Fields) != schema.NumFields() {
		return nil, dataErrorf(name, "not a readable Parquet file: %d fields in a schema of %d", len(fr.Manifest.Fields), schema.NumFields())
	}
	for i, fd := range schema.Fields() {
		if _, err := frameKind(fd); err != nil {
			return nil, dataErrorf(name, "%v", err)
		}
		if len(fr.Manifest.Fields[i].Children) != 0 {
			return nil, dataErrorf(name, "column %q is nested; gpc reads flat columns", fd.Name)
		}
	}
	var rows int64
	for rg := range pf.NumRowGroups() {
		n := pf.MetaData().RowGroups[rg].GetNumRows()
		if n < 0 || rows+n < rows {
			return nil, dataErrorf(name, "not a readable Parquet file: row group %d claims %d rows", rg, n)
		}
		rows += n
	}
	if err := lim.check(rows, schema.NumFields()); err != nil {
		return nil, err
	}
	cols := make([]arrow.Column, schema.NumFields())
	defer func() {
		for i := range cols {
			if cols[i].Data() != nil {
				cols[i].Release()
			}
		}
	}()
	for i := range cols {
		cr, err := fr.GetColumn(context.Background(), i)
		if err != nil {
			return nil, dataErrorf(name, "column %q: %v", schema.Field(i).Name, err)
		}
		defer cr.Release() // its record reader's buffers (a dictionary's builder)
		var chunks []arrow.Array
		var got int64
		for got < rows {
			ch, err := cr.NextBatch(min(rows-got, parquetBatch))
			if err == nil && ch.Len() == 0 {
				ch.Release()
				err = errors.New("no more values")
			}
			if err != nil {
				for _, c := range chunks {
					c.Release()
				}
				return nil, dataErrorf(name, "column %q, after %d of the %d rows: %v", schema.Field(i).Name, got, rows, err)
			}
			got += int64(ch.Len())
			for _, c := range ch.Chunks() {
				c.Retain()
				chunks = append(chunks, c)
			}
			ch.Release()
		}
		if got != rows {
			for _, c := range chunks {
				c.Release()
			}
			return nil, dataErrorf(name, "column %q has %d values for %d rows", schema.Field(i).Name, got, rows)
		}
		ch := arrow.NewChunked(schema.Field(i).Type, chunks)
		for _, c := range chunks {
			c.Release()
		}
		cols[i] = *arrow.NewColumn(schema.Field(i), ch)
		ch.Release()
	}
	tbl := array.NewTable(schema, cols, rows)
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 4096)
	defer tr.Release()
	return readArrowFrame(name, schema, lim, func() (arrow.Record, error) {
		if tr.Next() {
			return tr.Record(), nil
		}
		return nil, tr.Err()
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
func readArrowFrame(name string, schema *arrow.Schema, lim frameLimit, next func() (arrow.Record, error)) (*Frame, error) {
	f := &Frame{Name: name, Line: func(r int) string { return "row " + strconv.Itoa(r) }}
	numeric := make([]bool, schema.NumFields())
	for i, fd := range schema.Fields() {
		var err error
		if numeric[i], err = frameKind(fd); err != nil {
			return nil, dataErrorf(name, "%v", err)
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
		if err := lim.check(int64(f.Rows)+rec.NumRows(), len(f.Cols)); err != nil {
			return nil, err
		}
		for i := range f.Cols {
			c := &f.Cols[i]
			a := rec.Column(i)
			for r := range int(rec.NumRows()) {
				null := isNullAt(a, r)
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

// isNullAt reports whether element r of a is null, or, for a dictionary,
// whether its value is.
func isNullAt(a arrow.Array, r int) bool {
	if d, ok := a.(*array.Dictionary); ok && !d.IsNull(r) {
		return d.Dictionary().IsNull(d.GetValueIndex(r))
	}
	return a.IsNull(r)
}

// frameKind reports whether a column of a features table is numeric (a
// number or a boolean) or text (a string); other types are an error.
func frameKind(fd arrow.Field) (numeric bool, err error) {
	if dt, ok := fd.Type.(*arrow.DictionaryType); ok {
		// A dictionary-encoded column (a pandas category, an R factor, a
		// Polars Categorical) is read as its values.
		return frameKind(arrow.Field{Name: fd.Name, Type: dt.ValueType})
	}
	switch {
	case isNumeric(fd.Type) || fd.Type.ID() == arrow.BOOL:
		return true, nil
	case fd.Type.ID() == arrow.STRING || fd.Type.ID() == arrow.LARGE_STRING:
		return false, nil
	}
	return false, fmt.Errorf("column %q has type %s; gpc reads numbers, booleans and strings", fd.Name, fd.Type)
}

var nan = math.NaN()

// Describe says where row r of column c is, for messages.
func (f *Frame) Describe(r, c int) string {
	return fmt.Sprintf("%s: %s, column %q", f.Name, f.Line(r), f.Names[c])
}
