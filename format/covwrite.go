package format

import (
	"bufio"
	"io"
	"maps"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// CovarianceSchema returns the schema of a covariance stream with n train
// variables: `cov` as a non-nullable FixedSizeList<float64>[n], then the
// optional float64 columns lower, upper, mean and y and the string column id
// when the flags ask for them, and var (float64, null on train rows) and
// role (string) when there are test rows. meta is merged into the schema
// metadata after gpc:schema and gpc:n.
func CovarianceSchema(n int, lower, upper, mean, y, id, test bool, meta map[string]string) *arrow.Schema {
	item := arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Float64}
	fields := []arrow.Field{{Name: ColCov, Type: arrow.FixedSizeListOfField(int32(n), item)}}
	for _, c := range []struct {
		name string
		on   bool
	}{{ColLower, lower}, {ColUpper, upper}, {ColMean, mean}, {ColY, y}} {
		if c.on {
			// y is null on test rows whose label is unknown.
			fields = append(fields, arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: c.name == ColY})
		}
	}
	if id {
		fields = append(fields, arrow.Field{Name: ColID, Type: arrow.BinaryTypes.String})
	}
	if test {
		fields = append(fields,
			arrow.Field{Name: ColVar, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			arrow.Field{Name: ColRole, Type: arrow.BinaryTypes.String})
	}
	m := map[string]string{KeySchema: SchemaCovariance, KeyN: strconv.Itoa(n)}
	maps.Copy(m, meta)
	md := arrow.MetadataFrom(m)
	return arrow.NewSchema(fields, &md)
}

// WriteCovariance writes c as a covariance stream, batchRows rows per record
// batch, with meta (and gpc:rows) in the schema metadata.
func WriteCovariance(w io.Writer, c *Covariance, meta map[string]string, batchRows int, mem memory.Allocator) error {
	cw := NewCovWriter(w, c, c.Test.Len(), meta, batchRows, mem)
	if err := cw.WriteTest(&c.Test); err != nil {
		return err
	}
	return cw.Close()
}

// CovWriter writes a covariance stream: the train block at once, then test
// rows as they are computed.
type CovWriter struct {
	bw      *bufio.Writer
	iw      *ipc.Writer
	rb      *array.RecordBuilder
	train   *Covariance
	batch   int
	inBatch int
	err     error
}

// NewCovWriter starts a covariance stream with train's block and
// attributes; tests is the number of test rows that will follow (it sets
// gpc:rows and whether the schema has the var and role columns), or -1 if
// unknown (then no gpc:rows, and the test columns are present).
func NewCovWriter(w io.Writer, train *Covariance, tests int, meta map[string]string, batchRows int, mem memory.Allocator) *CovWriter {
	n := train.N
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	if tests >= 0 {
		m[KeyRows] = strconv.Itoa(n + tests)
	}
	schema := CovarianceSchema(n, train.Lower != nil, train.Upper != nil, train.Mean != nil, train.Y != nil, train.ID != nil, tests != 0, m)
	cw := &CovWriter{bw: bufio.NewWriter(w), train: train, batch: max(1, batchRows)}
	cw.iw = ipc.NewWriter(cw.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	cw.rb = array.NewRecordBuilder(mem, schema)
	hasTest := tests != 0
	for r := range n {
		cw.row(train.Cov[r*n:r*n+n], true, r, nil, hasTest)
	}
	return cw
}

// row appends one row: a train row r, or a test row r of t.
func (cw *CovWriter) row(cov []float64, train bool, r int, t *TestRows, hasTest bool) {
	if cw.err != nil {
		return
	}
	c := cw.train
	rb := cw.rb
	col := 0
	lb := rb.Field(col).(*array.FixedSizeListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues(cov, nil)
	col++
	var testY []float64
	if t != nil {
		testY = t.Y
	}
	for _, a := range []struct {
		train, test []float64
		def         float64 // a test row's value when it has none
	}{{c.Lower, nil, 0}, {c.Upper, nil, math.Inf(1)}, {c.Mean, nil, 0}, {c.Y, testY, math.NaN()}} {
		if a.train == nil {
			continue
		}
		fb := rb.Field(col).(*array.Float64Builder)
		switch {
		case train:
			fb.Append(a.train[r])
		case a.test != nil && !math.IsNaN(a.test[r]):
			fb.Append(a.test[r])
		case math.IsNaN(a.def):
			fb.AppendNull()
		default:
			fb.Append(a.def)
		}
		col++
	}
	if c.ID != nil {
		sb := rb.Field(col).(*array.StringBuilder)
		switch {
		case train:
			sb.Append(c.ID[r])
		case t != nil && t.ID != nil:
			sb.Append(t.ID[r])
		default:
			sb.Append("")
		}
		col++
	}
	if hasTest {
		vb := rb.Field(col).(*array.Float64Builder)
		rl := rb.Field(col + 1).(*array.StringBuilder)
		if train {
			vb.AppendNull()
			rl.Append("train")
		} else {
			vb.Append(t.Var[r])
			rl.Append("test")
		}
	}
	cw.inBatch++
	if cw.inBatch == cw.batch {
		cw.flush()
	}
}

func (cw *CovWriter) flush() {
	if cw.err != nil || cw.inBatch == 0 {
		return
	}
	rec := cw.rb.NewRecord()
	defer rec.Release()
	cw.inBatch = 0
	if err := cw.iw.Write(rec); err != nil {
		cw.err = &IOError{Op: "write covariance", Err: err}
	}
}

// WriteTest appends test rows.
func (cw *CovWriter) WriteTest(t *TestRows) error {
	n := cw.train.N
	for r := range t.Len() {
		cw.row(t.Cov[r*n:r*n+n], false, r, t, true)
	}
	return cw.err
}

// Close writes the last batch and the end-of-stream marker.
func (cw *CovWriter) Close() error {
	defer cw.rb.Release()
	cw.flush()
	if cw.err != nil {
		return cw.err
	}
	if err := cw.iw.Close(); err != nil {
		return &IOError{Op: "write covariance", Err: err}
	}
	if err := cw.bw.Flush(); err != nil {
		return &IOError{Op: "write covariance", Err: err}
	}
	return nil
}
