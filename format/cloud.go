package format

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"gpc/core"
)

// Cloud stream metadata keys (besides the common ones).
const (
	SchemaCloud      = "gpc.cloud/1"
	KeyFingerprint   = "gpc:fingerprint"    // Fingerprint of the train block
	KeySamples       = "gpc:samples"        // particles, all groups
	KeyGroups        = "gpc:groups"         // particle groups
	KeyGroupSizes    = "gpc:group_sizes"    // particles per group, comma-separated
	KeyGroupLogP     = "gpc:group_log_p"    // each group's log P estimate
	KeyLogML         = "gpc:log_ml"         // the log marginal likelihood (log P) estimate
	KeySELogML       = "gpc:se_log_ml"      // its standard error
	KeyMethod        = "gpc:method"         // the estimator
	KeyOrderKind     = "gpc:order_kind"     // the order's name (gpc:order holds the permutation)
	KeyLabelPositive = "gpc:label_positive" // the label value mapped to +1
	KeyLabelNegative = "gpc:label_negative" // the label value mapped to -1
	// The train block's box and mean, when they are not the orthant's
	// defaults (comma-separated, input order).
	KeyLower = "gpc:lower"
	KeyUpper = "gpc:upper"
	KeyMean  = "gpc:mean"
)

// Row kinds of the cloud stream.
const (
	KindTrain    = "train"
	KindParticle = "particle"
	KindTest     = "test"
)

// Fingerprint identifies a train block: the first 128 bits of the SHA-256
// of its N x N float64 values (little-endian, row-major), in hex. Two
// covariances with the same fingerprint are, for all practical purposes,
// the same matrix, bit for bit.
func Fingerprint(cov []float64) string {
	h := sha256.New()
	var b [8]byte
	for _, v := range cov {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// cloudSchema is the schema of a cloud stream (format/doc.go).
func cloudSchema(meta map[string]string) *arrow.Schema {
	f64 := arrow.PrimitiveTypes.Float64
	list := arrow.ListOfField(arrow.Field{Name: "item", Type: f64})
	md := arrow.MetadataFrom(meta)
	return arrow.NewSchema([]arrow.Field{
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: ColCov, Type: list},
		{Name: "z", Type: list},
		{Name: "log_w", Type: f64, Nullable: true},
		{Name: "group", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: ColVar, Type: f64, Nullable: true},
		{Name: ColY, Type: f64, Nullable: true},
		{Name: ColID, Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
}

// CloudWriter writes a cloud stream: the train block, the particles group
// by group, then test rows, each in record batches of at most batchRows
// rows, so that nothing is held twice.
type CloudWriter struct {
	bw     *bufio.Writer
	iw     *ipc.Writer
	rb     *array.RecordBuilder
	schema *arrow.Schema
	mem    memory.Allocator
	n      int
	batch  int
	rows   int // rows in the builder
}

// NewCloudWriter starts a cloud stream on w with metadata meta (to which it
// adds gpc:schema and gpc:n) and writes the train block of train.
func NewCloudWriter(w io.Writer, train *Covariance, meta map[string]string, batchRows int, mem memory.Allocator) (*CloudWriter, error) {
	m := maps.Clone(meta)
	m[KeySchema] = SchemaCloud
	m[KeyN] = strconv.Itoa(train.N)
	for key, v := range map[string][]float64{KeyLower: train.Lower, KeyUpper: train.Upper, KeyMean: train.Mean} {
		if v != nil {
			m[key] = JoinFloats(v)
		}
	}
	schema := cloudSchema(m)
	cw := &CloudWriter{bw: bufio.NewWriter(w), schema: schema, mem: mem, n: train.N, batch: max(1, batchRows)}
	cw.iw = ipc.NewWriter(cw.bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	cw.rb = array.NewRecordBuilder(mem, schema)
	n := train.N
	for r := range n {
		id := ""
		if train.ID != nil {
			id = train.ID[r]
		}
		y := math.NaN()
		if train.Y != nil {
			y = train.Y[r]
		}
		if err := cw.row(KindTrain, train.Cov[r*n:r*n+n], nil, math.NaN(), -1, math.NaN(), y, id); err != nil {
			return nil, err
		}
	}
	return cw, nil
}

// row appends one row; NaN, -1 and "" stand for null.
func (cw *CloudWriter) row(kind string, cov, z []float64, logW float64, group int, vr, y float64, id string) error {
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

// WriteParticles writes group g's particles. Their values are not copied:
// each record batch's z column is a window on grp.Z, written to the stream
// as it is.
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
	return nil
}

// writeParticleBatch writes one record of len(logW) particles whose z rows
// are z (row-major), wrapping z's memory as the column's values.
func (cw *CloudWriter) writeParticleBatch(g int, z, logW []float64) error {
	k, n := len(logW), cw.n
	mem := cw.mem
	f64 := arrow.PrimitiveTypes.Float64
	listType := cw.schema.Field(2).Type // the schema's list of float64
	offsets := make([]int32, k+1)
	for p := range offsets {
		offsets[p] = int32(p * n)
	}
	zeros := make([]int32, k+1)
	listOf := func(off []int32, vals []float64) arrow.Array {
		child := array.NewData(f64, len(vals), []*memory.Buffer{nil, memory.NewBufferBytes(float64Bytes(vals))}, nil, 0, 0)
		defer child.Release()
		d := array.NewData(listType, k, []*memory.Buffer{nil, memory.NewBufferBytes(int32Bytes(off))}, []arrow.ArrayData{child}, 0, 0)
		defer d.Release()
		return array.NewListData(d)
	}
	kind := array.NewStringBuilder(mem)
	defer kind.Release()
	kind.Reserve(k)
	for range k {
		kind.Append(KindParticle)
	}
	grp := array.NewInt32Builder(mem)
	defer grp.Release()
	grp.Reserve(k)
	for range k {
		grp.Append(int32(g))
	}
	lw := array.NewFloat64Builder(mem)
	defer lw.Release()
	lw.AppendValues(logW, nil)
	cols := []arrow.Array{
		kind.NewArray(),
		listOf(zeros, nil),
		listOf(offsets, z),
		lw.NewArray(),
		grp.NewArray(),
		array.MakeArrayOfNull(mem, f64, k),
		array.MakeArrayOfNull(mem, f64, k),
		array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, k),
	}
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

// WriteTest writes test rows.
func (cw *CloudWriter) WriteTest(t *TestRows) error {
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
		if err := cw.row(KindTest, t.Cov[r*n:r*n+n], nil, math.NaN(), -1, t.Var[r], y, id); err != nil {
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

// CloudReader reads a cloud stream: the train block and the particles when
// it is opened, then the test rows a batch at a time.
type CloudReader struct {
	name  string
	w     *ioWatch
	src   recordSource
	meta  map[string]string
	rec   arrow.Record
	row   int // next unread row of rec
	batch int
	rows  int // rows read
	done  bool
	opt   CloudOptions

	// Train is the train block, Cloud the particles, Perm the variable
	// order they were drawn in.
	Train *Covariance
	Cloud *core.Cloud
	Perm  []int
}

// CloudOptions tune OpenCloud.
type CloudOptions struct {
	// Limit is the most bytes the particles may take (as the metadata
	// announces them): a larger cloud is refused with a *MemoryError.
	// 0 means no limit.
	Limit int64
	// Alloc, if not nil, allocates each group's array of draws (n values,
	// overwritten as they are read).
	Alloc func(n int) []float64
}

// OpenCloud opens a cloud stream and reads its train block and particles.
func OpenCloud(r io.Reader, name string, mem memory.Allocator, opt CloudOptions) (cr *CloudReader, err error) {
	in, err := openInput(r, name)
	if err != nil {
		return nil, err
	}
	if in.kind != kindArrowStream && in.kind != kindArrowFile {
		return nil, dataErrorf(name, "a cloud is an Arrow IPC stream (written by gpc-train)")
	}
	defer recoverArrow(name, &err)
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, err
	}
	cr = &CloudReader{name: name, w: in.w, src: src, meta: schema.Metadata().ToMap(), opt: opt}
	if err := cr.start(schema); err != nil {
		src.release()
		return nil, err
	}
	return cr, nil
}

// Meta returns the cloud's metadata.
func (cr *CloudReader) Meta() map[string]string { return cr.meta }

func (cr *CloudReader) start(schema *arrow.Schema) error {
	name := cr.name
	if s := cr.meta[KeySchema]; s != SchemaCloud {
		if s == "" {
			s = "none"
		}
		return dataErrorf(name, "schema %q where a cloud (%s, written by gpc-train) was expected", s, SchemaCloud)
	}
	if !schema.Equal(cloudSchema(nil)) {
		return dataErrorf(name, "the columns are not those of %s: %v", SchemaCloud, schema)
	}
	n, err := metaInt(cr.meta, KeyN, name)
	if err != nil {
		return err
	}
	sizes, err := metaList(cr.meta, KeyGroupSizes, name, strconv.Atoi)
	if err != nil {
		return err
	}
	logZ, err := metaList(cr.meta, KeyGroupLogP, name, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		return err
	}
	perm, err := metaList(cr.meta, KeyOrder, name, strconv.Atoi)
	if err != nil {
		return err
	}
	if n < 1 || len(perm) != n || len(sizes) != len(logZ) || len(sizes) == 0 {
		return dataErrorf(name, "inconsistent metadata: %s = %d, %d order entries, %d group sizes, %d group estimates", KeyN, n, len(perm), len(sizes), len(logZ))
	}
	total := 0
	for _, s := range sizes {
		if s < 1 || s > math.MaxInt32 {
			return dataErrorf(name, "metadata %s: a group of %d particles", KeyGroupSizes, s)
		}
		total += s
	}
	if need := int64(total) * int64(n) * 8; need/8/int64(n) != int64(total) || cr.opt.Limit > 0 && need > cr.opt.Limit {
		return &MemoryError{What: fmt.Sprintf("%s: a cloud of %d particles in %d dimensions", name, total, n), Need: need, Limit: cr.opt.Limit}
	}
	cr.Perm = perm
	cr.Train = &Covariance{N: n, Meta: cr.meta, Layout: "cloud"}
	for _, kv := range []struct {
		key string
		dst *[]float64
	}{{KeyLower, &cr.Train.Lower}, {KeyUpper, &cr.Train.Upper}, {KeyMean, &cr.Train.Mean}} {
		key, dst := kv.key, kv.dst
		if _, ok := cr.meta[key]; !ok {
			continue
		}
		v, err := metaList(cr.meta, key, name, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
		if err != nil {
			return err
		}
		if len(v) != n {
			return dataErrorf(name, "metadata %s has %d values for %d variables", key, len(v), n)
		}
		*dst = v
	}
	cr.Cloud = &core.Cloud{N: n, Groups: make([]core.CloudGroup, len(sizes))}
	for g := range sizes {
		cr.Cloud.Groups[g].LogZ = logZ[g]
	}
	hasY, hasID := false, false
	for i := 0; i < n+total; i++ {
		ok, err := cr.load()
		if err != nil {
			return err
		}
		if !ok {
			return dataErrorf(name, "the stream ended after %d rows, inside the %d train rows and %d particles: it was cut short", cr.rows, n, total)
		}
		where := fmt.Sprintf("%s: batch %d, row %d", name, cr.batch, cr.rows)
		kind, _ := strAt(cr.rec.Column(0), cr.row)
		want := KindTrain
		if i >= n {
			want = KindParticle
		}
		if kind != want {
			return dataErrorf(where, "a %q row where a %s row was expected (%d train rows, then %d particles, then test rows)", kind, want, n, total)
		}
		if i < n {
			vals, err := listRow(cr.rec.Column(1), cr.row, n, where, ColCov)
			if err != nil {
				return err
			}
			cr.Train.Cov = append(cr.Train.Cov, vals...)
			y, yok := numAt(cr.rec.Column(6), cr.row)
			if i == 0 {
				hasY = yok
			}
			if yok != hasY {
				return dataErrorf(where, "column %q is null on some train rows only", ColY)
			}
			if hasY {
				cr.Train.Y = append(cr.Train.Y, y)
			}
			id, idok := strAt(cr.rec.Column(7), cr.row)
			if i == 0 {
				hasID = idok
			}
			if hasID {
				cr.Train.ID = append(cr.Train.ID, id)
			}
		} else {
			g, gok := numAt(cr.rec.Column(4), cr.row)
			lw, wok := numAt(cr.rec.Column(3), cr.row)
			if !gok || !wok || math.IsNaN(lw) || lw > 1e-9 {
				return dataErrorf(where, "a particle needs a group and a normalized log weight (<= 0), got %v and %v", g, lw)
			}
			k := int(g)
			if k < 0 || k >= len(sizes) || cr.Cloud.Groups[k].Len() >= sizes[k] || (k > 0 && cr.Cloud.Groups[k-1].Len() < sizes[k-1]) {
				return dataErrorf(where, "particle of group %d out of place (groups of %v particles, written in order)", k, sizes)
			}
			grp := &cr.Cloud.Groups[k]
			if grp.Z == nil {
				// Sized once, from the metadata (whose total was checked
				// against the limit): the cloud is never held twice.
				if cr.opt.Alloc != nil {
					grp.Z = cr.opt.Alloc(sizes[k] * n)[:0]
				} else {
					grp.Z = make([]float64, 0, sizes[k]*n)
				}
				grp.LogW = make([]float64, 0, sizes[k])
			}
			if grp.Z, err = appendListRow(grp.Z, cr.rec.Column(2), cr.row, n, where, "z"); err != nil {
				return err
			}
			grp.LogW = append(grp.LogW, lw)
		}
		cr.row++
		cr.rows++
	}
	if fp, ok := cr.meta[KeyFingerprint]; ok && fp != Fingerprint(cr.Train.Cov) {
		return dataErrorf(name, "the train block does not match the cloud's own fingerprint: the stream is corrupt")
	}
	return nil
}

// load makes cr.rec a record with unread rows; false at the end.
func (cr *CloudReader) load() (bool, error) {
	for cr.rec == nil || cr.row >= int(cr.rec.NumRows()) {
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
			cr.done, cr.rec = true, nil
			return false, nil
		}
		cr.rec, cr.row = rec, 0
	}
	return true, nil
}

// NextTest returns up to max further test rows, or nil at the end (after
// checking gpc:rows when present).
func (cr *CloudReader) NextTest(max int) (t *TestRows, err error) {
	defer recoverArrow(cr.name, &err)
	n := cr.Train.N
	t = &TestRows{}
	for t.Len() < max {
		ok, err := cr.load()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		where := fmt.Sprintf("%s: batch %d, row %d", cr.name, cr.batch, cr.rows)
		if kind, _ := strAt(cr.rec.Column(0), cr.row); kind != KindTest {
			return nil, dataErrorf(where, "a %q row after the particles, where only test rows may follow", kind)
		}
		vals, err := listRow(cr.rec.Column(1), cr.row, n, where, ColCov)
		if err != nil {
			return nil, err
		}
		v, ok := numAt(cr.rec.Column(5), cr.row)
		if !ok || !(v > 0) || math.IsInf(v, 1) {
			return nil, dataErrorf(where+`, column "var"`, "%v: a test row's variance must be a positive finite number", v)
		}
		t.Cov = append(t.Cov, vals...)
		t.Var = append(t.Var, v)
		id, _ := strAt(cr.rec.Column(7), cr.row)
		t.ID = append(t.ID, id)
		y, yok := numAt(cr.rec.Column(6), cr.row)
		if !yok {
			y = math.NaN()
		}
		t.Y = append(t.Y, y)
		cr.row++
		cr.rows++
	}
	if t.Len() == 0 {
		if err := checkRows(cr.meta, cr.rows); err != nil {
			return nil, dataErrorf(cr.name, "%v", err)
		}
		return nil, nil
	}
	return t, nil
}

// Close releases the reader.
func (cr *CloudReader) Close() {
	if cr.src != nil {
		cr.src.release()
		cr.src = nil
	}
}

// appendListRow appends row i of a list of float64 column, which must hold
// n finite values, to dst, reading the column's values directly.
func appendListRow(dst []float64, col arrow.Array, i, n int, where, name string) ([]float64, error) {
	if col.IsNull(i) {
		return dst, dataErrorf(where, "column %q is null", name)
	}
	lst := col.(*array.List)
	s, e := lst.ValueOffsets(i)
	if int(e-s) != n {
		return dst, dataErrorf(where, "column %q has %d entries, want %d", name, e-s, n)
	}
	vals, ok := lst.ListValues().(*array.Float64)
	if !ok {
		return listRowAppend(dst, col, i, n, where, name)
	}
	if s < 0 || int(e) > vals.Len() {
		return dst, dataErrorf(where, "malformed Arrow data: column %q row points past its values", name)
	}
	if vals.NullN() > 0 {
		return listRowAppend(dst, col, i, n, where, name)
	}
	src := vals.Float64Values()[s:e]
	for k, v := range src {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, dataErrorf(fmt.Sprintf("%s, %s[%d]", where, name, k), "%v: values must be finite", v)
		}
	}
	return append(dst, src...), nil
}

// listRowAppend is appendListRow through listRow, for unusual layouts.
func listRowAppend(dst []float64, col arrow.Array, i, n int, where, name string) ([]float64, error) {
	vals, err := listRow(col, i, n, where, name)
	if err != nil {
		return dst, err
	}
	return append(dst, vals...), nil
}

// listRow returns row i of a list column, which must hold n finite values.
func listRow(col arrow.Array, i, n int, where, name string) ([]float64, error) {
	if col.IsNull(i) {
		return nil, dataErrorf(where, "column %q is null", name)
	}
	lst := col.(*array.List)
	s, e := lst.ValueOffsets(i)
	if int(e-s) != n {
		return nil, dataErrorf(where, "column %q has %d entries, want %d", name, e-s, n)
	}
	vals := lst.ListValues()
	if s < 0 || int(e) > vals.Len() {
		return nil, dataErrorf(where, "malformed Arrow data: column %q row points past its values", name)
	}
	out := make([]float64, n)
	for k := range n {
		v, ok := numAt(vals, int(s)+k)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, dataErrorf(fmt.Sprintf("%s, %s[%d]", where, name, k), "%v: values must be finite", v)
		}
		out[k] = v
	}
	return out, nil
}

func metaInt(meta map[string]string, key, name string) (int, error) {
	v, err := strconv.Atoi(meta[key])
	if err != nil {
		return 0, dataErrorf(name, "metadata %s = %q is not an integer", key, meta[key])
	}
	return v, nil
}

func metaList[T any](meta map[string]string, key, name string, parse func(string) (T, error)) ([]T, error) {
	v, ok := meta[key]
	if !ok {
		return nil, dataErrorf(name, "metadata %s is missing", key)
	}
	var out []T
	for _, s := range strings.Split(v, ",") {
		x, err := parse(s)
		if err != nil {
			return nil, dataErrorf(name, "metadata %s: %q is not a number", key, s)
		}
		out = append(out, x)
	}
	return out, nil
}

// JoinInts and JoinFloats format metadata lists.
func JoinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// JoinFloats formats floats in full precision, comma-separated.
func JoinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
