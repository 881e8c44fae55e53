package format

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Schema names (the gpc:schema metadata value) and metadata keys.
const (
	SchemaCovariance = "gpc.covariance/1"
	SchemaOrthant    = "gpc.orthant/1"

	KeySchema  = "gpc:schema"  // schema name/version
	KeyTool    = "gpc:tool"    // the tool that wrote the stream
	KeyVersion = "gpc:version" // its version
	KeyRows    = "gpc:rows"    // the number of rows, checked by readers at the end
	KeyN       = "gpc:n"       // the number of train variables
	KeySeed    = "gpc:seed"    // the random seed used
	KeyJitter  = "gpc:jitter"  // the value added to the covariance diagonal
	KeyOrder   = "gpc:order"   // the variable order: input indices, comma-separated
	KeyPilots  = "gpc:pilots"  // the pilot runs that chose the method and order
	KeyTilt    = "gpc:tilt"    // the minimax tilting solve
	KeyEP      = "gpc:ep"      // the expectation propagation solve
)

// Format is an output encoding.
type Format int

const (
	// Arrow is an Arrow IPC stream.
	Arrow Format = iota
	// CSV is comma-separated text with a header row, numbers in full
	// precision.
	CSV
	// Text is a table for people: aligned columns, or name/value lines for
	// a single row.
	Text
)

// Column is one column of a Table: exactly one of Float, Int and Str is set.
type Column struct {
	Name  string
	Float []float64
	Int   []int64
	Str   []string
}

func (c *Column) len() int {
	switch {
	case c.Float != nil:
		return len(c.Float)
	case c.Int != nil:
		return len(c.Int)
	}
	return len(c.Str)
}

func (c *Column) arrowType() arrow.DataType {
	switch {
	case c.Float != nil:
		return arrow.PrimitiveTypes.Float64
	case c.Int != nil:
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.BinaryTypes.String
}

// text formats row i for people (digits) or for CSV (full precision).
func (c *Column) text(i int, full bool) string {
	switch {
	case c.Float != nil:
		if full {
			return strconv.FormatFloat(c.Float[i], 'g', -1, 64)
		}
		return formatHuman(c.Float[i])
	case c.Int != nil:
		return strconv.FormatInt(c.Int[i], 10)
	}
	return c.Str[i]
}

// humanDigits is the significant digits of a number in the text table, as
// R prints them; CSV and Arrow keep every digit.
const humanDigits = 7

func formatHuman(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', humanDigits, 64)
}

// Table is a small result: named columns of equal length and schema
// metadata.
type Table struct {
	Meta map[string]string
	Cols []Column
}

// Rows returns the number of rows.
func (t *Table) Rows() int {
	if len(t.Cols) == 0 {
		return 0
	}
	return t.Cols[0].len()
}

// WriteTable writes t to w in format f, batchRows rows per Arrow record
// batch. The Arrow schema carries t.Meta plus gpc:rows.
func WriteTable(w io.Writer, t *Table, f Format, batchRows int, mem memory.Allocator) error {
	tw := NewTableWriter(w, f, t, t.Rows(), batchRows, mem)
	if err := tw.Write(t); err != nil {
		return err
	}
	return tw.Close()
}

// TableWriter writes a table in batches: Arrow and CSV as they come, the
// text form (for a terminal) at Close.
type TableWriter struct {
	f     Format
	w     io.Writer
	bw    *bufio.Writer
	iw    *ipc.Writer
	rb    *array.RecordBuilder
	cw    *csv.Writer
	text  *Table
	batch int
	err   error
	// Note, if set before Close, is a line printed after a Text table
	// (a summary for people); the other formats do not carry it.
	Note string
}

// NewTableWriter starts a table whose columns have the names and types of
// proto's (its values are not written) and whose schema metadata is
// proto.Meta, plus gpc:rows = rows when rows >= 0.
func NewTableWriter(w io.Writer, f Format, proto *Table, rows, batchRows int, mem memory.Allocator) *TableWriter {
	tw := &TableWriter{f: f, w: w, batch: max(1, batchRows)}
	switch f {
	case Arrow:
		fields := make([]arrow.Field, len(proto.Cols))
		for i := range proto.Cols {
			fields[i] = arrow.Field{Name: proto.Cols[i].Name, Type: proto.Cols[i].arrowType()}
		}
		meta := maps.Clone(proto.Meta)
		if meta == nil {
			meta = map[string]string{}
		}
		if rows >= 0 {
			meta[KeyRows] = strconv.Itoa(rows)
		}
		md := arrow.MetadataFrom(meta)
		schema := arrow.NewSchema(fields, &md)
		tw.bw = bufio.NewWriter(w)
		tw.iw = ipc.NewWriter(tw.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		tw.rb = array.NewRecordBuilder(mem, schema)
	case CSV:
		tw.cw = csv.NewWriter(w)
		rec := make([]string, len(proto.Cols))
		for i := range proto.Cols {
			rec[i] = proto.Cols[i].Name
		}
		tw.err = tw.cw.Write(rec)
	default:
		tw.text = &Table{Meta: proto.Meta}
		for _, c := range proto.Cols {
			tw.text.Cols = append(tw.text.Cols, Column{Name: c.Name, Float: emptyIf(c.Float != nil, []float64{}), Int: emptyIf(c.Int != nil, []int64{}), Str: emptyIf(c.Str != nil, []string{})})
		}
	}
	return tw
}

func emptyIf[T any](cond bool, v []T) []T {
	if cond {
		return v
	}
	return nil
}

// Write appends t's rows; its columns must match the prototype's.
func (tw *TableWriter) Write(t *Table) error {
	if tw.err != nil {
		return tw.err
	}
	for i := range t.Cols {
		if t.Cols[i].len() != t.Rows() {
			panic("format: table columns differ in length")
		}
	}
	switch tw.f {
	case Arrow:
		for lo := 0; lo < t.Rows(); lo += tw.batch {
			hi := min(lo+tw.batch, t.Rows())
			for i := range t.Cols {
				c := &t.Cols[i]
				switch b := tw.rb.Field(i).(type) {
				case *array.Float64Builder:
					b.AppendValues(c.Float[lo:hi], nil)
				case *array.Int64Builder:
					b.AppendValues(c.Int[lo:hi], nil)
				case *array.StringBuilder:
					b.AppendValues(c.Str[lo:hi], nil)
				}
			}
			rec := tw.rb.NewRecord()
			err := tw.iw.Write(rec)
			rec.Release()
			if err != nil {
				tw.err = &IOError{Op: "write output", Err: err}
				return tw.err
			}
		}
	case CSV:
		rec := make([]string, len(t.Cols))
		for r := range t.Rows() {
			for i := range t.Cols {
				rec[i] = t.Cols[i].text(r, true)
			}
			if err := tw.cw.Write(rec); err != nil {
				tw.err = &IOError{Op: "write output", Err: err}
				return tw.err
			}
		}
	default:
		for i := range t.Cols {
			d, c := &tw.text.Cols[i], &t.Cols[i]
			d.Float = append(d.Float, c.Float...)
			d.Int = append(d.Int, c.Int...)
			d.Str = append(d.Str, c.Str...)
		}
	}
	return nil
}

// Close finishes the table (the end-of-stream marker for Arrow) and flushes.
func (tw *TableWriter) Close() error {
	if tw.rb != nil {
		defer tw.rb.Release()
	}
	if tw.err != nil {
		return tw.err
	}
	var err error
	switch tw.f {
	case Arrow:
		if err = tw.iw.Close(); err == nil {
			err = tw.bw.Flush()
		}
	case CSV:
		tw.cw.Flush()
		err = tw.cw.Error()
	default:
		if err = writeTableText(tw.w, tw.text); err == nil && tw.Note != "" {
			_, err = io.WriteString(tw.w, tw.Note+"\n")
		}
	}
	if err != nil {
		return &IOError{Op: "write output", Err: err}
	}
	return nil
}

// cell makes a value printable in one table cell: a string with a control
// character or bytes that are not UTF-8 is shown quoted, Go-style, so that
// every row stays on one line.
func cell(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// pad returns s padded with blanks to width characters, on the left when
// right is set.
func pad(s string, width int, right bool) string {
	fill := strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
	if right {
		return fill + s
	}
	return s + fill
}

// FitWidth returns t with only its leading columns that fit in width
// characters as a text table lays them out (aligned, two blanks apart),
// at least one, and the names of those it left out; width <= 0 or a
// table of one row (printed as name/value lines) keeps them all.
func FitWidth(t *Table, width int) (*Table, []string) {
	if width <= 0 || t.Rows() == 1 {
		return t, nil
	}
	used := 0
	for i := range t.Cols {
		w := utf8.RuneCountInString(cell(t.Cols[i].Name))
		for r := range t.Rows() {
			w = max(w, utf8.RuneCountInString(cell(t.Cols[i].text(r, false))))
		}
		if i > 0 {
			w += 2
		}
		if i > 0 && used+w > width {
			out := &Table{Meta: t.Meta, Cols: t.Cols[:i]}
			var dropped []string
			for _, c := range t.Cols[i:] {
				dropped = append(dropped, c.Name)
			}
			return out, dropped
		}
		used += w
	}
	return t, nil
}

func writeTableText(w io.Writer, t *Table) error {
	bw := bufio.NewWriter(w)
	if t.Rows() == 1 {
		width := 0
		for i := range t.Cols {
			width = max(width, utf8.RuneCountInString(cell(t.Cols[i].Name)))
		}
		for i := range t.Cols {
			fmt.Fprintf(bw, "%s  %s\n", pad(cell(t.Cols[i].Name), width, false), cell(t.Cols[i].text(0, false)))
		}
		return bw.Flush()
	}
	cells := make([][]string, t.Rows()+1)
	width := make([]int, len(t.Cols))
	numeric := make([]bool, len(t.Cols))
	for r := range cells {
		cells[r] = make([]string, len(t.Cols))
		for i := range t.Cols {
			s := t.Cols[i].Name
			if r > 0 {
				s = t.Cols[i].text(r-1, false)
			}
			cells[r][i] = cell(s)
			width[i] = max(width[i], utf8.RuneCountInString(cells[r][i]))
		}
	}
	for i := range t.Cols {
		numeric[i] = t.Cols[i].Str == nil
	}
	for _, row := range cells {
		var sb strings.Builder
		for i, s := range row {
			if i > 0 {
				sb.WriteString("  ")
			}
			sb.WriteString(pad(s, width[i], numeric[i]))
		}
		bw.WriteString(strings.TrimRight(sb.String(), " "))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
