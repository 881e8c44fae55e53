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
// batch (at most CovBatchRows), with meta (and gpc:rows) in the schema
// metadata.
func WriteCovariance(w io.Writer, c *Covariance, meta map[string]string, batchRows int, mem memory.Allocator) error {
	cw := NewCovWriter(w, c, c.Test.Len(), meta, batchRows, mem)
	if err := cw.WriteTest(&c.Test); err != nil {
		return err
	}
	return cw.Close()
}

// maxCovBatchBytes bounds the matrix entries of one record batch of a
// covariance stream: 32 MiB, half the reader's trustedLen, so that the
// reader passes every batch body straight into Arrow's buffer (a larger one
// costs it a growing extra copy), and neither side holds more than a few
// tens of megabytes besides the matrix.
const maxCovBatchBytes = 32 << 20

// CovBatchRows returns the rows per record batch of a covariance stream
// with n train variables: batchRows (--batch-size), or fewer where that
// many rows would hold more than 32 MiB of matrix entries (n > 1024 at
// 4096 rows), and at least 1.
func CovBatchRows(n, batchRows int) int {
	return max(1, min(batchRows, maxCovBatchBytes/(8*max(1, n))))
}

// CovWriter writes a covariance stream: the train block at once, then test
// rows as they are computed. The matrix rows of a batch that lies within one
// caller's slice are written from it without a copy; the others are copied
// into a buffer of one batch.
type CovWriter struct {
	bw      *bufio.Writer
	iw      *ipc.Writer
	schema  *arrow.Schema
	attrs   []array.Builder // the columns after cov
	train   *Covariance
	hasTest bool
	batch   int
	buf     []float64 // the pending batch's matrix rows (inBatch of them)
	inBatch int
	err     error
}

// NewCovWriter starts a covariance stream with train's block and
// attributes; tests is the number of test rows that will follow (it sets
// gpc:rows and whether the schema has the var and role columns), or -1 if
// unknown (then no gpc:rows, and the test columns are present). It writes
// the train block before it returns: train.Cov must not change until then.
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
	cw := &CovWriter{bw: bufio.NewWriter(w), schema: schema, train: train, hasTest: tests != 0, batch: CovBatchRows(n, batchRows)}
	cw.iw = ipc.NewWriter(cw.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, f := range schema.Fields()[1:] {
		cw.attrs = append(cw.attrs, array.NewBuilder(mem, f.Type))
	}
	cw.rows(train.Cov, n, true, nil)
	return cw
}

// rows appends total rows whose matrix entries are cov (total x N): the
// train block, or the test rows of t. A run of whole batches goes out as it
// is; the rest is copied into cw.buf.
func (cw *CovWriter) rows(cov []float64, total int, train bool, t *TestRows) {
	n := cw.train.N
	cov = cov[:total*n] // panics if cov is short, as gonum does on a shape mismatch
	for r := 0; r < total && cw.err == nil; {
		if cw.inBatch == 0 && total-r >= cw.batch {
			for k := range cw.batch {
				cw.attributes(train, r+k, t)
			}
			cw.inBatch = cw.batch
			cw.flush(cov[r*n : (r+cw.batch)*n])
			r += cw.batch
			continue
		}
		k := min(cw.batch-cw.inBatch, total-r)
		if cw.buf == nil {
			cw.buf = make([]float64, 0, cw.batch*n)
		}
		cw.buf = append(cw.buf, cov[r*n:(r+k)*n]...)
		for i := range k {
			cw.attributes(train, r+i, t)
		}
		cw.inBatch += k
		r += k
		if cw.inBatch == cw.batch {
			cw.flush(cw.buf)
		}
	}
}

// attributes appends the per-row columns of a train row r, or of a test
// row r of t.
func (cw *CovWriter) attributes(train bool, r int, t *TestRows) {
	c := cw.train
	col := 0
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
		fb := cw.attrs[col].(*array.Float64Builder)
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
		sb := cw.attrs[col].(*array.StringBuilder)
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
	if cw.hasTest {
		vb := cw.attrs[col].(*array.Float64Builder)
		rl := cw.attrs[col+1].(*array.StringBuilder)
		if train {
			vb.AppendNull()
			rl.Append("train")
		} else {
			vb.Append(t.Var[r])
			rl.Append("test")
		}
	}
}

// flush writes the pending inBatch rows, whose matrix entries are cov, as
// one record batch. The cov column is a view of cov, not a copy: the
// schema's FixedSizeList<float64>[N] without nulls, as a builder would
// make it, so the bytes written are the same.
func (cw *CovWriter) flush(cov []float64) {
	if cw.err != nil || cw.inBatch == 0 {
		return
	}
	rows := cw.inBatch
	cw.inBatch = 0
	cw.buf = cw.buf[:0]
	vals := array.NewData(arrow.PrimitiveTypes.Float64, len(cov),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(cov))}, nil, 0, 0)
	defer vals.Release()
	list := array.NewData(cw.schema.Field(0).Type, rows, []*memory.Buffer{nil}, []arrow.ArrayData{vals}, 0, 0)
	defer list.Release()
	cols := []arrow.Array{array.MakeFromData(list)}
	for _, b := range cw.attrs {
		cols = append(cols, b.NewArray())
	}
	rec := array.NewRecord(cw.schema, cols, int64(rows))
	for _, a := range cols {
		a.Release()
	}
	defer rec.Release()
	if err := cw.iw.Write(rec); err != nil {
		cw.err = &IOError{Op: "write covariance", Err: err}
	}
}

// WriteTest appends test rows.
func (cw *CovWriter) WriteTest(t *TestRows) error {
	cw.rows(t.Cov, t.Len(), false, t)
	return cw.err
}

// Close writes the last batch and the end-of-stream marker.
func (cw *CovWriter) Close() error {
	defer func() {
		for _, b := range cw.attrs {
			b.Release()
		}
	}()
	cw.flush(cw.buf)
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
