package format

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
)

// Cloud stream metadata keys (besides the common ones).
const (
	SchemaCloud      = "gpc.cloud/3"
	schemaCloudV2    = "gpc.cloud/2"        // no factor rows; still read
	schemaCloudV1    = "gpc.cloud/1"        // test rows after the particles; still read
	KeyFingerprint   = "gpc:fingerprint"    // Fingerprint of the train block
	KeySamples       = "gpc:samples"        // particles, all groups
	KeyGroups        = "gpc:groups"         // particle groups
	KeyGroupSizes    = "gpc:group_sizes"    // particles per group, comma-separated
	KeyGroupLogP     = "gpc:group_log_p"    // each group's log P estimate (gpc.cloud/1; group rows in /2)
	KeyLogML         = "gpc:log_ml"         // the log marginal likelihood (log P) estimate
	KeySELogML       = "gpc:se_log_ml"      // its standard error
	KeyMethod        = "gpc:method"         // the estimator
	KeyOrderKind     = "gpc:order_kind"     // the order's name (gpc:order holds the permutation)
	KeyLabelPositive = "gpc:label_positive" // the label value mapped to +1
	KeyLabelNegative = "gpc:label_negative" // the label value mapped to -1
	KeyTestsFirst    = "gpc:tests_first"    // test rows before the particles (all of them)
	// The factor the particles were drawn with (gpc.cloud/3, factor rows):
	// its scalars as key=value pairs (as a plan's gpc:plan_factor), and
	// its per-variable values in its order, comma-separated (mu for a
	// tilted factor, tau, kappa and m for EP's).
	KeyFactor      = "gpc:factor"
	KeyFactorA     = "gpc:factor_a"
	KeyFactorB     = "gpc:factor_b"
	KeyFactorMu    = "gpc:factor_mu"
	KeyFactorTau   = "gpc:factor_tau"
	KeyFactorKappa = "gpc:factor_kappa"
	KeyFactorM     = "gpc:factor_m"
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
	KindGroup    = "group" // after a group's particles: its estimate of log P
	KindTest     = "test"
	KindFactor   = "factor" // after the train rows: a row of the factor
)

// Fingerprint identifies a train block: the first 128 bits of the SHA-256
// of its N x N float64 values (little-endian, row-major), in hex. Two
// covariances with the same fingerprint are, for all practical purposes,
// the same matrix, bit for bit.
func Fingerprint(cov []float64) string {
	f := NewFingerprinter() // 8 KiB at a time
	f.Write(cov)
	return f.Sum()
}

// cloudSchema is the schema of a cloud stream (format/doc.go); v1 that of
// gpc.cloud/1, without the log_p column.
func cloudSchema(meta map[string]string, v1 bool) *arrow.Schema {
	f64 := arrow.PrimitiveTypes.Float64
	list := arrow.ListOfField(arrow.Field{Name: "item", Type: f64})
	md := arrow.MetadataFrom(meta)
	fields := []arrow.Field{
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: ColCov, Type: list},
		{Name: "z", Type: list},
		{Name: "log_w", Type: f64, Nullable: true},
		{Name: "group", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: ColVar, Type: f64, Nullable: true},
		{Name: ColY, Type: f64, Nullable: true},
		{Name: ColID, Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if !v1 {
		fields = append(fields, arrow.Field{Name: "log_p", Type: f64, Nullable: true})
	}
	return arrow.NewSchema(fields, &md)
}

// CloudReader reads a cloud stream, in its order: OpenCloud reads the
// train block; then NextTest returns the test rows that precede the
// particles (a cloud written with them first, TestsFirst), NextParticles
// the particles run by run (or LoadParticles all of them), and NextTest the
// test rows that follow them (a cloud written without them first).
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

	v1         bool  // a gpc.cloud/1 stream
	hashOnly   bool  // the train block's covariances are hashed, not kept
	testsFirst int   // test rows before the particles; -1: they follow them
	tests      int   // test rows read
	sizes      []int // particles per group
	g, next    int   // the next particle: group g, its index next
	particles  bool  // the particle rows were reached
	total      int   // particles in all
	read       int   // particles read

	// Train is the train block; Perm the variable order the particles
	// were drawn in; LogZ each group's estimate of log P, known once the
	// group's particles were read (from the start in a gpc.cloud/1
	// stream).
	Train *Covariance
	Perm  []int
	LogZ  []float64
	// Factor is the factor the particles were drawn with, when the
	// stream carries it (gpc.cloud/3 with gpc:factor); nil otherwise.
	Factor *core.Factor
}

// OpenCloud opens a cloud stream and reads its train block.
func OpenCloud(r io.Reader, name string, mem memory.Allocator) (cr *CloudReader, err error) {
	return openCloud(r, name, mem, false)
}

// OpenCloudLean is OpenCloud for a reader that predicts only: when the
// cloud carries its factor and its fingerprint, the train block's
// covariances are checked against the fingerprint as they pass and not
// kept (Train.Cov is nil; N x N values fewer in memory).
func OpenCloudLean(r io.Reader, name string, mem memory.Allocator) (cr *CloudReader, err error) {
	return openCloud(r, name, mem, true)
}

func openCloud(r io.Reader, name string, mem memory.Allocator, lean bool) (cr *CloudReader, err error) {
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
	cr = &CloudReader{name: name, w: in.w, src: src, meta: schema.Metadata().ToMap()}
	_, factor := cr.meta[KeyFactor]
	_, fp := cr.meta[KeyFingerprint]
	cr.hashOnly = lean && factor && fp
	if err := cr.start(schema); err != nil {
		src.release()
		return nil, err
	}
	return cr, nil
}

// TestRowCount returns the number of test rows that gpc:rows implies (the
// rows less the train, factor, particle and group rows), or -1 when the
// metadata does not say.
func (cr *CloudReader) TestRowCount() int {
	v, err := strconv.Atoi(cr.meta[KeyRows])
	if err != nil {
		return -1
	}
	t := v - cr.Train.N - cr.total
	if !cr.v1 {
		t -= len(cr.sizes) // the group rows
	}
	if cr.Factor != nil {
		t -= cr.Train.N
	}
	return t
}

// Meta returns the cloud's metadata.
func (cr *CloudReader) Meta() map[string]string { return cr.meta }

// TestsFirst reports whether the test rows precede the particles.
func (cr *CloudReader) TestsFirst() bool { return cr.testsFirst >= 0 }

// GroupSizes returns the number of particles of each group.
func (cr *CloudReader) GroupSizes() []int { return cr.sizes }

// Groups returns the number of particle groups.
func (cr *CloudReader) Groups() int { return len(cr.sizes) }

// Particles returns the number of particles in all.
func (cr *CloudReader) Particles() int { return cr.total }

func (cr *CloudReader) start(schema *arrow.Schema) error {
	name := cr.name
	s := cr.meta[KeySchema]
	if s != SchemaCloud && s != schemaCloudV2 && s != schemaCloudV1 {
		if s == "" {
			s = "none"
		}
		return dataErrorf(name, "schema %q where a cloud (%s, written by gpc-train) was expected", s, SchemaCloud)
	}
	cr.v1 = s == schemaCloudV1
	if !schema.Equal(cloudSchema(nil, cr.v1)) {
		return dataErrorf(name, "the columns are not those of %s: %v", s, schema)
	}
	n, err := metaInt(cr.meta, KeyN, name)
	if err != nil {
		return err
	}
	sizes, err := metaList(cr.meta, KeyGroupSizes, name, strconv.Atoi)
	if err != nil {
		return err
	}
	perm, err := metaList(cr.meta, KeyOrder, name, strconv.Atoi)
	if err != nil {
		return err
	}
	// Each group's estimate: in the metadata of a gpc.cloud/1 stream, in
	// its group row (after its particles) in a gpc.cloud/2 one.
	logZ := make([]float64, len(sizes))
	if cr.v1 {
		if logZ, err = metaList(cr.meta, KeyGroupLogP, name, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
			return err
		}
		for _, v := range logZ {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return dataErrorf(name, "metadata %s: %v is not a log probability", KeyGroupLogP, v)
			}
		}
	}
	if n < 1 || len(perm) != n || len(sizes) != len(logZ) || len(sizes) == 0 {
		return dataErrorf(name, "inconsistent metadata: %s = %d, %d order entries, %d group sizes, %d group estimates", KeyN, n, len(perm), len(sizes), len(logZ))
	}
	total := 0
	for _, s := range sizes {
		if s < 1 || s > math.MaxInt32 || total > math.MaxInt-s {
			return dataErrorf(name, "metadata %s: a group of %d particles", KeyGroupSizes, s)
		}
		total += s
	}
	cr.testsFirst = -1
	if v, ok := cr.meta[KeyTestsFirst]; ok {
		if cr.v1 {
			return dataErrorf(name, "metadata %s in a %s stream", KeyTestsFirst, schemaCloudV1)
		}
		if cr.testsFirst, err = metaInt(cr.meta, KeyTestsFirst, name); err != nil || cr.testsFirst < 0 {
			return dataErrorf(name, "metadata %s = %q is not a row count", KeyTestsFirst, v)
		}
	}
	cr.sizes, cr.total, cr.Perm, cr.LogZ = sizes, total, perm, logZ
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
	hasY, hasID := false, false
	var h hash.Hash // the train block's hash, when it is not kept
	for i := range n {
		ok, err := cr.load()
		if err != nil {
			return err
		}
		if !ok {
			return dataErrorf(name, "the stream ended after %d rows, inside the %d train rows: it was cut short", cr.rows, n)
		}
		where := cr.where()
		if kind, _ := strAt(cr.rec.Column(0), cr.row); kind != KindTrain {
			return dataErrorf(where, "a %q row where a %s row was expected (%d train rows first)", kind, KindTrain, n)
		}
		vals, err := listView(cr.rec.Column(1), cr.row, n, where, ColCov)
		if err != nil {
			return err
		}
		switch {
		case cr.hashOnly:
			if i == 0 {
				h = sha256.New()
			}
			h.Write(float64Bytes(vals)) // Fingerprint's bytes on a little-endian machine
		default:
			// Room for the N x N block (gpc:n), at most reserveAhead
			// times the rows read: one reservation up to N = 256,
			// beyond it a second, for the block, at its 257th row.
			if need := len(cr.Train.Cov) + n; need > cap(cr.Train.Cov) {
				cr.Train.Cov = regrow(cr.Train.Cov, room(n*n, need))
			}
			cr.Train.Cov = append(cr.Train.Cov, vals...)
		}
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
		cr.row++
		cr.rows++
	}
	got := ""
	if h != nil {
		got = hex.EncodeToString(h.Sum(nil)[:16])
	} else {
		got = Fingerprint(cr.Train.Cov)
	}
	if fp, ok := cr.meta[KeyFingerprint]; ok && fp != got {
		return dataErrorf(name, "the train block does not match the cloud's own fingerprint: the stream is corrupt")
	}
	if _, ok := cr.meta[KeyFactor]; ok {
		if s != SchemaCloud {
			return dataErrorf(name, "metadata %s in a %s stream (factor rows came with %s)", KeyFactor, s, SchemaCloud)
		}
		if err := cr.readFactor(); err != nil {
			return err
		}
	}
	if cr.testsFirst < 0 {
		cr.particles = true
	}
	return nil
}

// readFactor reads the factor rows that follow the train rows (see
// CloudWriter.writeFactor) and the factor's metadata into cr.Factor.
func (cr *CloudReader) readFactor() error {
	name, n := cr.name, cr.Train.N
	fp := core.FactorParts{N: n, Perm: cr.Perm}
	if err := parsePlanFactor(cr.meta[KeyFactor], &fp); err != nil {
		return dataErrorf(name, "metadata %s: %v", KeyFactor, err)
	}
	parse := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	for _, kv := range []struct {
		key string
		dst *[]float64
	}{{KeyFactorA, &fp.A}, {KeyFactorB, &fp.B}, {KeyFactorMu, &fp.Mu}, {KeyFactorTau, &fp.Tau}, {KeyFactorKappa, &fp.Kappa}, {KeyFactorM, &fp.M}} {
		if _, ok := cr.meta[kv.key]; !ok {
			continue
		}
		v, err := metaList(cr.meta, kv.key, name, parse)
		if err != nil {
			return err
		}
		if len(v) != n {
			return dataErrorf(name, "metadata %s has %d values for %d variables", kv.key, len(v), n)
		}
		*kv.dst = v
	}
	if fp.A == nil || fp.B == nil {
		return dataErrorf(name, "metadata %s without %s and %s", KeyFactor, KeyFactorA, KeyFactorB)
	}
	ep := fp.Tau != nil
	fp.L = make([]float64, n*n)
	if ep {
		fp.RChol = make([]float64, n*n)
	}
	for k := range n {
		ok, err := cr.load()
		if err != nil {
			return err
		}
		if !ok {
			return dataErrorf(name, "the stream ended after %d rows, inside the %d factor rows: it was cut short", cr.rows, n)
		}
		where := cr.where()
		if kind, _ := strAt(cr.rec.Column(0), cr.row); kind != KindFactor {
			return dataErrorf(where, "a %q row where a %s row was expected (%d factor rows after the train rows)", kind, KindFactor, n)
		}
		l, err := listView(cr.rec.Column(1), cr.row, k+1, where, ColCov)
		if err != nil {
			return err
		}
		copy(fp.L[k*n:], l)
		zl := 0
		if ep {
			zl = k + 1
		}
		z, err := listView(cr.rec.Column(2), cr.row, zl, where, "z")
		if err != nil {
			return err
		}
		if ep {
			copy(fp.RChol[k*n:], z)
		}
		cr.row++
		cr.rows++
	}
	f, err := core.NewFactorFromParts(fp)
	if err != nil {
		return dataErrorf(name, "the factor: %v", strings.TrimPrefix(err.Error(), "core: "))
	}
	cr.Factor = f
	return nil
}

// where names the next row, for messages.
func (cr *CloudReader) where() string {
	return fmt.Sprintf("%s: batch %d, row %d", cr.name, cr.batch, cr.rows)
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

// NextTest returns up to max further test rows, or nil where they end:
// before the particles in a cloud whose test rows come first (after
// checking their count), at the end of the stream otherwise (after
// checking gpc:rows when present). In a cloud whose test rows follow the
// particles, it may be called only once they were read.
func (cr *CloudReader) NextTest(max int) (t *TestRows, err error) {
	defer recoverArrow(cr.name, &err)
	if cr.particles && cr.read < cr.total {
		return nil, errors.New("format: CloudReader.NextTest before the particles were read")
	}
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
		where := cr.where()
		kind, _ := strAt(cr.rec.Column(0), cr.row)
		if !cr.particles && kind == KindParticle {
			break // the end of the leading test rows
		}
		if kind != KindTest {
			if cr.particles {
				return nil, dataErrorf(where, "a %q row after the particles, where only test rows may follow", kind)
			}
			return nil, dataErrorf(where, "a %q row among the test rows that precede the particles", kind)
		}
		if cr.particles && cr.testsFirst >= 0 {
			return nil, dataErrorf(where, "a test row after the particles, but metadata %s says the test rows came before them", KeyTestsFirst)
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
		cr.tests++
	}
	if t.Len() > 0 {
		return t, nil
	}
	if !cr.particles {
		if cr.tests != cr.testsFirst {
			return nil, dataErrorf(cr.where(), "%d test rows before the particles, but metadata %s announces %d", cr.tests, KeyTestsFirst, cr.testsFirst)
		}
		cr.particles = true
		return nil, nil
	}
	if err := checkRows(cr.meta, cr.rows); err != nil {
		return nil, dataErrorf(cr.name, "%v", err)
	}
	return nil, nil
}

// Particles is a run of consecutive particles of one group, as
// NextParticles returns them: windows on the stream's memory, valid until
// Release.
type Particles struct {
	// Group is the particles' group, First the first one's index in it.
	Group, First int
	// Z holds the particles' draws, len(LogW) rows of N, row-major, in
	// the cloud's variable order (Perm).
	Z []float64
	// LogW holds their log weights, normalized in their group.
	LogW []float64
	rec  arrow.Record
}

// Release lets go of the particles' memory. It may be called from any
// goroutine, once.
func (p *Particles) Release() {
	if p.rec != nil {
		p.rec.Release()
		p.rec = nil
	}
}

// NextParticles returns the next run of particles (at most one record
// batch's, of one group), or nil after the last. It skips the test rows
// that precede the particles if NextTest did not read them; in a cloud
// whose test rows come first, it checks that the stream ends after the
// particles before it returns nil.
func (cr *CloudReader) NextParticles() (ps *Particles, err error) {
	defer recoverArrow(cr.name, &err)
	for !cr.particles {
		t, err := cr.NextTest(4096)
		if err != nil {
			return nil, err
		}
		if t == nil {
			break
		}
	}
	if cr.read == cr.total {
		if cr.testsFirst >= 0 {
			// Nothing may follow: the stream ends here (gpc:rows checked).
			if t, err := cr.NextTest(1); t != nil || err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	n := cr.Train.N
	ok, err := cr.load()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, dataErrorf(cr.name, "the stream ended after %d rows, %d particles of %d: it was cut short", cr.rows, cr.read, cr.total)
	}
	rec := cr.rec
	kinds, _ := rec.Column(0).(*array.String)
	groups, _ := rec.Column(4).(*array.Int32)
	logW, _ := rec.Column(3).(*array.Float64)
	zl, _ := rec.Column(2).(*array.List)
	if kinds == nil || groups == nil || logW == nil || zl == nil {
		return nil, dataErrorf(cr.where(), "malformed Arrow data: the columns are not of the cloud's types")
	}
	// The run: rows of this record, of group cr.g, up to its end.
	i0 := cr.row
	k := min(int(rec.NumRows())-i0, cr.sizes[cr.g]-cr.next)
	ps = &Particles{Group: cr.g, First: cr.next, LogW: make([]float64, 0, k)}
	at := func(i int) string { return fmt.Sprintf("%s: batch %d, row %d", cr.name, cr.batch, cr.rows+i-i0) }
	for i := i0; i < i0+k; i++ {
		kind := ""
		if kinds.IsValid(i) {
			kind = kinds.Value(i)
		}
		if kind != KindParticle {
			return nil, dataErrorf(at(i), "a %q row where particle %d of group %d was expected (groups of %v particles, written in order)", kind, cr.next+i-i0, cr.g, cr.sizes)
		}
		if groups.IsNull(i) || logW.IsNull(i) || math.IsNaN(logW.Value(i)) || logW.Value(i) > 1e-9 {
			g, _ := numAt(groups, i)
			lw, _ := numAt(logW, i)
			return nil, dataErrorf(at(i), "a particle needs a group and a normalized log weight (<= 0), got %v and %v", g, lw)
		}
		if g := int(groups.Value(i)); g != cr.g {
			return nil, dataErrorf(at(i), "particle of group %d out of place (groups of %v particles, written in order)", g, cr.sizes)
		}
		ps.LogW = append(ps.LogW, logW.Value(i))
	}
	// The draws: the rows' values are contiguous when each holds n.
	for i := i0; i < i0+k; i++ {
		if zl.IsNull(i) {
			return nil, dataErrorf(at(i), "column %q is null", "z")
		}
		if s, e := zl.ValueOffsets(i); int(e-s) != n {
			return nil, dataErrorf(at(i), "column %q has %d entries, want %d", "z", e-s, n)
		}
	}
	s, _ := zl.ValueOffsets(i0)
	vals, isF64 := zl.ListValues().(*array.Float64)
	if isF64 && vals.NullN() == 0 && s >= 0 && int(s)+k*n <= vals.Len() {
		ps.Z = vals.Float64Values()[s : int(s)+k*n]
		for q, v := range ps.Z {
			if v-v != 0 { // NaN or ±Inf, in one comparison
				return nil, dataErrorf(fmt.Sprintf("%s: batch %d, row %d, z[%d]", cr.name, cr.batch, cr.rows+q/n, q%n), "%v: values must be finite", v)
			}
		}
		rec.Retain()
		ps.rec = rec
	} else {
		// An unusual layout: the rows copied one by one.
		ps.Z = make([]float64, 0, k*n)
		for i := i0; i < i0+k; i++ {
			if ps.Z, err = listRowAppend(ps.Z, zl, i, n, at(i), "z"); err != nil {
				return nil, err
			}
		}
	}
	cr.row += k
	cr.rows += k
	cr.read += k
	cr.next += k
	if cr.next == cr.sizes[cr.g] {
		if !cr.v1 {
			if err := cr.groupRow(); err != nil {
				ps.Release()
				return nil, err
			}
		}
		cr.g++
		cr.next = 0
	}
	return ps, nil
}

// groupRow reads the group row that follows group cr.g's particles: its
// estimate of log P.
func (cr *CloudReader) groupRow() error {
	ok, err := cr.load()
	if err != nil {
		return err
	}
	if !ok {
		return dataErrorf(cr.name, "the stream ended after %d rows, before the row of group %d: it was cut short", cr.rows, cr.g)
	}
	where := cr.where()
	kind, _ := strAt(cr.rec.Column(0), cr.row)
	g, gok := numAt(cr.rec.Column(4), cr.row)
	if kind != KindGroup || !gok || int(g) != cr.g {
		return dataErrorf(where, "a %q row (group %v) where the row of group %d was expected, after its %d particles", kind, g, cr.g, cr.sizes[cr.g])
	}
	v, ok := numAt(cr.rec.Column(8), cr.row)
	if !ok || math.IsNaN(v) || math.IsInf(v, 1) {
		return dataErrorf(where+`, column "log_p"`, "%v: a group's estimate of log P must be a number below +Inf", v)
	}
	cr.LogZ[cr.g] = v
	cr.row++
	cr.rows++
	return nil
}

// LoadParticles reads all the particles into a core.Cloud. limit is the
// most bytes their draws may take (0: no limit): a larger cloud is refused
// with a *MemoryError before any is read. alloc, if not nil, allocates the
// groups' arrays of draws (n values, overwritten as they are read).
func (cr *CloudReader) LoadParticles(limit int64, alloc func(n int) []float64) (*core.Cloud, error) {
	n := cr.Train.N
	if need := int64(cr.total) * int64(n) * 8; need/8/int64(n) != int64(cr.total) || limit > 0 && need > limit {
		return nil, &MemoryError{What: fmt.Sprintf("%s: a cloud of %d particles in %d dimensions", cr.name, cr.total, n), Need: need, Limit: limit}
	}
	c := &core.Cloud{N: n, Groups: make([]core.CloudGroup, len(cr.sizes))}
	for {
		ps, err := cr.NextParticles()
		if err != nil {
			return nil, err
		}
		if ps == nil {
			for g := range c.Groups {
				c.Groups[g].LogZ = cr.LogZ[g]
			}
			return c, nil
		}
		grp := &c.Groups[ps.Group]
		if need := len(grp.Z) + len(ps.Z); need > cap(grp.Z) {
			// Room for the group's particles (gpc:group_sizes, whose
			// total was checked against the limit), at most reserveAhead
			// times those read: once for a group of up to 256 runs
			// (record batches), again at a larger one's 257th run (its
			// runs so far held twice during the copy).
			c := room(cr.sizes[ps.Group]*n, need)
			var z []float64
			if alloc != nil {
				z = alloc(c)
			} else {
				z = make([]float64, c)
			}
			grp.Z = z[:copy(z, grp.Z)]
			grp.LogW = regrow(grp.LogW, c/n)
		}
		grp.Z = append(grp.Z, ps.Z...)
		grp.LogW = append(grp.LogW, ps.LogW...)
		ps.Release()
	}
}

// Close releases the reader.
func (cr *CloudReader) Close() {
	if cr.src != nil {
		cr.src.release()
		cr.src = nil
	}
}

// listRowAppend appends row i of a list column, which must hold n finite
// values, to dst.
func listRowAppend(dst []float64, col arrow.Array, i, n int, where, name string) ([]float64, error) {
	vals, err := listRow(col, i, n, where, name)
	if err != nil {
		return dst, err
	}
	return append(dst, vals...), nil
}

// listView returns row i of a list column, which must hold n finite
// values: a window on the column's memory when its values are float64
// without nulls (valid while the record is), else a copy.
func listView(col arrow.Array, i, n int, where, name string) ([]float64, error) {
	lst, ok := col.(*array.List)
	if !ok || col.IsNull(i) {
		return listRow(col, i, n, where, name)
	}
	vals, isF64 := lst.ListValues().(*array.Float64)
	s, e := lst.ValueOffsets(i)
	if !isF64 || vals.NullN() > 0 || int(e-s) != n || s < 0 || int(e) > vals.Len() {
		return listRow(col, i, n, where, name)
	}
	v := vals.Float64Values()[s:e]
	for k, x := range v {
		if x-x != 0 { // NaN or ±Inf, in one comparison
			return nil, dataErrorf(fmt.Sprintf("%s, %s[%d]", where, name, k), "%v: values must be finite", x)
		}
	}
	return v, nil
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
