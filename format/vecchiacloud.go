package format

import (
	"bufio"
	"bytes"
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
)

// The Vecchia cloud (gpc.vecchia-cloud/1): what gpc-train writes from a
// Vecchia model. Its particles are not all kept: a particle's path is a
// value per training point, 4 N bytes (40 GB for 10^4 particles at N =
// 10^6), so
// each group predicts the test rows at its end, and the cloud holds the
// test rows (row, id, y) and then, group by group as the estimate runs,
// each group's outcome (core.GroupResult) and weighted test posteriors.
// gpc-predict combines them (core.CombinePosteriors). gpc-train --shard
// writes gpc.vecchia-cloud-shard/1: the test rows and its range of groups,
// with the shard keys, which gpc-merge joins into the unsharded cloud.
//
// A cloud may also keep particle paths for later prediction (gpc-train
// --keep; gpc:kept_paths lists each group's count K_g): it then has a
// column x (List<float32>), and after each group's row, a weights row
// (kind "weights", the group, p: the K_g paths' normalized weights) and
// path rows (kind "path", the group, row: the position k of their first
// variable in the model's order, x: the K_g paths' values of variables
// k, k+1, ..., K_g values each, as many variables as fit in 4 MiB), so
// that a group's paths are N x K_g values by variable, as core/vecchia's
// runner holds them, and the cloud is 4 N K bytes and little more.
const (
	SchemaVecchiaCloud      = "gpc.vecchia-cloud/1"
	SchemaVecchiaCloudShard = "gpc.vecchia-cloud-shard/1"

	ColKind      = "kind"
	ColGroup     = "group"
	ColLogP      = "log_p"
	ColMinESS    = "min_ess"
	ColResamples = "resamples"
	ColAncestors = "ancestors"
	ColDeadAt    = "dead_at"
	ColP         = "p"
	ColX         = "x"

	KeyKeptPaths = "gpc:kept_paths" // the particle paths each group keeps (comma-separated counts)
)

// VecchiaCloudSchema returns the Vecchia cloud's schema with meta: with
// the column x where meta has gpc:kept_paths.
func VecchiaCloudSchema(meta map[string]string) *arrow.Schema {
	f64 := arrow.PrimitiveTypes.Float64
	i64 := arrow.PrimitiveTypes.Int64
	fields := []arrow.Field{
		{Name: ColKind, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: i64, Nullable: true},
		{Name: ColID, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColY, Type: f64, Nullable: true},
		{Name: ColGroup, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: ColLogP, Type: f64, Nullable: true},
		{Name: ColMinESS, Type: f64, Nullable: true},
		{Name: ColResamples, Type: i64, Nullable: true},
		{Name: ColAncestors, Type: i64, Nullable: true},
		{Name: ColDeadAt, Type: i64, Nullable: true},
		{Name: ColP, Type: arrow.ListOf(f64), Nullable: true},
	}
	if _, ok := meta[KeyKeptPaths]; ok {
		fields = append(fields, arrow.Field{Name: ColX, Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true})
	}
	md := arrow.MetadataFrom(meta)
	return arrow.NewSchema(fields, &md)
}

// VecchiaGroup is one group row of a Vecchia cloud, with its kept paths
// (N x K values by variable) and their weights where the cloud keeps
// them and they were read.
type VecchiaGroup struct {
	Group int
	Out   core.GroupResult
	P     []float64
	Paths []float32
	PathW []float64
}

// VecchiaCloud is a read Vecchia cloud: its test rows' input rows, ids
// (nil: none) and labels (NaN: none), its group rows in order, and its
// metadata; Kept is each group's kept paths (nil: the cloud keeps none)
// and N the paths' length (VecchiaPathVars: gpc:n, times C - 1 with C
// classes).
type VecchiaCloud struct {
	Row    []int
	ID     []string
	Y      []float64
	Groups []VecchiaGroup
	Meta   map[string]string
	Kept   []int
	N      int

	paths bool // read the paths (else only check their rows' shape)
	next  int  // the next path row's position in the last group
}

// VecchiaCloudWriter writes a Vecchia cloud: the test rows when it is
// made, then one record batch per group.
type VecchiaCloudWriter struct {
	bw     *bufio.Writer
	iw     *ipc.Writer
	rb     *array.RecordBuilder
	schema *arrow.Schema
	tests  int
}

// NewVecchiaCloudWriter starts a Vecchia cloud with the metadata meta
// (complete: gpc:schema included) and writes the test rows (rows, their
// ids or nil, their labels), batchRows per record batch. The schema and
// the test rows reach w before it returns, and each group's row as
// WriteGroup writes it: a reader learns from the schema (gpc:tests) what
// the cloud holds while the estimate runs (gpc-predict refuses a cloud
// without test rows at once, and gpc-train stops at its next group).
func NewVecchiaCloudWriter(w io.Writer, meta map[string]string, rows []int, ids []string, y []float64, batchRows int, mem memory.Allocator) (*VecchiaCloudWriter, error) {
	schema := VecchiaCloudSchema(maps.Clone(meta))
	cw := &VecchiaCloudWriter{bw: bufio.NewWriter(w), schema: schema, tests: len(rows)}
	out, err := writeSchemaNow(cw.bw, schema, mem)
	if err != nil {
		return nil, &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	cw.iw = ipc.NewWriter(out, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	cw.rb = array.NewRecordBuilder(mem, schema)
	batch := max(1, batchRows)
	for i := range rows {
		cw.rb.Field(0).(*array.StringBuilder).Append("test")
		cw.rb.Field(1).(*array.Int64Builder).Append(int64(rows[i]))
		if ids != nil {
			cw.rb.Field(2).(*array.StringBuilder).Append(ids[i])
		} else {
			cw.rb.Field(2).AppendNull()
		}
		if math.IsNaN(y[i]) {
			cw.rb.Field(3).AppendNull()
		} else {
			cw.rb.Field(3).(*array.Float64Builder).Append(y[i])
		}
		for c := 4; c < len(schema.Fields()); c++ {
			cw.rb.Field(c).AppendNull()
		}
		if (i+1)%batch == 0 || i == len(rows)-1 {
			if err := cw.flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := cw.bw.Flush(); err != nil {
		return nil, &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	return cw, nil
}

func (cw *VecchiaCloudWriter) flush() error {
	rec := cw.rb.NewRecord()
	defer rec.Release()
	if err := cw.iw.Write(rec); err != nil {
		return &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	return nil
}

// WriteGroup writes group g's row: its outcome and its weighted test
// posteriors (one per test row; NaN for a group whose particles all
// failed).
func (cw *VecchiaCloudWriter) WriteGroup(g int, out core.GroupResult, pg []float64) error {
	if len(pg) != cw.tests {
		panic("format: WriteGroup: the posteriors' length is not the test rows'")
	}
	rb := cw.rb
	rb.Field(0).(*array.StringBuilder).Append("group")
	rb.Field(1).AppendNull()
	rb.Field(2).AppendNull()
	rb.Field(3).AppendNull()
	rb.Field(4).(*array.Int32Builder).Append(int32(g))
	rb.Field(5).(*array.Float64Builder).Append(out.LogZ)
	rb.Field(6).(*array.Float64Builder).Append(out.MinESS)
	rb.Field(7).(*array.Int64Builder).Append(int64(out.Resamples))
	rb.Field(8).(*array.Int64Builder).Append(int64(out.Ancestors))
	rb.Field(9).(*array.Int64Builder).Append(int64(out.DeadAt))
	lb := rb.Field(10).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues(pg, nil)
	if len(cw.schema.Fields()) > 11 {
		rb.Field(11).AppendNull()
	}
	if err := cw.flush(); err != nil {
		return err
	}
	if err := cw.bw.Flush(); err != nil {
		return &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	return nil
}

// WritePaths writes group g's kept paths (n x k values by variable) and
// their k weights: the weights row, then VecchiaPathRows(n, k) - 1 path
// rows, one per record batch. The cloud's schema must have the column x
// (gpc:kept_paths).
func (cw *VecchiaCloudWriter) WritePaths(g, n int, paths []float32, w []float64) error {
	k := len(w)
	if len(cw.schema.Fields()) < 12 || len(paths) != n*k {
		panic("format: WritePaths: a cloud without kept paths, or the paths' length is not n k")
	}
	rb := cw.rb
	nulls := func(cols ...int) {
		for _, c := range cols {
			rb.Field(c).AppendNull()
		}
	}
	rb.Field(0).(*array.StringBuilder).Append("weights")
	nulls(1, 2, 3)
	rb.Field(4).(*array.Int32Builder).Append(int32(g))
	nulls(5, 6, 7, 8, 9)
	lb := rb.Field(10).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues(w, nil)
	nulls(11)
	if err := cw.flush(); err != nil {
		return err
	}
	per := pathRowVars(k)
	xb := rb.Field(11).(*array.ListBuilder)
	xv := xb.ValueBuilder().(*array.Float32Builder)
	for v := 0; v < n; v += per {
		rb.Field(0).(*array.StringBuilder).Append("path")
		rb.Field(1).(*array.Int64Builder).Append(int64(v))
		nulls(2, 3)
		rb.Field(4).(*array.Int32Builder).Append(int32(g))
		nulls(5, 6, 7, 8, 9, 10)
		xb.Append(true)
		xv.AppendValues(paths[v*k:min(n, v+per)*k], nil)
		if err := cw.flush(); err != nil {
			return err
		}
	}
	if err := cw.bw.Flush(); err != nil {
		return &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	return nil
}

// pathRowVars is the variables a path row of k paths holds: 4 MiB of
// values.
func pathRowVars(k int) int { return max(1, (1<<20)/max(1, k)) }

// VecchiaPathVars is the variables of a kept path of a Vecchia model of
// n training rows and c classes (0 or 2: two classes): a latent value per
// row, or with more than two classes the classes' c - 1 contrasts at each
// (the multi-class estimator's coordinates, a kernel shared by the
// classes).
func VecchiaPathVars(n, c int) int {
	if c > 2 {
		return n * (c - 1)
	}
	return n
}

// VecchiaPathRows is the rows WritePaths writes for n x k kept paths
// (none for k = 0): the weights row and the path rows.
func VecchiaPathRows(n, k int) int {
	if k == 0 {
		return 0
	}
	per := pathRowVars(k)
	return 1 + (n+per-1)/per
}

// Close writes the end-of-stream marker.
func (cw *VecchiaCloudWriter) Close() error {
	defer cw.rb.Release()
	if err := cw.iw.Close(); err != nil {
		return &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	if err := cw.bw.Flush(); err != nil {
		return &IOError{Op: "write the Vecchia cloud", Err: err}
	}
	return nil
}

// ReadVecchiaCloud reads a Vecchia cloud, or with shard set a shard of one,
// and checks it: the schema, the rows' kinds (test rows first), the group
// rows' fields and their posteriors' length (gpc:tests), gpc:rows and the
// end of the stream. Errors are *DataError or *IOError.
func ReadVecchiaCloud(r io.Reader, name string, shard bool, mem memory.Allocator) (c *VecchiaCloud, err error) {
	return ReadVecchiaCloudHead(r, name, shard, mem, nil)
}

// ReadVecchiaCloudHead is ReadVecchiaCloud that first calls head, if not
// nil, with the schema's metadata and the test rows it announces
// (gpc:tests), before any record batch is read: a reader that cannot use
// the cloud refuses it there (gpc-predict, a cloud without test rows),
// while gpc-train still estimates, and head's error is returned as it is.
func ReadVecchiaCloudHead(r io.Reader, name string, shard bool, mem memory.Allocator, head func(meta map[string]string, tests int) error) (c *VecchiaCloud, err error) {
	return readVecchiaCloud(r, name, shard, false, mem, head)
}

// ReadVecchiaCloudPaths is ReadVecchiaCloudHead of an unsharded cloud
// that also reads its kept paths (VecchiaGroup.Paths and PathW) where it
// keeps them: N x K float32 values in memory.
func ReadVecchiaCloudPaths(r io.Reader, name string, mem memory.Allocator, head func(meta map[string]string, tests int) error) (c *VecchiaCloud, err error) {
	return readVecchiaCloud(r, name, false, true, mem, head)
}

// ReadVecchiaShardPaths is ReadVecchiaCloudPaths of a Vecchia cloud
// shard (gpc-merge): its groups' kept paths, where it keeps them, in
// memory.
func ReadVecchiaShardPaths(r io.Reader, name string, mem memory.Allocator) (c *VecchiaCloud, err error) {
	return readVecchiaCloud(r, name, true, true, mem, nil)
}

func readVecchiaCloud(r io.Reader, name string, shard, paths bool, mem memory.Allocator, head func(meta map[string]string, tests int) error) (c *VecchiaCloud, err error) {
	in, src, schema, err := openArrow(r, name, "a Vecchia cloud is gpc-train's output", mem)
	if err != nil {
		return nil, err
	}
	defer recoverArrow(name, &err)
	defer src.release()
	meta := schema.Metadata().ToMap()
	want := SchemaVecchiaCloud
	if shard {
		want = SchemaVecchiaCloudShard
	}
	if v := meta[KeySchema]; v != want {
		return nil, dataErrorf(name, "schema %q where %s was expected", v, want)
	}
	var protoMeta map[string]string
	if v, ok := meta[KeyKeptPaths]; ok {
		protoMeta = map[string]string{KeyKeptPaths: v}
	}
	proto := VecchiaCloudSchema(protoMeta)
	if !schema.Equal(proto) {
		return nil, dataErrorf(name, "its columns are not the Vecchia cloud's (%s)", proto)
	}
	tests, err := strconv.Atoi(meta[KeyTests])
	if err != nil || tests < 0 {
		return nil, dataErrorf(name, "metadata %s = %q is not a count", KeyTests, meta[KeyTests])
	}
	c = &VecchiaCloud{Meta: meta, paths: paths, next: -2}
	if protoMeta != nil {
		if c.Kept, c.N, err = VecchiaKeptPaths(meta, name); err != nil {
			return nil, err
		}
	}
	if head != nil {
		if err := head(meta, tests); err != nil {
			return nil, err
		}
	}
	if err := in.readBatches(src, meta, func(rec arrow.Record, batch, rows int) error {
		return c.addBatch(rec, name, batch, rows, tests)
	}); err != nil {
		return nil, err
	}
	if len(c.Row) != tests {
		return nil, dataErrorf(name, "%d test rows where the metadata announces %d", len(c.Row), tests)
	}
	if c.Kept != nil {
		if c.next != -2 {
			return nil, dataErrorf(name, "group %d's kept paths end before their %d variables", len(c.Groups)-1, c.N)
		}
		if len(c.Groups) != len(c.Kept) {
			return nil, dataErrorf(name, "%d group rows where %s lists %d groups", len(c.Groups), KeyKeptPaths, len(c.Kept))
		}
	}
	return c, nil
}

// VecchiaKeptPaths reads a Vecchia cloud's (or shard's) gpc:kept_paths
// (a count per group) and the paths' length: gpc:n, times C - 1 for a
// multi-class cloud's C classes (gpc:classes: the classes' contrasts at
// each point, VecchiaPathVars). Errors are *DataError naming name.
func VecchiaKeptPaths(meta map[string]string, name string) ([]int, int, error) {
	n, err := strconv.Atoi(meta[KeyN])
	if err != nil || n < 1 {
		return nil, 0, dataErrorf(name, "metadata %s = %q is not a count of training rows", KeyN, meta[KeyN])
	}
	if v, ok := meta[KeyClasses]; ok {
		names, err := SplitClasses(v)
		if err != nil {
			return nil, 0, dataErrorf(name, "%v", err)
		}
		n = VecchiaPathVars(n, len(names))
	}
	var kept []int
	for _, f := range strings.Split(meta[KeyKeptPaths], ",") {
		k, err := strconv.Atoi(f)
		if err != nil || k < 0 {
			return nil, 0, dataErrorf(name, "metadata %s = %q is not a list of counts", KeyKeptPaths, meta[KeyKeptPaths])
		}
		kept = append(kept, k)
	}
	return kept, n, nil
}

func (c *VecchiaCloud) addBatch(rec arrow.Record, name string, batch, base, tests int) error {
	kind := rec.Column(0).(*array.String)
	for i := range int(rec.NumRows()) {
		where := fmt.Sprintf("batch %d, row %d", batch, base+i)
		notNull := func(cols ...int) error {
			for _, k := range cols {
				if rec.Column(k).IsNull(i) {
					return dataErrorf(name, "%s: %s is null", where, rec.Schema().Field(k).Name)
				}
			}
			return nil
		}
		switch kind.Value(i) {
		case "test":
			if len(c.Groups) > 0 {
				return dataErrorf(name, "%s: a test row after the group rows", where)
			}
			if err := notNull(1); err != nil {
				return err
			}
			c.Row = append(c.Row, int(rec.Column(1).(*array.Int64).Value(i)))
			if !rec.Column(2).IsNull(i) {
				if c.ID == nil {
					c.ID = make([]string, len(c.Row)-1, room(tests, len(c.Row)))
				}
				c.ID = append(c.ID, rec.Column(2).(*array.String).Value(i))
			} else if c.ID != nil {
				c.ID = append(c.ID, "")
			}
			y := math.NaN()
			if !rec.Column(3).IsNull(i) {
				y = rec.Column(3).(*array.Float64).Value(i)
			}
			c.Y = append(c.Y, y)
		case "group":
			if err := notNull(4, 5, 6, 7, 8, 9, 10); err != nil {
				return err
			}
			if c.Kept != nil {
				if err := c.startPaths(name, where); err != nil {
					return err
				}
			}
			g := VecchiaGroup{Group: int(rec.Column(4).(*array.Int32).Value(i))}
			g.Out = core.GroupResult{
				LogZ:      rec.Column(5).(*array.Float64).Value(i),
				MinESS:    rec.Column(6).(*array.Float64).Value(i),
				Resamples: int(rec.Column(7).(*array.Int64).Value(i)),
				Ancestors: int(rec.Column(8).(*array.Int64).Value(i)),
				DeadAt:    int(rec.Column(9).(*array.Int64).Value(i)),
			}
			l := rec.Column(10).(*array.List)
			a, b := l.ValueOffsets(i)
			if int(b-a) != tests {
				return dataErrorf(name, "%s: group %d has %d test posteriors where the metadata announces %d test rows", where, g.Group, b-a, tests)
			}
			vals := l.ListValues().(*array.Float64)
			if vals.NullN() > 0 {
				return dataErrorf(name, "%s: null test posteriors", where)
			}
			g.P = append([]float64(nil), vals.Float64Values()[a:b]...)
			for _, p := range g.P {
				if !(p >= 0 && p <= 1) && !(math.IsNaN(p) && g.Out.DeadAt >= 0) {
					return dataErrorf(name, "%s: group %d: test posterior %v is not a probability", where, g.Group, p)
				}
			}
			if math.IsNaN(g.Out.LogZ) || math.IsInf(g.Out.LogZ, 1) {
				return dataErrorf(name, "%s: group %d: log_p %v", where, g.Group, g.Out.LogZ)
			}
			c.Groups = append(c.Groups, g)
		case "weights", "path":
			if err := c.addPathRow(rec, i, kind.Value(i) == "path", name, where); err != nil {
				return err
			}
		default:
			return dataErrorf(name, "%s: kind %q is not test or group", where, kind.Value(i))
		}
	}
	return nil
}

// startPaths begins a group's row in a cloud that keeps paths: the group
// before it has all its path rows, and this one's come next if it keeps
// any.
func (c *VecchiaCloud) startPaths(name, where string) error {
	g := len(c.Groups)
	if c.next != -2 {
		return dataErrorf(name, "%s: a group row where group %d's kept paths go on", where, g-1)
	}
	if g >= len(c.Kept) {
		return dataErrorf(name, "%s: group row %d where %s lists %d groups", where, g, KeyKeptPaths, len(c.Kept))
	}
	if c.Kept[g] > 0 {
		c.next = -1 // its weights row
	}
	return nil
}

// addPathRow reads a weights row (path false) or a path row of the last
// group: in order, of the lengths gpc:kept_paths says, the weights
// probabilities and the paths finite.
func (c *VecchiaCloud) addPathRow(rec arrow.Record, i int, path bool, name, where string) error {
	g := len(c.Groups) - 1
	switch {
	case c.Kept == nil:
		return dataErrorf(name, "%s: a kept path's row in a cloud without %s", where, KeyKeptPaths)
	case g < 0 || c.next == -2 || (c.next == -1) == path:
		return dataErrorf(name, "%s: a kept path's row out of place (after each group's row: its weights, then its paths' rows)", where)
	case rec.Column(4).IsNull(i) || int(rec.Column(4).(*array.Int32).Value(i)) != c.Groups[g].Group:
		return dataErrorf(name, "%s: a kept path's row not of group %d, the last group row's", where, c.Groups[g].Group)
	}
	k := c.Kept[g]
	grp := &c.Groups[g]
	if !path {
		if rec.Column(10).IsNull(i) {
			return dataErrorf(name, "%s: the weights row's %s is null", where, ColP)
		}
		l := rec.Column(10).(*array.List)
		a, b := l.ValueOffsets(i)
		vals := l.ListValues().(*array.Float64)
		if int(b-a) != k || vals.NullN() > 0 {
			return dataErrorf(name, "%s: group %d has %d path weights where %s announces %d", where, grp.Group, b-a, KeyKeptPaths, k)
		}
		w := vals.Float64Values()[a:b]
		for _, v := range w {
			if !(v >= 0 && v <= 1) {
				return dataErrorf(name, "%s: group %d: path weight %v is not a probability", where, grp.Group, v)
			}
		}
		if c.paths {
			grp.PathW = append([]float64(nil), w...)
		}
		c.next = 0
		return nil
	}
	if rec.Column(1).IsNull(i) || int(rec.Column(1).(*array.Int64).Value(i)) != c.next {
		return dataErrorf(name, "%s: group %d's path row does not start at variable %d, the next", where, grp.Group, c.next)
	}
	if rec.Column(11).IsNull(i) {
		return dataErrorf(name, "%s: the path row's %s is null", where, ColX)
	}
	l := rec.Column(11).(*array.List)
	a, b := l.ValueOffsets(i)
	vals := l.ListValues().(*array.Float32)
	if v := int(b - a); v == 0 || v%k != 0 || c.next+v/k > c.N || vals.NullN() > 0 {
		return dataErrorf(name, "%s: group %d's path row has %d values: not a whole number of variables (%d values each, %s) up to a path's %d", where, grp.Group, b-a, k, KeyKeptPaths, c.N)
	}
	x := vals.Float32Values()[a:b]
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return dataErrorf(name, "%s: group %d: a path's value %v is not finite", where, grp.Group, v)
		}
	}
	if c.paths {
		// The rows come in order: room for the group's N x K values
		// (gpc:n, gpc:kept_paths), at most reserveAhead times those read.
		if need := len(grp.Paths) + len(x); need > cap(grp.Paths) {
			grp.Paths = regrow(grp.Paths, room(c.N*k, need))
		}
		grp.Paths = append(grp.Paths, x...)
	}
	c.next += len(x) / k
	if c.next == c.N {
		c.next = -2
	}
	return nil
}

// writeSchemaNow writes the IPC message of schema to bw and flushes it, so
// that a reader has the schema at once, and returns the writer for an
// ipc.Writer of the same schema to write through. Arrow's writer writes
// the schema with its first record batch (or at Close), and has no call
// that writes it alone: the message it writes first is checked against
// the one already written, byte for byte, and dropped, so that the stream
// is exactly what the ipc.Writer alone would write.
func writeSchemaNow(bw *bufio.Writer, schema *arrow.Schema, mem memory.Allocator) (io.Writer, error) {
	var b bytes.Buffer
	if err := ipc.NewWriter(&b, ipc.WithSchema(schema), ipc.WithAllocator(mem)).Close(); err != nil {
		return nil, err
	}
	eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0} // Arrow's end-of-stream marker, which Close wrote after it
	msg, ok := bytes.CutSuffix(b.Bytes(), eos)
	if !ok {
		panic("format: writeSchemaNow: Arrow's writer did not end the stream with its end-of-stream marker")
	}
	if _, err := bw.Write(msg); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return &skipPrefix{w: bw, prefix: msg}, nil
}

// skipPrefix passes writes on to w once it has dropped prefix from their
// start, which they must begin with.
type skipPrefix struct {
	w      io.Writer
	prefix []byte
}

func (s *skipPrefix) Write(p []byte) (int, error) {
	n := min(len(p), len(s.prefix))
	if !bytes.Equal(p[:n], s.prefix[:n]) {
		panic("format: the schema message Arrow's writer wrote is not the one written ahead of it")
	}
	s.prefix = s.prefix[n:]
	if n == len(p) {
		return n, nil
	}
	m, err := s.w.Write(p[n:])
	return n + m, err
}
