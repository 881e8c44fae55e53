package format

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
)

// Prepared plans (gpc-orthant and gpc-train --prepare-only, read back with
// --plan): the estimator's deterministic preparation, a core.Factor with
// its EP twisting, written once so that the shards of a run do not redo
// it. One row per variable in the estimator's order: l (row of the
// factor, FixedSizeList<float64>[n]), perm, a, b, and where the method
// has them mu (tilting), tau, kappa, m (EP sites) and rchol (a row of the
// covariance's Cholesky factor in the input order). The float64 columns
// hold the values exactly; the scalars are in the metadata, printed with
// strconv's shortest representation that reads back to the same bits.
const (
	SchemaPlan         = "gpc.plan/1"
	KeyPlanFingerprint = "gpc:plan_fingerprint" // the input's and the preparation flags' fingerprint
	KeyPlanFactor      = "gpc:plan_factor"      // the factor's scalars: key=value pairs
)

// Plan is a prepared plan: the factor's parts and the metadata (the
// schema's; KeyPlanFingerprint, gpc:method, gpc:pilots, ... as the writer
// set them).
type Plan struct {
	Parts core.FactorParts
	Meta  map[string]string
}

func planSchema(n int, mu, ep bool, meta map[string]string) *arrow.Schema {
	item := arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Float64}
	list := arrow.FixedSizeListOfField(int32(n), item)
	f64 := arrow.PrimitiveTypes.Float64
	fields := []arrow.Field{{Name: "l", Type: list}, {Name: "perm", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: f64}, {Name: "b", Type: f64}}
	if mu {
		fields = append(fields, arrow.Field{Name: "mu", Type: f64})
	}
	if ep {
		fields = append(fields, arrow.Field{Name: "tau", Type: f64}, arrow.Field{Name: "kappa", Type: f64}, arrow.Field{Name: "m", Type: f64}, arrow.Field{Name: "rchol", Type: list})
	}
	md := arrow.MetadataFrom(meta)
	return arrow.NewSchema(fields, &md)
}

func fstr(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WritePlan writes p as a gpc.plan/1 stream, one record batch.
func WritePlan(w io.Writer, p *Plan, mem memory.Allocator) error {
	fp := &p.Parts
	n := fp.N
	meta := maps.Clone(p.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[KeySchema] = SchemaPlan
	meta[KeyN] = strconv.Itoa(n)
	meta[KeyRows] = strconv.Itoa(n)
	meta[KeyPlanFactor] = factorScalars(fp)
	schema := planSchema(n, fp.Mu != nil, fp.Tau != nil, meta)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rows := func(col int, m []float64) {
		lb := rb.Field(col).(*array.FixedSizeListBuilder)
		vb := lb.ValueBuilder().(*array.Float64Builder)
		for i := range n {
			lb.Append(true)
			vb.AppendValues(m[i*n:i*n+n], nil)
		}
	}
	rows(0, fp.L)
	pb := rb.Field(1).(*array.Int64Builder)
	for _, j := range fp.Perm {
		pb.Append(int64(j))
	}
	col := 2
	for _, v := range [][]float64{fp.A, fp.B, fp.Mu, fp.Tau, fp.Kappa, fp.M} {
		if v == nil {
			continue
		}
		rb.Field(col).(*array.Float64Builder).AppendValues(v, nil)
		col++
	}
	if fp.Tau != nil {
		rows(col, fp.RChol)
	}
	rec := rb.NewRecord()
	defer rec.Release()
	bw := bufio.NewWriter(w)
	iw := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := iw.Write(rec); err != nil {
		return &IOError{Op: "write plan", Err: err}
	}
	if err := iw.Close(); err != nil {
		return &IOError{Op: "write plan", Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &IOError{Op: "write plan", Err: err}
	}
	return nil
}

// ReadPlan reads a gpc.plan/1 stream whole and checks it: the schema, the
// columns and their types, no nulls, the row count, and the factor's
// parts (core.NewFactorFromParts; its error becomes a *DataError). It
// returns the plan and its factor.
func ReadPlan(r io.Reader, name string, mem memory.Allocator) (p *Plan, f *core.Factor, err error) {
	defer recoverArrow(name, &err)
	in, err := openInput(r, name)
	if err != nil {
		return nil, nil, err
	}
	if in.kind != kindArrowStream && in.kind != kindArrowFile {
		return nil, nil, dataErrorf(name, "not an Arrow IPC stream")
	}
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, nil, err
	}
	defer src.release()
	meta := schema.Metadata().ToMap()
	if s := meta[KeySchema]; s != SchemaPlan {
		return nil, nil, dataErrorf(name, "%s is %q, not %s: not a plan (written by --prepare-only)", KeySchema, s, SchemaPlan)
	}
	n, err := strconv.Atoi(meta[KeyN])
	if err != nil || n <= 0 || n > 1<<24 { // 1<<24: N x N float64s beyond any memory, and n*n safe
		return nil, nil, dataErrorf(name, "metadata %s = %q is not a variable count", KeyN, meta[KeyN])
	}
	p = &Plan{Meta: meta}
	fp := &p.Parts
	fp.N = n
	if err := parsePlanFactor(meta[KeyPlanFactor], fp); err != nil {
		return nil, nil, dataErrorf(name, "metadata %s: %v", KeyPlanFactor, err)
	}
	_, hasMu := schema.FieldsByName("mu")
	_, hasEP := schema.FieldsByName("tau")
	want := planSchema(n, hasMu, hasEP, nil)
	if !sameFields(schema, want) {
		return nil, nil, dataErrorf(name, "columns %v, want %v", fieldList(schema), fieldList(want))
	}
	dst := []*[]float64{&fp.A, &fp.B}
	if hasMu {
		dst = append(dst, &fp.Mu)
	}
	if hasEP {
		dst = append(dst, &fp.Tau, &fp.Kappa, &fp.M)
	}
	for _, d := range dst {
		*d = []float64{}
	}
	rows := 0
	for batch := 0; ; batch++ {
		rec, err := src.next()
		if err != nil {
			return nil, nil, in.w.classify(name, err)
		}
		if rec == nil {
			break
		}
		for i := range int(rec.NumCols()) {
			if rec.Column(i).NullN() > 0 {
				return nil, nil, dataErrorf(fmt.Sprintf("%s: batch %d, column %q", name, batch, schema.Field(i).Name), "null values")
			}
		}
		rows += int(rec.NumRows())
		if rows > n {
			return nil, nil, dataErrorf(name, "more than %s = %d rows", KeyN, n)
		}
		listValues := func(col int) []float64 {
			l := rec.Column(col).(*array.FixedSizeList)
			v := l.ListValues().(*array.Float64).Float64Values()
			off := l.Offset() * n
			return v[off : off+l.Len()*n]
		}
		fp.L = append(fp.L, listValues(0)...)
		for _, j := range rec.Column(1).(*array.Int64).Int64Values() {
			fp.Perm = append(fp.Perm, int(j))
		}
		for k, d := range dst {
			*d = append(*d, rec.Column(2+k).(*array.Float64).Float64Values()...)
		}
		if hasEP {
			fp.RChol = append(fp.RChol, listValues(2+len(dst))...)
		}
	}
	if err := checkRows(meta, rows); err != nil {
		return nil, nil, dataErrorf(name, "%v", err)
	}
	if rows != n {
		return nil, nil, dataErrorf(name, "%d rows, want %s = %d", rows, KeyN, n)
	}
	f, err = core.NewFactorFromParts(*fp)
	if err != nil {
		return nil, nil, dataErrorf(name, "%v", strings.TrimPrefix(err.Error(), "core: "))
	}
	return p, f, nil
}

// factorScalars writes a factor's scalars as key=value pairs, each number
// in the shortest form that reads back to the same bits (parsePlanFactor
// reads them).
func factorScalars(fp *core.FactorParts) string {
	return fmt.Sprintf("jitter=%s order=%s min_pivot=%s tilt_iterations=%d tilt_krylov=%d tilt_residual=%s tilt_log_bound=%s ep_sweeps=%d ep_change=%s log_z=%s",
		fstr(fp.Jitter), fp.Order, fstr(fp.MinPivot), fp.TiltStats.Iterations, fp.TiltStats.Krylov, fstr(fp.TiltStats.Residual), fstr(fp.TiltStats.LogBound),
		fp.EPStats.Sweeps, fstr(fp.EPStats.Change), fstr(fp.LogZ))
}

// parsePlanFactor reads KeyPlanFactor's key=value pairs into fp.
func parsePlanFactor(s string, fp *core.FactorParts) error {
	seen := map[string]bool{}
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", kv)
		}
		var err error
		switch k {
		case "order":
			var ok bool
			if fp.Order, ok = core.ParseOrder(v); !ok {
				err = fmt.Errorf("unknown order")
			}
		case "tilt_iterations":
			fp.TiltStats.Iterations, err = strconv.Atoi(v)
		case "tilt_krylov":
			fp.TiltStats.Krylov, err = strconv.Atoi(v)
		case "ep_sweeps":
			fp.EPStats.Sweeps, err = strconv.Atoi(v)
		default:
			dst := map[string]*float64{"jitter": &fp.Jitter, "min_pivot": &fp.MinPivot, "tilt_residual": &fp.TiltStats.Residual,
				"tilt_log_bound": &fp.TiltStats.LogBound, "ep_change": &fp.EPStats.Change, "log_z": &fp.LogZ}[k]
			if dst == nil {
				return fmt.Errorf("unknown key %q", k)
			}
			*dst, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return fmt.Errorf("%s = %q: %v", k, v, err)
		}
		seen[k] = true
	}
	if len(seen) != 10 {
		return fmt.Errorf("%d of the 10 keys", len(seen))
	}
	return nil
}

func sameFields(a, b *arrow.Schema) bool {
	if len(a.Fields()) != len(b.Fields()) {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}

func fieldList(s *arrow.Schema) string {
	var fs []string
	for _, f := range s.Fields() {
		fs = append(fs, f.Name+" "+f.Type.String())
	}
	return strings.Join(fs, ", ")
}
