package format

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
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

// ReadCovariance reads a whole covariance from r (train block and test
// rows), detecting its form from the content, not the name: an Arrow IPC
// stream or file holding either a `cov` list column (the covariance stream)
// or N numeric columns (a square matrix, as a dataframe writes it), or CSV
// text, with or without a header, whose N numeric columns form a square
// matrix. name identifies the input in messages. A malformed, truncated or
// inconsistent input is a *DataError saying where; a failing reader is an
// *IOError. NewCovReader reads the test rows as a stream instead.
func ReadCovariance(r io.Reader, name string, mem memory.Allocator) (*Covariance, error) {
	cr, err := NewCovReader(r, name, mem)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	c := cr.Train()
	for {
		t, err := cr.NextTest(4096)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return c, nil
		}
		c.Test.Cov = append(c.Test.Cov, t.Cov...)
		c.Test.Var = append(c.Test.Var, t.Var...)
		c.Test.ID = append(c.Test.ID, t.ID...)
		c.Test.Y = append(c.Test.Y, t.Y...)
	}
}

// CovReader reads a covariance stream: the train block when it is opened,
// then the test rows a batch at a time, so that they need not all be in
// memory.
type CovReader struct {
	name   string
	w      *ioWatch
	src    recordSource
	l      *covLayout
	b      *covBuilder
	rec    arrow.Record // the current record batch, rows from recRow on unread
	recRow int
	batch  int
	done   bool
	train  *Covariance
}

// NewCovReader opens a covariance input (forms as ReadCovariance) and reads
// its train block.
func NewCovReader(r io.Reader, name string, mem memory.Allocator) (cr *CovReader, err error) {
	in, err := openInput(r, name)
	if err != nil {
		return nil, err
	}
	switch in.kind {
	case kindParquet:
		return nil, dataErrorf(name, "Parquet is not read as a covariance; give an Arrow IPC stream or file, or CSV")
	case kindText:
		c, err := readCSVCov(in.br, name, in.w)
		if err != nil {
			return nil, err
		}
		return &CovReader{name: name, done: true, train: c}, nil
	}
	defer recoverArrow(name, &err)
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, err
	}
	cr = &CovReader{name: name, w: in.w, src: src}
	if err := cr.start(schema); err != nil {
		src.release()
		return nil, err
	}
	return cr, nil
}

// start reads the schema's layout and the train rows.
func (cr *CovReader) start(schema *arrow.Schema) error {
	l, err := newCovLayout(schema, cr.name)
	if err != nil {
		return err
	}
	cr.l = l
	meta := schema.Metadata().ToMap()
	layout := "cov column"
	if l.cov < 0 {
		layout = "N numeric columns"
	}
	for cr.b == nil || cr.b.rows < cr.b.c.N {
		ok, err := cr.load()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if cr.b == nil {
			n := l.n
			if n < 0 { // a variable-size list column: N is the first row's length
				if n, err = firstListLen(cr.rec.Column(l.cov), cr.name); err != nil {
					return err
				}
				l.n = n
			}
			cr.b = newCovBuilder(n, cr.name, layout, meta, l.attr)
		}
		for cr.recRow < int(cr.rec.NumRows()) && cr.b.rows < cr.b.c.N {
			if err := cr.b.addRow(cr.rec, l, cr.recRow, cr.batch); err != nil {
				return err
			}
			cr.recRow++
		}
	}
	if cr.b == nil || cr.b.rows == 0 {
		return dataErrorf(cr.name, "no rows: a covariance needs at least one variable")
	}
	if cr.b.rows < cr.b.c.N {
		return cr.b.short()
	}
	cr.train = cr.b.c
	if l.cov < 0 { // a square matrix has no test rows
		if ok, err := cr.load(); err != nil {
			return err
		} else if ok {
			return dataErrorf(fmt.Sprintf("%s: batch %d", cr.name, cr.batch), "the matrix is not square: %d numeric columns but more rows", cr.b.c.N)
		}
		return cr.b.finish()
	}
	return nil
}

// load makes cr.rec a record with unread rows, reading the next batch if
// needed; it reports false at the end of the input.
func (cr *CovReader) load() (bool, error) {
	for cr.rec == nil || cr.recRow >= int(cr.rec.NumRows()) {
		if cr.done {
			return false, nil
		}
		if cr.rec != nil {
			cr.batch++
		}
		rec, err := cr.src.next()
		if err != nil {
			return false, cr.w.classify(fmt.Sprintf("%s: batch %d", cr.name, cr.batch), err)
		}
		if rec == nil {
			cr.done = true
			cr.rec = nil
			return false, nil
		}
		cr.rec, cr.recRow = rec, 0
	}
	return true, nil
}

// Train returns the train block and its attributes (Test is empty).
func (cr *CovReader) Train() *Covariance { return cr.train }

// NextTest returns up to max further test rows, or nil at the end of the
// input, after checking the row count against gpc:rows.
func (cr *CovReader) NextTest(max int) (t *TestRows, err error) {
	if cr.src == nil || cr.b == nil {
		return nil, nil
	}
	defer recoverArrow(cr.name, &err)
	b := cr.b
	out := &TestRows{}
	b.test = out
	for out.Len() < max {
		ok, err := cr.load()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if n := b.c.N; cap(out.Cov)-len(out.Cov) < n {
			// Room for the rows of this batch that this call takes (rows
			// that have arrived): one allocation, not append's several.
			out.Cov = growCap(out.Cov, len(out.Cov)+min(max-out.Len(), int(cr.rec.NumRows())-cr.recRow)*n)
		}
		if err := b.addRow(cr.rec, cr.l, cr.recRow, cr.batch); err != nil {
			return nil, err
		}
		cr.recRow++
	}
	b.test = nil
	if out.Len() == 0 {
		if err := b.finish(); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return out, nil
}

// Meta returns the input's schema metadata.
func (cr *CovReader) Meta() map[string]string { return cr.train.Meta }

// Close releases the reader.
func (cr *CovReader) Close() {
	if cr.src != nil {
		cr.src.release()
		cr.src = nil
	}
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
	case *array.Dictionary:
		return numAt(a.Dictionary(), a.GetValueIndex(i))
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
	case *array.Dictionary:
		return strAt(a.Dictionary(), a.GetValueIndex(i))
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
	test  *TestRows // where test rows go (NextTest's batch)
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

// addRow appends row i of rec, the stream's next row, to the train block or
// the test rows.
func (b *covBuilder) addRow(rec arrow.Record, l *covLayout, i, batch int) error {
	n := b.c.N
	row := b.rows
	where := fmt.Sprintf("%s: batch %d, row %d", b.name, batch, row)
	train := row < n
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
		dst = &b.test.Cov
	} else if row == max(1, n/16) {
		// A sixteenth of the train block has arrived: trust its claimed
		// size (at most 16 times the data seen), rather than let append's
		// growth copy the block's rows again and again and leave several
		// times them as garbage.
		*dst = growCap(*dst, n*n)
	}
	if err := b.matrixRow(dst, rec, l, i, where); err != nil {
		return err
	}
	if err := b.attributes(rec, l, i, train, where); err != nil {
		return err
	}
	b.rows++
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
	if f, ok := vals.(*array.Float64); ok {
		// The usual row: float64 entries, checked and appended as one
		// slice (a row with a null or a bad entry is left to the loop
		// below, for its message). The validity bitmap is read as IsNull
		// reads it, whatever the stream claims its null count is.
		xs := f.Float64Values()[s:e]
		if allFinite(xs) && !anyNull(f, int(s), int(e)) {
			*dst = append(*dst, xs...)
			return nil
		}
	}
	for k := range n {
		v, ok := numAt(vals, int(s)+k)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			cw := fmt.Sprintf("%s, %s[%d]", where, ColCov, k)
			if !ok {
				return dataErrorf(cw, "null: covariance entries must be finite numbers")
			}
			return finite(v, cw)
		}
		*dst = append(*dst, v)
	}
	return nil
}

// growCap returns s with room for c values: s itself if it has it, else a
// copy in a new slice of that capacity. Unlike slices.Grow it does not
// zero the new room (fresh memory from the system is zero already), which
// at N = 10^4 is 800 MB written for nothing.
func growCap(s []float64, c int) []float64 {
	if cap(s) >= c {
		return s
	}
	t := make([]float64, len(s), c)
	copy(t, s)
	return t
}

// allFinite reports whether no value of xs is NaN or infinite: none has
// the exponent bits all set.
func allFinite(xs []float64) bool {
	const exp = 0x7ff << 52
	for _, v := range xs {
		if math.Float64bits(v)&exp == exp {
			return false
		}
	}
	return true
}

// anyNull reports whether a value lo..hi of f is null, reading the validity
// bitmap as IsNull does, whatever the stream claims its null count is.
func anyNull(f *array.Float64, lo, hi int) bool {
	if len(f.NullBitmapBytes()) == 0 {
		return false
	}
	for i := lo; i < hi; i++ {
		if f.IsNull(i) {
			return true
		}
	}
	return false
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
		b.test.Var = append(b.test.Var, v)
		if c, ok := l.attr[ColID]; ok {
			s, _ := strAt(rec.Column(c), i)
			b.test.ID = append(b.test.ID, s)
		}
		if c, ok := l.attr[ColY]; ok {
			// A test row's label may be unknown (null): NaN.
			y, ok := numAt(rec.Column(c), i)
			if !ok {
				y = math.NaN()
			}
			b.test.Y = append(b.test.Y, y)
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

// short is the error for a stream that ended inside the train block.
func (b *covBuilder) short() error {
	what := "numeric columns"
	if b.c.Layout == "cov column" {
		what = "entries per cov row"
	}
	return dataErrorf(b.name, "only %d rows for %d %s: the matrix is not square, or the input was cut short", b.rows, b.c.N, what)
}

// finish checks the row count at the end of the input against gpc:rows.
func (b *covBuilder) finish() error {
	if err := checkRows(b.c.Meta, b.rows); err != nil {
		return dataErrorf(b.name, "%v", err)
	}
	return nil
}
