package format

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// The Vecchia stream (gpc.vecchia/1): a classifier's Vecchia model
// (vecchia.Model), what gpc-kernel --vecchia M writes instead of a
// covariance. One row per variable: the N training rows in the model's
// order, then the test rows.
const (
	SchemaVecchia = "gpc.vecchia/1"

	KeyTests         = "gpc:tests"           // the number of test rows
	KeyNoise         = "gpc:noise"           // the variance of the noise on the latent values
	KeyVecchiaM      = "gpc:vecchia_m"       // the neighbours per conditioning set asked for
	KeyVecchiaOrder  = "gpc:vecchia_order"   // the training points' order (maxmin, given)
	KeyVecchiaNugget = "gpc:vecchia_nugget"  // the part of the probit noise moved into the latent process
	KeyVecchiaRepeat = "gpc:vecchia_repeats" // training points that repeat an earlier point's features
	KeyVecchiaSelect = "gpc:vecchia_select"  // how the conditioning sets were chosen (--vecchia auto's choice, or nearest)
	KeyVecchiaCheck  = "gpc:vecchia_check"   // the approximation's check before the run (vecchia.Structure.Check)

	ColRow     = "row"      // the row's index in its input file (training or test)
	ColNbr     = "nbr"      // the conditioning set: positions of training rows
	ColCoef    = "coef"     // the conditioning coefficients
	ColCondVar = "cond_var" // the latent conditional variance
)

// VecchiaStream is a Vecchia model with what the tools pass on about its
// rows: their input row indices (the N training rows in the model's
// order, then the test rows), ids and labels (NaN: none), and the
// stream's metadata.
type VecchiaStream struct {
	Model *vecchia.Model
	Row   []int
	ID    []string // nil without ids
	Y     []float64
	Meta  map[string]string
}

// VecchiaSchema returns the Vecchia stream's schema: role, row, nbr
// (List<int32>), coef (List<float64>), cond_var, lower and upper (float64,
// the training rows' bounds on w = x + noise; a test row's are 0 and +Inf,
// its posterior P(w* >= 0)), y (nullable) and, with ids, id. meta is merged
// into the metadata after gpc:schema.
func VecchiaSchema(ids bool, meta map[string]string) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColRole, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColNbr, Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: ColCoef, Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
		{Name: ColCondVar, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColLower, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColUpper, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColY, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	if ids {
		fields = append(fields, arrow.Field{Name: ColID, Type: arrow.BinaryTypes.String})
	}
	m := map[string]string{KeySchema: SchemaVecchia}
	maps.Copy(m, meta)
	md := arrow.MetadataFrom(m)
	return arrow.NewSchema(fields, &md)
}

// VecchiaFingerprint identifies a Vecchia model's training part (its
// conditioning sets, coefficients, variances, noise and bounds): the first
// 128 bits of their SHA-256, in hex. gpc-train's cloud carries it.
func VecchiaFingerprint(m *vecchia.Model) string {
	h := sha256.New()
	var b [8]byte
	put := func(u uint64) {
		binary.LittleEndian.PutUint64(b[:], u)
		h.Write(b[:])
	}
	put(uint64(m.N))
	put(math.Float64bits(m.Noise))
	for _, v := range m.Start {
		put(uint64(v))
	}
	for _, v := range m.Nbr {
		put(uint64(v))
	}
	for _, vs := range [][]float64{m.Coef, m.CondVar, m.Lower, m.Upper} {
		for _, v := range vs {
			put(math.Float64bits(v))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// WriteVecchia writes s as a Vecchia stream, batchRows rows per record
// batch, with gpc:n, gpc:tests, gpc:noise, gpc:rows and the fingerprint set
// from the model (VecchiaClassesFingerprint where the metadata names
// classes).
func WriteVecchia(w io.Writer, s *VecchiaStream, batchRows int, mem memory.Allocator) error {
	m := s.Model
	meta := maps.Clone(s.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[KeyN] = strconv.Itoa(m.N)
	meta[KeyTests] = strconv.Itoa(m.T)
	meta[KeyRows] = strconv.Itoa(m.N + m.T)
	meta[KeyNoise] = strconv.FormatFloat(m.Noise, 'g', -1, 64)
	meta[KeyFingerprint] = VecchiaFingerprint(m)
	if cl, ok := meta[KeyClasses]; ok {
		meta[KeyFingerprint] = VecchiaClassesFingerprint(m, cl, s.Y)
	}
	schema := VecchiaSchema(s.ID != nil, meta)
	bw := bufio.NewWriter(w)
	iw := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	role := rb.Field(0).(*array.StringBuilder)
	row := rb.Field(1).(*array.Int64Builder)
	nbr := rb.Field(2).(*array.ListBuilder)
	nbrV := nbr.ValueBuilder().(*array.Int32Builder)
	coef := rb.Field(3).(*array.ListBuilder)
	coefV := coef.ValueBuilder().(*array.Float64Builder)
	cv := rb.Field(4).(*array.Float64Builder)
	lo := rb.Field(5).(*array.Float64Builder)
	hi := rb.Field(6).(*array.Float64Builder)
	yb := rb.Field(7).(*array.Float64Builder)
	var idb *array.StringBuilder
	if s.ID != nil {
		idb = rb.Field(8).(*array.StringBuilder)
	}
	flush := func() error {
		rec := rb.NewRecord()
		defer rec.Release()
		if err := iw.Write(rec); err != nil {
			return &IOError{Op: "write the Vecchia stream", Err: err}
		}
		return nil
	}
	total := m.N + m.T
	batch := max(1, batchRows)
	for i := range total {
		var start, end []int
		var nb []int32
		var cf, vars []float64
		k := i
		if i < m.N {
			role.Append("train")
			start, end, nb, cf, vars = m.Start, m.Start[1:], m.Nbr, m.Coef, m.CondVar
			lo.Append(m.Lower[i])
			hi.Append(m.Upper[i])
		} else {
			role.Append("test")
			k = i - m.N
			start, end, nb, cf, vars = m.TStart, m.TStart[1:], m.TNbr, m.TCoef, m.TCondVar
			lo.Append(0)
			hi.Append(math.Inf(1))
		}
		row.Append(int64(s.Row[i]))
		nbr.Append(true)
		nbrV.AppendValues(nb[start[k]:end[k]], nil)
		coef.Append(true)
		coefV.AppendValues(cf[start[k]:end[k]], nil)
		cv.Append(vars[k])
		if math.IsNaN(s.Y[i]) {
			yb.AppendNull()
		} else {
			yb.Append(s.Y[i])
		}
		if idb != nil {
			idb.Append(s.ID[i])
		}
		if (i+1)%batch == 0 || i == total-1 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iw.Close(); err != nil {
		return &IOError{Op: "write the Vecchia stream", Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &IOError{Op: "write the Vecchia stream", Err: err}
	}
	return nil
}

// ReadVecchia reads a Vecchia stream (Arrow IPC stream or file) and checks
// it: the columns and their types, no nulls but y's, the roles (training
// rows first), finite values, gpc:n, gpc:tests, gpc:noise and gpc:rows, and
// the model itself (vecchia.Model.Validate). Errors are *DataError naming
// the input, batch and row, or *IOError.
func ReadVecchia(r io.Reader, name string, mem memory.Allocator) (s *VecchiaStream, err error) {
	in, src, schema, err := openArrow(r, name, "a Vecchia model is gpc-kernel --vecchia's output", mem)
	if err != nil {
		return nil, err
	}
	defer recoverArrow(name, &err)
	defer src.release()
	meta := schema.Metadata().ToMap()
	if v := meta[KeySchema]; v != SchemaVecchia {
		return nil, dataErrorf(name, "schema %q where a Vecchia model (%s, written by gpc-kernel --vecchia) was expected", v, SchemaVecchia)
	}
	want := []struct {
		name string
		id   arrow.Type
		elem arrow.Type
	}{{ColRole, arrow.STRING, 0}, {ColRow, arrow.INT64, 0}, {ColNbr, arrow.LIST, arrow.INT32}, {ColCoef, arrow.LIST, arrow.FLOAT64},
		{ColCondVar, arrow.FLOAT64, 0}, {ColLower, arrow.FLOAT64, 0}, {ColUpper, arrow.FLOAT64, 0}, {ColY, arrow.FLOAT64, 0}}
	fields := schema.Fields()
	if len(fields) != len(want) && len(fields) != len(want)+1 {
		return nil, dataErrorf(name, "%d columns where a Vecchia model has %d or %d", len(fields), len(want), len(want)+1)
	}
	for i, w := range want {
		f := fields[i]
		ok := f.Name == w.name && f.Type.ID() == w.id
		if ok && w.id == arrow.LIST {
			ok = f.Type.(*arrow.ListType).Elem().ID() == w.elem
		}
		if !ok {
			return nil, dataErrorf(name, "column %d is %s %s where the Vecchia schema has %s", i, f.Name, f.Type, w.name)
		}
	}
	ids := len(fields) == len(want)+1
	if ids && (fields[len(want)].Name != ColID || fields[len(want)].Type.ID() != arrow.STRING) {
		return nil, dataErrorf(name, "column %d is %s %s where the Vecchia schema has %s (utf8)", len(want), fields[len(want)].Name, fields[len(want)].Type, ColID)
	}
	metaInt := func(key string) (int, error) {
		v, err := strconv.Atoi(meta[key])
		if err != nil || v < 0 {
			return 0, dataErrorf(name, "metadata %s = %q is not a count", key, meta[key])
		}
		return v, nil
	}
	n, err := metaInt(KeyN)
	if err != nil {
		return nil, err
	}
	t, err := metaInt(KeyTests)
	if err != nil {
		return nil, err
	}
	noise, perr := strconv.ParseFloat(meta[KeyNoise], 64)
	if perr != nil {
		return nil, dataErrorf(name, "metadata %s = %q is not a number", KeyNoise, meta[KeyNoise])
	}
	m := &vecchia.Model{N: n, T: t, Noise: noise, Start: []int{0}, TStart: []int{0}}
	s = &VecchiaStream{Model: m, Meta: meta}
	if err := in.readBatches(src, meta, func(rec arrow.Record, batch, rows int) error {
		return s.addBatch(rec, name, batch, rows, ids)
	}); err != nil {
		return nil, err
	}
	if got := len(m.CondVar); got != n || len(m.TCondVar) != t {
		return nil, dataErrorf(name, "%d training and %d test rows where the metadata announces %d and %d", got, len(m.TCondVar), n, t)
	}
	if err := m.Validate(); err != nil {
		var ie *core.InputError
		if errors.As(err, &ie) {
			return nil, dataErrorf(name, "%s", ie.Msg) // it names the row
		}
		return nil, dataErrorf(name, "%v", err)
	}
	return s, nil
}

// addBatch appends a record batch's rows (the first at stream row base).
func (s *VecchiaStream) addBatch(rec arrow.Record, name string, batch, base int, ids bool) error {
	m := s.Model
	role := rec.Column(0).(*array.String)
	row := rec.Column(1).(*array.Int64)
	nbr := rec.Column(2).(*array.List)
	nbrV := nbr.ListValues().(*array.Int32)
	coef := rec.Column(3).(*array.List)
	coefV := coef.ListValues().(*array.Float64)
	cv := rec.Column(4).(*array.Float64)
	lo := rec.Column(5).(*array.Float64)
	hi := rec.Column(6).(*array.Float64)
	yc := rec.Column(7).(*array.Float64)
	var idc *array.String
	if ids {
		idc = rec.Column(8).(*array.String)
	}
	for c := range int(rec.NumCols()) {
		if c != 7 && rec.Column(c).NullN() > 0 {
			return dataErrorf(name, "batch %d: column %s has nulls", batch, rec.Schema().Field(c).Name)
		}
	}
	s.reserve(nbr, role)
	for i := range int(rec.NumRows()) {
		where := rowWhere{batch, base + i}
		na, nb := nbr.ValueOffsets(i)
		ca, cb := coef.ValueOffsets(i)
		if nb-na != cb-ca {
			return dataErrorf(name, "%s: %d neighbours but %d coefficients", where, nb-na, cb-ca)
		}
		if nbrV.NullN() > 0 || coefV.NullN() > 0 {
			return dataErrorf(name, "%s: null neighbours or coefficients", where)
		}
		for q := ca; q < cb; q++ {
			if v := coefV.Value(int(q)); math.IsNaN(v) || math.IsInf(v, 0) {
				return dataErrorf(name, "%s: coefficient %v is not finite", where, v)
			}
		}
		v := cv.Value(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dataErrorf(name, "%s: %s %v is not finite", where, ColCondVar, v)
		}
		y := math.NaN()
		if !yc.IsNull(i) {
			y = yc.Value(i)
		}
		switch role.Value(i) {
		case "train":
			if len(m.TCondVar) > 0 {
				return dataErrorf(name, "%s: a training row after the test rows", where)
			}
			if len(m.CondVar) >= m.N {
				return dataErrorf(name, "%s: more training rows than the metadata's %s = %d", where, KeyN, m.N)
			}
			for q := na; q < nb; q++ {
				m.Nbr = append(m.Nbr, nbrV.Value(int(q)))
			}
			m.Coef = append(m.Coef, coefV.Float64Values()[ca:cb]...)
			m.Start = append(m.Start, len(m.Nbr))
			m.CondVar = append(m.CondVar, v)
			m.Lower = append(m.Lower, lo.Value(i))
			m.Upper = append(m.Upper, hi.Value(i))
		case "test":
			for q := na; q < nb; q++ {
				m.TNbr = append(m.TNbr, nbrV.Value(int(q)))
			}
			m.TCoef = append(m.TCoef, coefV.Float64Values()[ca:cb]...)
			m.TStart = append(m.TStart, len(m.TNbr))
			m.TCondVar = append(m.TCondVar, v)
		default:
			return dataErrorf(name, "%s: role %q is not train or test", where, role.Value(i))
		}
		s.Row = append(s.Row, int(row.Value(i)))
		s.Y = append(s.Y, y)
		if idc != nil {
			s.ID = append(s.ID, idc.Value(i))
		}
	}
	return nil
}

// rowWhere names a row of a Vecchia stream in an error: its batch and its
// row in the stream, formatted only where an error needs it.
type rowWhere struct{ batch, row int }

func (w rowWhere) String() string { return fmt.Sprintf("batch %d, row %d", w.batch, w.row) }

// reserveAhead bounds the room the readers reserve for what a stream's
// metadata announces (reserve's rows, a cloud's train block and groups, a
// Vecchia cloud's test rows and kept paths): at most this many times what
// has been read, so that a stream that announces more than it holds
// makes the reading fail on the count, not allocate for what was
// announced.
const reserveAhead = 256

// room returns the capacity to reserve for announced values once need of
// them have arrived: announced, but at most reserveAhead times need (and
// at least need).
func room(announced, need int) int { return max(need, min(announced, reserveAhead*need)) }

// reserve makes room, before a batch's rows are appended, for the rows to
// come, so that the appends of a large model do not copy its arrays again
// and again into fresh memory (at N = 10^6 that was most of the reading's
// time): where the batch's rows do not fit, for all n training and T test
// rows the metadata announces, and for the training rows' neighbours and
// coefficients at the rate of the rows read so far and a sixteenth more,
// each at most reserveAhead times what has been read, this batch
// included (so one reservation at gpc-kernel's batches of 4096 rows up to
// N of about 10^6, a few more beyond). The neighbours' count comes from
// the data, so a wrong gpc:vecchia_m cannot make it allocate more.
func (s *VecchiaStream) reserve(nbr *array.List, role *array.String) {
	m := s.Model
	nr := nbr.Len()
	if need := len(s.Row) + nr; need > cap(s.Row) {
		c := room(m.N+m.T, need)
		s.Row, s.Y = regrow(s.Row, c), regrow(s.Y, c)
	}
	train := 0
	for train < nr && role.Value(train) == "train" {
		train++
	}
	seen := len(m.CondVar) + train
	if train == 0 || seen > m.N {
		return // no training rows, or more than announced: addBatch says so
	}
	if seen > cap(m.CondVar) {
		c := room(m.N, seen)
		m.CondVar, m.Lower, m.Upper = regrow(m.CondVar, c), regrow(m.Lower, c), regrow(m.Upper, c)
		m.Start = regrow(m.Start, c+1)
	}
	lo, _ := nbr.ValueOffsets(0)
	_, hi := nbr.ValueOffsets(train - 1)
	entries := len(m.Nbr) + int(hi-lo)
	if entries <= cap(m.Nbr) && entries <= cap(m.Coef) {
		return
	}
	rest := float64(entries) / float64(seen) * float64(m.N-seen) * (1 + 1.0/16)
	want := entries + int(min(rest, float64(reserveAhead*entries)))
	m.Nbr = regrow(m.Nbr, want)
	m.Coef = regrow(m.Coef, want)
}

// regrow returns s's values in a new slice of capacity c. The new array
// comes from make, which clears it in steps that the garbage collector
// can interrupt, or not at all where the memory is fresh from the
// operating system, unlike append's or slices.Grow's clearing of the
// spare capacity, which the collector waits for: under gpc-train's GOGC
// of 25 those waits took as long as the reading itself at N = 10^6.
func regrow[T any](s []T, c int) []T {
	t := make([]T, len(s), c)
	copy(t, s)
	return t
}

// Sniff reads the start of an input to tell which gpc stream it is: the
// gpc:schema of an Arrow IPC stream's or file's schema ("" for other
// inputs, or an Arrow input without one), and a reader that yields the
// whole input again. It reads no more of a stream than its schema message
// (and the reader's buffer); a file is read whole.
func Sniff(r io.Reader, name string) (schema string, all io.Reader, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(8)
	switch {
	case bytes.HasPrefix(head, arrowStreamMagic):
		var seen bytes.Buffer
		defer func() {
			if p := recover(); p != nil {
				schema, err = "", nil
			}
			all = io.MultiReader(bytes.NewReader(seen.Bytes()), br)
		}()
		sr, err := ipc.NewReader(newIPCGuard(bufio.NewReader(io.TeeReader(br, &seen))), ipc.WithAllocator(memory.NewGoAllocator()))
		if err != nil {
			return "", nil, nil // the tool's own reader says what is wrong
		}
		v, _ := sr.Schema().Metadata().GetValue(KeySchema)
		return v, nil, nil
	case bytes.HasPrefix(head, arrowFileMagic):
		data, err := io.ReadAll(br)
		if err != nil {
			return "", nil, &IOError{Op: "read " + name, Err: err}
		}
		all = bytes.NewReader(data)
		if checkFile(data) != nil {
			return "", all, nil
		}
		fr, ferr := ipc.NewFileReader(bytes.NewReader(data))
		if ferr != nil {
			return "", all, nil
		}
		defer fr.Close()
		v, _ := fr.Schema().Metadata().GetValue(KeySchema)
		return v, all, nil
	}
	return "", br, nil
}
