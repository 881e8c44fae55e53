package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Covariance is the content of a covariance stream (schema
// gpc.covariance/1): N Gaussian variables (the train rows) with their N x N
// covariance and optional per-row attributes, then optional test rows that
// carry each test variable's covariance with the N train variables and its
// own variance.
type Covariance struct {
	N int
	// Cov is the N x N train block, row-major.
	Cov []float64
	// Lower, Upper and Mean are the per-variable box and mean, nil when the
	// input had no such column (core then uses 0, +Inf and 0).
	Lower, Upper, Mean []float64
	// Y holds the train rows' labels, nil when absent.
	Y []float64
	// ID holds the train rows' identifiers, nil when absent.
	ID []string
	// Test holds the rows after the train block.
	Test TestRows
	// Meta is the input's schema metadata (empty for CSV).
	Meta map[string]string
	// Layout says how the matrix was given, for messages: "cov column",
	// "N numeric columns" or "CSV".
	Layout string
}

// TestRows are the covariance stream's rows after the train block.
type TestRows struct {
	// Cov is T x N, row-major: row t is the covariance of test variable t
	// with the N train variables.
	Cov []float64
	// Var is each test variable's variance.
	Var []float64
	ID  []string
	Y   []float64
}

// Len returns the number of test rows.
func (t *TestRows) Len() int { return len(t.Var) }

// Column names of the covariance stream (format/doc.go).
const (
	ColCov   = "cov"
	ColLower = "lower"
	ColUpper = "upper"
	ColMean  = "mean"
	ColVar   = "var"
	ColY     = "y"
	ColID    = "id"
	ColRole  = "role"
)

// attributeCols are the per-row columns other than the matrix; in the
// N-column layout every other numeric column is a matrix column.
var attributeCols = []string{ColLower, ColUpper, ColMean, ColVar, ColY, ColID, ColRole}

func isAttribute(name string) bool {
	for _, a := range attributeCols {
		if name == a {
			return true
		}
	}
	return false
}

// isIgnored reports columns that dataframe libraries add on their own (the
// pandas index that pyarrow writes).
func isIgnored(name string) bool {
	return strings.HasPrefix(name, "__index_level_")
}

var (
	arrowFileMagic   = []byte("ARROW1")
	arrowStreamMagic = []byte{0xff, 0xff, 0xff, 0xff}
	parquetMagic     = []byte("PAR1")
)

// ReadCovariance reads a covariance from r, detecting its form from the
// content, not the name: an Arrow IPC stream or file holding either a `cov`
// list column (the covariance stream) or N numeric columns (a square matrix,
// as a dataframe writes it), or CSV text, with or without a header, whose N
// numeric columns form a square matrix. name identifies the input in
// messages. A malformed, truncated or inconsistent input is a *DataError
// saying where; a failing reader is an *IOError.
func ReadCovariance(r io.Reader, name string, mem memory.Allocator) (cov *Covariance, err error) {
	w := &ioWatch{r: r}
	br := bufio.NewReaderSize(w, 64<<10)
	head, _ := br.Peek(8)
	if len(head) == 0 {
		if w.err != nil {
			return nil, &IOError{Op: "read " + name, Err: w.err}
		}
		return nil, dataErrorf(name, "empty input")
	}
	defer func() {
		// The Arrow decoder trusts buffer lengths it has not checked; a
		// corrupt message can make it, or us, index out of range.
		if p := recover(); p != nil {
			cov, err = nil, dataErrorf(name, "malformed Arrow data (%v)", p)
		}
	}()
	switch {
	case bytes.HasPrefix(head, arrowFileMagic):
		// A file is read whole: its footer, at the end, holds the schema.
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, w.classify(name, err)
		}
		if err := checkFile(data); err != nil {
			return nil, dataErrorf(name, "%v", err)
		}
		fr, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
		if err != nil {
			return nil, dataErrorf(name, "not a valid Arrow IPC file: %v", err)
		}
		defer fr.Close()
		return readArrowCov(&fileSource{fr: fr}, fr.Schema(), name, w)
	case bytes.HasPrefix(head, arrowStreamMagic):
		sr, err := ipc.NewReader(newIPCGuard(br), ipc.WithAllocator(mem))
		if err != nil {
			return nil, w.classify(name, fmt.Errorf("not a valid Arrow IPC stream: %w", err))
		}
		defer sr.Release()
		return readArrowCov(&streamSource{sr: sr}, sr.Schema(), name, w)
	case bytes.HasPrefix(head, parquetMagic):
		return nil, dataErrorf(name, "Parquet is not read as a covariance; give an Arrow IPC stream or file, or CSV")
	}
	return readCSVCov(br, name, w)
}

// covLayout maps a schema's fields to the covariance stream's columns.
type covLayout struct {
	cov    int   // the list column, or -1
	matrix []int // the N-column layout's matrix columns
	attr   map[string]int
	n      int
}

func newCovLayout(s *arrow.Schema, name string) (*covLayout, error) {
	if v, ok := s.Metadata().GetValue(KeySchema); ok && v != SchemaCovariance {
		return nil, dataErrorf(name, "schema %q where a covariance stream (%s) was expected", v, SchemaCovariance)
	}
	l := &covLayout{cov: -1, attr: map[string]int{}}
	bad := -1 // the first non-numeric column outside the known ones
	for i, f := range s.Fields() {
		switch {
		case f.Name == ColCov:
			n, err := listSize(f.Type)
			if err != nil {
				return nil, dataErrorf(name, "column %q: %v", f.Name, err)
			}
			l.cov, l.n = i, n
		case isAttribute(f.Name):
			if err := checkAttrType(f); err != nil {
				return nil, dataErrorf(name, "column %q: %v", f.Name, err)
			}
			l.attr[f.Name] = i
		case isIgnored(f.Name):
		default:
			if bad < 0 && !isNumeric(f.Type) {
				bad = i
			}
			l.matrix = append(l.matrix, i)
		}
	}
	if l.cov >= 0 {
		l.matrix = nil
		return l, nil
	}
	if bad >= 0 {
		f := s.Field(bad)
		return nil, dataErrorf(name, "no %q column, and column %q has type %s: a covariance is either a %q list column or all-numeric columns", ColCov, f.Name, f.Type, ColCov)
	}
	if len(l.matrix) == 0 {
		return nil, dataErrorf(name, "no %q column and no numeric columns", ColCov)
	}
	l.n = len(l.matrix)
	return l, nil
}

// listSize returns N for a FixedSizeList of floats; -1 for a variable-size
// list of floats, whose rows must then all have the same length.
func listSize(t arrow.DataType) (int, error) {
	var elem arrow.DataType
	n := -1
	switch lt := t.(type) {
	case *arrow.FixedSizeListType:
		elem, n = lt.Elem(), int(lt.Len())
		if n < 1 {
			return 0, errors.New("list size must be at least 1")
		}
	case *arrow.ListType:
		elem = lt.Elem()
	case *arrow.LargeListType:
		elem = lt.Elem()
	default:
		return 0, fmt.Errorf("type %s: want FixedSizeList<float64>[N]", t)
	}
	if elem.ID() != arrow.FLOAT64 && elem.ID() != arrow.FLOAT32 {
		return 0, fmt.Errorf("type %s: the list items must be float64 (or float32)", t)
	}
	return n, nil
}

func checkAttrType(f arrow.Field) error {
	switch f.Name {
	case ColID:
		if !isNumeric(f.Type) && f.Type.ID() != arrow.STRING && f.Type.ID() != arrow.LARGE_STRING {
			return fmt.Errorf("type %s: want a string or an integer", f.Type)
		}
	case ColRole:
		if f.Type.ID() != arrow.STRING && f.Type.ID() != arrow.LARGE_STRING {
			return fmt.Errorf("type %s: want a string (train or test)", f.Type)
		}
	default:
		if !isNumeric(f.Type) {
			return fmt.Errorf("type %s: want a number", f.Type)
		}
	}
	return nil
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.FLOAT64, arrow.FLOAT32, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// numAt returns element i of a numeric array as a float64; ok is false for a
// null.
func numAt(a arrow.Array, i int) (v float64, ok bool) {
	if a.IsNull(i) {
		return 0, false
	}
	switch a := a.(type) {
	case *array.Float64:
		return a.Value(i), true
	case *array.Float32:
		return float64(a.Value(i)), true
	case *array.Int8:
		return float64(a.Value(i)), true
	case *array.Int16:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Uint8:
		return float64(a.Value(i)), true
	case *array.Uint16:
		return float64(a.Value(i)), true
	case *array.Uint32:
		return float64(a.Value(i)), true
	case *array.Uint64:
		return float64(a.Value(i)), true
	}
	panic("format: numAt on a non-numeric array")
}

// strAt returns element i of a string or integer array as a string.
func strAt(a arrow.Array, i int) (string, bool) {
	if a.IsNull(i) {
		return "", false
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	}
	v, _ := numAt(a, i)
	return strconv.FormatFloat(v, 'g', -1, 64), true
}

// covBuilder accumulates rows into a Covariance, checking each value.
type covBuilder struct {
	c     *Covariance
	name  string
	rows  int // rows seen so far
	roles bool
}

func newCovBuilder(n int, name, layout string, meta map[string]string, attrs map[string]int) *covBuilder {
	// Nothing is sized from n, which the input claims: the slices grow
	// with the rows that actually arrive.
	c := &Covariance{N: n, Cov: []float64{}, Meta: meta, Layout: layout}
	if _, ok := attrs[ColLower]; ok {
		c.Lower = []float64{}
	}
	if _, ok := attrs[ColUpper]; ok {
		c.Upper = []float64{}
	}
	if _, ok := attrs[ColMean]; ok {
		c.Mean = []float64{}
	}
	if _, ok := attrs[ColY]; ok {
		c.Y = []float64{}
	}
	if _, ok := attrs[ColID]; ok {
		c.ID = []string{}
	}
	_, roles := attrs[ColRole]
	return &covBuilder{c: c, name: name, roles: roles}
}

// finite checks one matrix entry.
func finite(v float64, where string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dataErrorf(where, "value %v: covariance entries must be finite", v)
	}
	return nil
}

// recordSource abstracts the Arrow stream and file readers.
type recordSource interface {
	// next returns the next record (owned by the source until the next
	// call), nil at the end.
	next() (arrow.Record, error)
}

type streamSource struct{ sr *ipc.Reader }

func (s *streamSource) next() (arrow.Record, error) {
	if s.sr.Next() {
		return s.sr.Record(), nil
	}
	return nil, s.sr.Err()
}

type fileSource struct {
	fr *ipc.FileReader
	i  int
}

func (s *fileSource) next() (arrow.Record, error) {
	if s.i >= s.fr.NumRecords() {
		return nil, nil
	}
	s.i++
	return s.fr.Record(s.i - 1) // released by the reader at the next call or Close
}

// readArrowCov reads every record of src into a Covariance.
func readArrowCov(src recordSource, schema *arrow.Schema, name string, w *ioWatch) (*Covariance, error) {
	l, err := newCovLayout(schema, name)
	if err != nil {
		return nil, err
	}
	meta := schema.Metadata().ToMap()
	layout := "cov column"
	if l.cov < 0 {
		layout = "N numeric columns"
	}
	b := (*covBuilder)(nil)
	if l.n > 0 {
		b = newCovBuilder(l.n, name, layout, meta, l.attr)
	}
	for batch := 0; ; batch++ {
		rec, err := src.next()
		if err != nil {
			return nil, w.classify(fmt.Sprintf("%s: batch %d", name, batch), err)
		}
		if rec == nil {
			break
		}
		if b == nil {
			// A variable-size list column: N is the first row's length.
			if rec.NumRows() == 0 {
				continue
			}
			n, err := firstListLen(rec.Column(l.cov), name)
			if err != nil {
				return nil, err
			}
			l.n = n
			b = newCovBuilder(n, name, layout, meta, l.attr)
		}
		if err := b.addRecord(rec, l, batch); err != nil {
			return nil, err
		}
	}
	if b == nil || b.rows == 0 {
		return nil, dataErrorf(name, "no rows: a covariance needs at least one variable")
	}
	if err := b.finish(meta); err != nil {
		return nil, err
	}
	return b.c, nil
}

func firstListLen(col arrow.Array, name string) (int, error) {
	lst := col.(interface{ ValueOffsets(int) (int64, int64) })
	if col.IsNull(0) {
		return 0, dataErrorf(name+": row 0", "column %q is null", ColCov)
	}
	s, e := lst.ValueOffsets(0)
	if e-s < 1 {
		return 0, dataErrorf(name+": row 0", "column %q is an empty list", ColCov)
	}
	return int(e - s), nil
}

// addRecord appends the rows of one record batch.
func (b *covBuilder) addRecord(rec arrow.Record, l *covLayout, batch int) error {
	n := b.c.N
	rows := int(rec.NumRows())
	for i := range rows {
		row := b.rows
		where := fmt.Sprintf("%s: batch %d, row %d", b.name, batch, row)
		train := row < n
		if l.cov < 0 && !train {
			return dataErrorf(where, "the matrix is not square: %d numeric columns but more rows", n)
		}
		if b.roles {
			role, ok := strAt(rec.Column(l.attr[ColRole]), i)
			want := "train"
			if !train {
				want = "test"
			}
			if !ok || role != want {
				return dataErrorf(where, "role %q: rows 0..%d are the train block (role train) and later rows are test rows (role test)", role, n-1)
			}
		}
		dst := &b.c.Cov
		if !train {
			dst = &b.c.Test.Cov
		}
		if err := b.matrixRow(dst, rec, l, i, where); err != nil {
			return err
		}
		if err := b.attributes(rec, l, i, train, where); err != nil {
			return err
		}
		b.rows++
	}
	return nil
}

// matrixRow appends row i's matrix entries to dst.
func (b *covBuilder) matrixRow(dst *[]float64, rec arrow.Record, l *covLayout, i int, where string) error {
	n := b.c.N
	if l.cov < 0 {
		for _, c := range l.matrix {
			col := rec.Column(c)
			v, ok := numAt(col, i)
			cw := fmt.Sprintf("%s, column %q", where, rec.ColumnName(c))
			if !ok {
				return dataErrorf(cw, "null: covariance entries must be finite numbers")
			}
			if err := finite(v, cw); err != nil {
				return err
			}
			*dst = append(*dst, v)
		}
		return nil
	}
	col := rec.Column(l.cov)
	if col.IsNull(i) {
		return dataErrorf(where, "column %q is null", ColCov)
	}
	lst := col.(interface {
		ValueOffsets(int) (int64, int64)
		ListValues() arrow.Array
	})
	s, e := lst.ValueOffsets(i)
	if int(e-s) != n {
		return dataErrorf(where, "column %q has %d entries, want %d (the number of train rows)", ColCov, e-s, n)
	}
	vals := lst.ListValues()
	if s < 0 || int(e) > vals.Len() {
		return dataErrorf(where, "malformed Arrow data: column %q row points past its values", ColCov)
	}
	for k := range n {
		j := int(s) + k
		v, ok := numAt(vals, j)
		cw := fmt.Sprintf("%s, %s[%d]", where, ColCov, k)
		if !ok {
			return dataErrorf(cw, "null: covariance entries must be finite numbers")
		}
		if err := finite(v, cw); err != nil {
			return err
		}
		*dst = append(*dst, v)
	}
	return nil
}

// attributes appends row i's per-row attributes.
func (b *covBuilder) attributes(rec arrow.Record, l *covLayout, i int, train bool, where string) error {
	num := func(col string) (float64, bool, error) {
		c, ok := l.attr[col]
		if !ok {
			return 0, false, nil
		}
		v, ok := numAt(rec.Column(c), i)
		if !ok {
			return 0, false, dataErrorf(fmt.Sprintf("%s, column %q", where, col), "null")
		}
		if math.IsNaN(v) {
			return 0, false, dataErrorf(fmt.Sprintf("%s, column %q", where, col), "NaN")
		}
		return v, true, nil
	}
	if !train {
		c, ok := l.attr[ColVar]
		if !ok {
			return dataErrorf(where, "a test row (after the %d train rows) needs a %q column", b.c.N, ColVar)
		}
		v, ok := numAt(rec.Column(c), i)
		if !ok || !(v > 0) || math.IsInf(v, 0) {
			return dataErrorf(fmt.Sprintf("%s, column %q", where, ColVar), "%v: a test row's variance must be a positive finite number", v)
		}
		b.c.Test.Var = append(b.c.Test.Var, v)
		if c, ok := l.attr[ColID]; ok {
			s, _ := strAt(rec.Column(c), i)
			b.c.Test.ID = append(b.c.Test.ID, s)
		}
		if _, ok := l.attr[ColY]; ok {
			y, _, err := num(ColY)
			if err != nil {
				return err
			}
			b.c.Test.Y = append(b.c.Test.Y, y)
		}
		return nil
	}
	for _, a := range []struct {
		col string
		dst *[]float64
	}{{ColLower, &b.c.Lower}, {ColUpper, &b.c.Upper}, {ColMean, &b.c.Mean}, {ColY, &b.c.Y}} {
		v, ok, err := num(a.col)
		if err != nil {
			return err
		}
		if ok {
			*a.dst = append(*a.dst, v)
		}
	}
	if c, ok := l.attr[ColID]; ok {
		s, ok := strAt(rec.Column(c), i)
		if !ok {
			return dataErrorf(fmt.Sprintf("%s, column %q", where, ColID), "null")
		}
		b.c.ID = append(b.c.ID, s)
	}
	return nil
}

// finish checks the row count against N and gpc:rows.
func (b *covBuilder) finish(meta map[string]string) error {
	n := b.c.N
	if b.rows < n {
		what := "numeric columns"
		if b.c.Layout == "cov column" {
			what = "entries per cov row"
		}
		return dataErrorf(b.name, "only %d rows for %d %s: the matrix is not square, or the input was cut short", b.rows, n, what)
	}
	if v, ok := meta[KeyRows]; ok {
		want, err := strconv.Atoi(v)
		if err != nil {
			return dataErrorf(b.name, "metadata %s = %q is not a row count", KeyRows, v)
		}
		if want != b.rows {
			return dataErrorf(b.name, "%d rows but the metadata (%s) announces %d: the stream was cut short", b.rows, KeyRows, want)
		}
	}
	return nil
}
