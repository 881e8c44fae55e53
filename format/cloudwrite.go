package format

import (
	"bufio"
	"errors"
	"io"
	"maps"
	"math"
	"strconv"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
)

// CloudWriter writes a cloud stream: the train block, the test rows when
// they are given at the start, the particles group by group, then the test
// rows when they were not, each in record batches of at most batchRows
// rows, so that nothing is held twice.
type CloudWriter struct {
	bw         *bufio.Writer
	iw         *ipc.Writer
	rb         *array.RecordBuilder
	schema     *arrow.Schema
	mem        memory.Allocator
	n          int
	batch      int
	rows       int // rows in the builder
	testsFirst bool
}

// NewCloudWriter starts a cloud stream on w with metadata meta (to which it
// adds gpc:schema and gpc:n) and writes the train block of train. If
// factor is not nil (the factor the particles are drawn with, in the
// order gpc:order), its rows follow the train block, so that a reader
// predicts from it without preparing it again. If tests is not nil, its
// rows follow (gpc:tests_first says how many), so that a reader can
// predict them as the particles stream past; they are then all the test
// rows of the stream. Otherwise WriteTest writes test rows after the
// particles.
func NewCloudWriter(w io.Writer, train *Covariance, factor *core.FactorParts, tests *TestRows, meta map[string]string, batchRows int, mem memory.Allocator) (*CloudWriter, error) {
	m := maps.Clone(meta)
	m[KeySchema] = SchemaCloud
	if _, shard := meta[KeyShard]; shard {
		m[KeySchema] = SchemaCloudShard // gpc-train --shard (cloudshard.go)
	}
	m[KeyN] = strconv.Itoa(train.N)
	if tests != nil {
		m[KeyTestsFirst] = strconv.Itoa(tests.Len())
	}
	if factor != nil {
		if factor.N != train.N {
			panic("format: NewCloudWriter: the factor's size is not the train block's")
		}
		m[KeyFactor] = factorScalars(factor)
		for key, v := range map[string][]float64{KeyFactorA: factor.A, KeyFactorB: factor.B, KeyFactorMu: factor.Mu,
			KeyFactorTau: factor.Tau, KeyFactorKappa: factor.Kappa, KeyFactorM: factor.M} {
			if v != nil {
				m[key] = JoinFloats(v)
			}
		}
	}
	for key, v := range map[string][]float64{KeyLower: train.Lower, KeyUpper: train.Upper, KeyMean: train.Mean} {
		if v != nil {
			m[key] = JoinFloats(v)
		}
	}
	schema := cloudSchema(m, false)
	// Record batches of at most 32 MiB of values, as a covariance
	// stream's (CovBatchRows): a reader holds a few of them, and none
	// that its guard must grow into (at N = 5000, 4096 particles are
	// 164 MB).
	cw := &CloudWriter{bw: bufio.NewWriter(w), schema: schema, mem: mem, n: train.N, batch: CovBatchRows(train.N, batchRows)}
	cw.iw = ipc.NewWriter(cw.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	cw.rb = array.NewRecordBuilder(mem, schema)
	n := train.N
	for r0 := 0; r0 < n; r0 += cw.batch {
		if err := cw.writeTrainBatch(train, r0, min(n, r0+cw.batch)); err != nil {
			return nil, err
		}
	}
	if factor != nil {
		if err := cw.writeFactor(factor); err != nil {
			return nil, err
		}
	}
	if tests != nil {
		if err := cw.writeTest(tests); err != nil {
			return nil, err
		}
		cw.testsFirst = true
	}
	// The head goes out now, not with the first particles: gpc-predict
	// starts from it (and refuses a cloud without test rows) while the
	// estimate runs.
	if err := cw.bw.Flush(); err != nil {
		return nil, &IOError{Op: "write cloud", Err: err}
	}
	return cw, nil
}

// factorBatchValues bounds the values of a record batch of factor rows.
var factorBatchValues = 1 << 21 // 16 MiB a column, 32 MiB a batch, as CovBatchRows; a variable for the tests

// writeFactor writes the factor rows: row k holds row k of L in cov and,
// for an EP factor, row k of R's Cholesky factor in z, their first k + 1
// entries (the lower triangles, packed). Each record batch packs its rows'
// values into one buffer that becomes the list columns' values.
func (cw *CloudWriter) writeFactor(fp *core.FactorParts) error {
	if err := cw.flush(); err != nil { // the train rows, in order
		return err
	}
	n := fp.N
	for k0 := 0; k0 < n; {
		k1, vals := k0, 0
		for k1 < n && (k1 == k0 || vals+k1+1 <= factorBatchValues) {
			vals += k1 + 1
			k1++
		}
		k := k1 - k0
		offsets := make([]int32, k+1)
		lv := make([]float64, 0, vals)
		for r := k0; r < k1; r++ {
			lv = append(lv, fp.L[r*n:r*n+r+1]...)
			offsets[r-k0+1] = int32(len(lv))
		}
		zOff, zv := make([]int32, k+1), []float64(nil)
		if fp.RChol != nil {
			zv = make([]float64, 0, vals)
			for r := k0; r < k1; r++ {
				zv = append(zv, fp.RChol[r*n:r*n+r+1]...)
			}
			copy(zOff, offsets)
		}
		if err := cw.writeColumns(k, cw.kinds(KindFactor, k), cw.viewList(offsets, lv), cw.viewList(zOff, zv),
			cw.nulls(3, k), cw.nulls(4, k), cw.nulls(5, k), cw.nulls(6, k), cw.nulls(7, k), cw.nulls(8, k)); err != nil {
			return err
		}
		k0 = k1
	}
	return nil
}

// row appends one row; NaN, -1 and "" stand for null (log_p is set on
// group rows only).
func (cw *CloudWriter) row(kind string, cov, z []float64, logW float64, group int, vr, y float64, id string, logP float64) error {
	b := cw.rb
	b.Field(0).(*array.StringBuilder).Append(kind)
	for i, vals := range [][]float64{cov, z} {
		lb := b.Field(1 + i).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float64Builder).AppendValues(vals, nil)
	}
	gb := b.Field(4).(*array.Int32Builder)
	if group < 0 {
		gb.AppendNull()
	} else {
		gb.Append(int32(group))
	}
	appendF := func(col int, v float64, null bool) {
		fb := b.Field(col).(*array.Float64Builder)
		if null {
			fb.AppendNull()
		} else {
			fb.Append(v)
		}
	}
	appendF(3, logW, kind != KindParticle)
	appendF(5, vr, kind != KindTest)
	appendF(6, y, math.IsNaN(y))
	sb := b.Field(7).(*array.StringBuilder)
	if id == "" {
		sb.AppendNull()
	} else {
		sb.Append(id)
	}
	appendF(8, logP, kind != KindGroup)
	cw.rows++
	if cw.rows == cw.batch {
		return cw.flush()
	}
	return nil
}

func (cw *CloudWriter) flush() error {
	if cw.rows == 0 {
		return nil
	}
	rec := cw.rb.NewRecord()
	defer rec.Release()
	cw.rows = 0
	if err := cw.iw.Write(rec); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	return nil
}

// WriteParticles writes group g's particles, then its group row (its
// estimate of log P, grp.LogZ). The particles' values are not copied: each
// record batch's z column is a window on grp.Z, written to the stream as
// it is.
func (cw *CloudWriter) WriteParticles(g int, grp *core.CloudGroup) error {
	if err := cw.flush(); err != nil { // the rows before, in order
		return err
	}
	n := cw.n
	// At most batch rows, and fewer than 2^31 values (int32 list offsets).
	rows := max(1, min(cw.batch, (math.MaxInt32-1)/max(n, 1)))
	for p0 := 0; p0 < grp.Len(); p0 += rows {
		p1 := min(grp.Len(), p0+rows)
		if err := cw.writeParticleBatch(g, grp.Z[p0*n:p1*n], grp.LogW[p0:p1]); err != nil {
			return err
		}
	}
	// The group row ends its batch, so that a reader has the group's
	// estimate as soon as its particles.
	if err := cw.row(KindGroup, nil, nil, math.NaN(), g, math.NaN(), math.NaN(), "", grp.LogZ); err != nil {
		return err
	}
	return cw.flush()
}

// writeTrainBatch writes train rows [r0, r1) as one record, wrapping the
// covariance's memory as the cov column's values (N x N values through
// no builder).
func (cw *CloudWriter) writeTrainBatch(train *Covariance, r0, r1 int) error {
	k, n := r1-r0, cw.n
	y := array.NewFloat64Builder(cw.mem)
	defer y.Release()
	id := array.NewStringBuilder(cw.mem)
	defer id.Release()
	for r := r0; r < r1; r++ {
		if train.Y == nil || math.IsNaN(train.Y[r]) {
			y.AppendNull()
		} else {
			y.Append(train.Y[r])
		}
		if train.ID == nil || train.ID[r] == "" {
			id.AppendNull()
		} else {
			id.Append(train.ID[r])
		}
	}
	return cw.writeColumns(k, cw.kinds(KindTrain, k), cw.viewList(rowOffsets(k, n), train.Cov[r0*n:r1*n]), cw.viewList(make([]int32, k+1), nil),
		cw.nulls(3, k), cw.nulls(4, k), cw.nulls(5, k), y.NewArray(), id.NewArray(), cw.nulls(8, k))
}

// writeParticleBatch writes one record of len(logW) particles whose z rows
// are z (row-major), wrapping z's memory as the column's values.
func (cw *CloudWriter) writeParticleBatch(g int, z, logW []float64) error {
	k, n := len(logW), cw.n
	grp := array.NewInt32Builder(cw.mem)
	defer grp.Release()
	grp.Reserve(k)
	for range k {
		grp.Append(int32(g))
	}
	lw := array.NewFloat64Builder(cw.mem)
	defer lw.Release()
	lw.AppendValues(logW, nil)
	return cw.writeColumns(k, cw.kinds(KindParticle, k), cw.viewList(make([]int32, k+1), nil), cw.viewList(rowOffsets(k, n), z),
		lw.NewArray(), grp.NewArray(), cw.nulls(5, k), cw.nulls(6, k), cw.nulls(7, k), cw.nulls(8, k))
}

// rowOffsets are the list offsets of k rows of n values each.
func rowOffsets(k, n int) []int32 {
	off := make([]int32, k+1)
	for p := range off {
		off[p] = int32(p * n)
	}
	return off
}

// viewList is a List<float64> column of len(off) - 1 rows, row i the
// values vals[off[i]:off[i+1]], wrapping vals' memory (not copied).
func (cw *CloudWriter) viewList(off []int32, vals []float64) arrow.Array {
	child := array.NewData(arrow.PrimitiveTypes.Float64, len(vals), []*memory.Buffer{nil, memory.NewBufferBytes(float64Bytes(vals))}, nil, 0, 0)
	defer child.Release()
	d := array.NewData(cw.schema.Field(1).Type, len(off)-1, []*memory.Buffer{nil, memory.NewBufferBytes(int32Bytes(off))}, []arrow.ArrayData{child}, 0, 0)
	defer d.Release()
	return array.NewListData(d)
}

// kinds is a kind column of k rows of kind.
func (cw *CloudWriter) kinds(kind string, k int) arrow.Array {
	b := array.NewStringBuilder(cw.mem)
	defer b.Release()
	b.Reserve(k)
	for range k {
		b.Append(kind)
	}
	return b.NewArray()
}

// nulls is k nulls of the type of the schema's column col.
func (cw *CloudWriter) nulls(col, k int) arrow.Array {
	return array.MakeArrayOfNull(cw.mem, cw.schema.Field(col).Type, k)
}

// writeColumns writes one record of k rows made of cols (the schema's
// columns, in order), and releases them.
func (cw *CloudWriter) writeColumns(k int, cols ...arrow.Array) error {
	rec := array.NewRecord(cw.schema, cols, int64(k))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	if err := cw.iw.Write(rec); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	return nil
}

// float64Bytes and int32Bytes view a slice's memory as bytes (Arrow
// buffers are little-endian, as every platform Go runs gpc on).
func float64Bytes(v []float64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

func int32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

// WriteTest writes test rows after the particles. It fails if the test
// rows were given to NewCloudWriter.
func (cw *CloudWriter) WriteTest(t *TestRows) error {
	if cw.testsFirst {
		return errors.New("format: test rows after the particles of a cloud whose test rows came first")
	}
	return cw.writeTest(t)
}

func (cw *CloudWriter) writeTest(t *TestRows) error {
	n := cw.n
	for r := range t.Len() {
		id := ""
		if t.ID != nil {
			id = t.ID[r]
		}
		y := math.NaN()
		if t.Y != nil {
			y = t.Y[r]
		}
		if err := cw.row(KindTest, t.Cov[r*n:r*n+n], nil, math.NaN(), -1, t.Var[r], y, id, math.NaN()); err != nil {
			return err
		}
	}
	return nil
}

// Close writes the last batch and the end-of-stream marker.
func (cw *CloudWriter) Close() error {
	defer cw.rb.Release()
	if err := cw.flush(); err != nil {
		return err
	}
	if err := cw.iw.Close(); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	if err := cw.bw.Flush(); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	return nil
}
