package format

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// The Vecchia plan (gpc.vecchia-plan/1): a Vecchia model's prepared
// proposal (vecchia.PreparedParts), what gpc-train and gpc-orthant
// --prepare-only write for a Vecchia model, so that the shards of a run
// read it with the model instead of each preparing again. One row per
// training variable in the model's order: diag (the proposal factor's
// diagonal), off (List<float64>: the row's other entries, in the columns
// of its pattern, vecchia.ProposalPattern), eta, tau, nu (q's linear term
// and the sites by latent variable), row_tau, row_nu (the rows' own sites:
// a repeated point's rows share its variable's) and laplace_tau, laplace_nu, laplace_mode (Laplace's
// sites and mode). Every float64 is stored exactly; the scalars are in
// KeyVecchiaPlan, each printed in the shortest form that reads back to the
// same bits. KeyPlanFingerprint ties the plan to its model (the model's
// VecchiaFingerprint): a plan read with another model is refused.
const (
	SchemaVecchiaPlan = "gpc.vecchia-plan/1"
	KeyVecchiaPlan    = "gpc:vecchia_plan" // the preparation's scalars: key=value pairs
)

// vecchiaPlanCols are the plan's float64 columns after off, in order.
var vecchiaPlanCols = []string{"diag", "eta", "tau", "nu", "row_tau", "row_nu", "laplace_tau", "laplace_nu", "laplace_mode"}

// vecchiaPlanRows is the plan writer's rows per record batch (a variable
// for the tests).
var vecchiaPlanRows = 1 << 16

// VecchiaPlanFingerprint is the gpc:plan_fingerprint of a plan for the
// Vecchia model whose fingerprint (VecchiaFingerprint) is model.
func VecchiaPlanFingerprint(model string) string {
	return ShardFingerprint(SchemaVecchiaPlan, model)
}

func vecchiaPlanSchema(meta map[string]string) *arrow.Schema {
	fields := []arrow.Field{{Name: "off", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)}}
	for _, c := range vecchiaPlanCols {
		fields = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Float64})
	}
	md := arrow.MetadataFrom(meta)
	return arrow.NewSchema(fields, &md)
}

// WriteVecchiaPlan writes the parts pp of the Vecchia model m's
// preparation as a gpc.vecchia-plan/1 stream, with the metadata meta
// (gpc:version and the like) and the schema's keys.
func WriteVecchiaPlan(w io.Writer, m *vecchia.Model, pp *vecchia.PreparedParts, meta map[string]string, mem memory.Allocator) error {
	n := m.N
	md := maps.Clone(meta)
	if md == nil {
		md = map[string]string{}
	}
	fp := VecchiaFingerprint(m)
	md[KeySchema] = SchemaVecchiaPlan
	md[KeyN] = strconv.Itoa(n)
	md[KeyRows] = strconv.Itoa(n)
	md[KeyFingerprint] = fp
	md[KeyPlanFingerprint] = VecchiaPlanFingerprint(fp)
	md[KeyVecchiaPlan] = vecchiaPlanScalars(pp)
	schema := vecchiaPlanSchema(md)
	lens := vecchia.ProposalPattern(m, pp.Block)
	cols := [][]float64{pp.Diag, pp.Eta, pp.Tau, pp.Nu, pp.RowTau, pp.RowNu, pp.Laplace.Tau, pp.Laplace.Nu, pp.Laplace.Mode}
	bw := bufio.NewWriter(w)
	iw := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	off := rb.Field(0).(*array.ListBuilder)
	offV := off.ValueBuilder().(*array.Float64Builder)
	q := 0
	for lo := 0; lo < n; lo += vecchiaPlanRows {
		hi := min(n, lo+vecchiaPlanRows)
		for k := lo; k < hi; k++ {
			off.Append(true)
			offV.AppendValues(pp.Off[q:q+lens[k]], nil)
			q += lens[k]
		}
		for c, v := range cols {
			rb.Field(1+c).(*array.Float64Builder).AppendValues(v[lo:hi], nil)
		}
		rec := rb.NewRecord()
		err := iw.Write(rec)
		rec.Release()
		if err != nil {
			return &IOError{Op: "write the Vecchia plan", Err: err}
		}
	}
	if err := iw.Close(); err != nil {
		return &IOError{Op: "write the Vecchia plan", Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &IOError{Op: "write the Vecchia plan", Err: err}
	}
	return nil
}

// ReadVecchiaPlan reads a gpc.vecchia-plan/1 stream for the Vecchia model
// m and checks it: the schema, the columns and their types, no nulls, the
// row count and each row's entries against the model's pattern, the
// fingerprint against m's, and the parts themselves
// (vecchia.NewPreparedFromParts). It returns the plan's metadata and the
// Prepared. Errors are *DataError naming the input (a plan of another
// model says so), or *IOError.
func ReadVecchiaPlan(r io.Reader, name string, m *vecchia.Model, mem memory.Allocator) (meta map[string]string, p *vecchia.Prepared, err error) {
	in, src, schema, err := openArrow(r, name, "a Vecchia plan is gpc-train --prepare-only's output on a Vecchia model", mem)
	if err != nil {
		return nil, nil, err
	}
	defer recoverArrow(name, &err)
	defer src.release()
	meta = schema.Metadata().ToMap()
	if s := meta[KeySchema]; s != SchemaVecchiaPlan {
		return nil, nil, dataErrorf(name, "%s is %q, not %s: not a plan of a Vecchia model (written by --prepare-only)", KeySchema, s, SchemaVecchiaPlan)
	}
	if !sameFields(schema, vecchiaPlanSchema(nil)) {
		return nil, nil, dataErrorf(name, "columns %v, want %v", fieldList(schema), fieldList(vecchiaPlanSchema(nil)))
	}
	if fp := VecchiaPlanFingerprint(VecchiaFingerprint(m)); meta[KeyPlanFingerprint] != fp {
		return nil, nil, dataErrorf(name, "the plan was prepared for another Vecchia model than this run's input")
	}
	if v, err := strconv.Atoi(meta[KeyN]); err != nil || v != m.N {
		return nil, nil, dataErrorf(name, "metadata %s = %q, where the model has %d training rows", KeyN, meta[KeyN], m.N)
	}
	pp := &vecchia.PreparedParts{}
	if err := parseVecchiaPlanScalars(meta[KeyVecchiaPlan], pp); err != nil {
		return nil, nil, dataErrorf(name, "metadata %s: %v", KeyVecchiaPlan, err)
	}
	if !vecchia.ValidBlock(m, pp.Block) {
		return nil, nil, dataErrorf(name, "metadata %s: a dense block of %d rows in a model of %d", KeyVecchiaPlan, pp.Block, m.N)
	}
	lens := vecchia.ProposalPattern(m, pp.Block)
	cols := []*[]float64{&pp.Diag, &pp.Eta, &pp.Tau, &pp.Nu, &pp.RowTau, &pp.RowNu, &pp.Laplace.Tau, &pp.Laplace.Nu, &pp.Laplace.Mode}
	for _, c := range cols {
		*c = make([]float64, 0, m.N)
	}
	total := 0
	for _, l := range lens {
		total += l
	}
	pp.Off = make([]float64, 0, total)
	if err := in.readBatches(src, meta, func(rec arrow.Record, batch, rows int) error {
		for c := range int(rec.NumCols()) {
			if rec.Column(c).NullN() > 0 {
				return dataErrorf(name, "batch %d: column %s has nulls", batch, schema.Field(c).Name)
			}
		}
		if rows+int(rec.NumRows()) > m.N {
			return dataErrorf(name, "batch %d: more rows than the model's %d", batch, m.N)
		}
		off := rec.Column(0).(*array.List)
		offV := off.ListValues().(*array.Float64)
		if offV.NullN() > 0 {
			return dataErrorf(name, "batch %d: null entries of off", batch)
		}
		for i := range int(rec.NumRows()) {
			a, b := off.ValueOffsets(i)
			if int(b-a) != lens[rows+i] {
				return dataErrorf(name, "batch %d, row %d: %d entries of the proposal's factor where its pattern has %d", batch, rows+i, b-a, lens[rows+i])
			}
			pp.Off = append(pp.Off, offV.Float64Values()[a:b]...)
		}
		for c, d := range cols {
			*d = append(*d, rec.Column(1+c).(*array.Float64).Float64Values()...)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if len(pp.Diag) != m.N {
		return nil, nil, dataErrorf(name, "%d rows where the model has %d", len(pp.Diag), m.N)
	}
	p, err = vecchia.NewPreparedFromParts(m, *pp)
	if err != nil {
		var ie *core.InputError
		if errors.As(err, &ie) {
			return nil, nil, dataErrorf(name, "%s", ie.Msg)
		}
		return nil, nil, dataErrorf(name, "%v", err)
	}
	return meta, p, nil
}

// vecchiaPlanScalars writes the preparation's scalars as key=value pairs,
// each number in the shortest form that reads back to the same bits
// (parseVecchiaPlanScalars reads them).
func vecchiaPlanScalars(pp *vecchia.PreparedParts) string {
	return fmt.Sprintf("block=%d laplace_iterations=%d laplace_cg_steps=%d ep_sweeps=%d ep_change=%s ep_moving=%d shift=%s widened=%d mean_steps=%d clipped=%d site_scale=%s",
		pp.Block, pp.Laplace.Iterations, pp.Laplace.CGSteps, pp.EP.Sweeps, fstr(pp.EP.Change), pp.EP.Moving, fstr(pp.Shift), pp.Widened, pp.MeanSteps, pp.Clipped, fstr(pp.SiteScale))
}

// parseVecchiaPlanScalars reads KeyVecchiaPlan's key=value pairs into pp.
func parseVecchiaPlanScalars(s string, pp *vecchia.PreparedParts) error {
	ints := map[string]*int{"block": &pp.Block, "laplace_iterations": &pp.Laplace.Iterations, "laplace_cg_steps": &pp.Laplace.CGSteps,
		"ep_sweeps": &pp.EP.Sweeps, "ep_moving": &pp.EP.Moving, "widened": &pp.Widened, "mean_steps": &pp.MeanSteps, "clipped": &pp.Clipped}
	floats := map[string]*float64{"ep_change": &pp.EP.Change, "shift": &pp.Shift, "site_scale": &pp.SiteScale}
	seen := map[string]bool{}
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", kv)
		}
		if seen[k] {
			return fmt.Errorf("key %q twice", k)
		}
		var err error
		switch {
		case ints[k] != nil:
			*ints[k], err = strconv.Atoi(v)
		case floats[k] != nil:
			*floats[k], err = strconv.ParseFloat(v, 64)
			if err == nil && (math.IsNaN(*floats[k]) || math.IsInf(*floats[k], 0)) {
				err = errors.New("not finite")
			}
		default:
			return fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s = %q: %v", k, v, err)
		}
		seen[k] = true
	}
	if want := len(ints) + len(floats); len(seen) != want {
		return fmt.Errorf("%d of the %d keys", len(seen), want)
	}
	return nil
}
