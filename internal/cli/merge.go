package cli

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/format"
)

const mergeDescription = `Merge the partial results of a sharded run (--shard I/K) into exactly what the unsharded run writes.

A run too long for one machine is split into K shards, each a fixed, seed-determined range of the estimator's particle groups, run anywhere (a Slurm job array: --shard slurm); gpc-merge reads the K shard streams and writes the output of the same run unsharded: byte for byte, on any CPU (every kernel path computes the same bits; a build with -tags openblas merges only its own shards, and agrees with the others statistically). gpc-orthant, gpc-train, gpc-predict (by test rows) and gpc-tune (its grid stage) shard (docs/scale-out.md); a merged cloud goes to gpc-predict as any cloud does. The Vecchia path's shards merge alike (docs/vecchia.md, Scale-out): gpc-orthant's and gpc-train's on a Vecchia model (gpc-kernel --vecchia m), whose cloud shards (gpc.vecchia-cloud-shard/1) hold their groups' estimates and weighted test posteriors, and their kept particle paths where gpc-train keeps them (--keep; by default without test rows: each shard is checked whole before any output, then its paths are read and written one shard at a time); each shard prepares the model itself or reads its preparation from a plan (gpc-train --prepare-only), and the merged Vecchia cloud is the unsharded one, byte for byte.

The inputs are the K shard files, or directories whose files (all of them, in name order, hidden ones skipped) are the shards. gpc-merge refuses, with one line naming the shard (exit 65): a missing shard, a duplicate, a shard of another run (another input, flags, seed, K or compute path: the shards' gpc:shard_fingerprint differ), a stream that is not a shard, and a truncated shard.

With --check it merges nothing: it checks each file on its own and writes one row per file (its shard I/K, fingerprint, whether it is a complete shard, and why not), which tells what a failed run left that can be kept; a tool run with --shard I/K --fingerprint prints the fingerprint of its run's shards.

` + examplesHelp + `
  gpc-merge shard-0.arrows shard-1.arrows   # after gpc-orthant --help's examples: = gpc-orthant examples/onefactor-100.csv
  gpc-merge --check shard-0.arrows shard-1.arrows   # which files are complete shards, of which run

` + exitHelp

// mergeCmd is gpc-merge's command line.
type mergeCmd struct {
	Inputs      []string `arg:"" name:"shard" help:"The shard streams: files, or directories of them."`
	Check       bool     `help:"Check each file on its own, as the merge does, and merge nothing: write one row per file (shard: I/K; fingerprint; complete: yes or no; of: the merged stream's schema; problem: why it is not a complete shard; file), and exit 0. A driver reads it to reuse the complete shards of a failed run (examples/slurm/run.sh)."`
	commonFlags `embed:""`
}

// Merge runs gpc-merge.
func Merge(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-merge", mergeDescription, &mergeCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *mergeCmd) Validate() error { return c.validateCommon() }

// shardIn is one shard stream as read.
type shardIn struct {
	name   string
	meta   map[string]string
	t      *format.Table // a table shard's rows
	i, k   int
	lo, hi int
}

func (c *mergeCmd) run(e *env) error {
	names, err := shardFiles(c.Inputs)
	if err != nil {
		return err
	}
	mem := format.NewAllocator()
	if c.Check {
		return c.checkFiles(e, names, mem)
	}
	var shards []*shardIn
	for _, name := range names {
		s, err := readShard(name, mem)
		if err != nil {
			return err
		}
		shards = append(shards, s)
	}
	shards, err = checkShards(shards)
	if err != nil {
		return err
	}
	switch shards[0].meta[format.KeySchema] {
	case format.SchemaOrthantShard:
		return c.mergeOrthant(e, shards, mem)
	case format.SchemaCloudShard:
		return c.mergeCloud(e, shards, mem)
	case format.SchemaTuneShard:
		return c.mergeTune(e, shards, mem)
	case format.SchemaPosteriorsShard:
		return c.mergePosteriors(e, shards, mem)
	case format.SchemaVecchiaCloudShard:
		return c.mergeVecchiaCloud(e, shards, mem)
	}
	return &dataError{fmt.Sprintf("%s: gpc:schema %q is not a shard stream gpc-merge reads", shards[0].name, shards[0].meta[format.KeySchema])}
}

// shardFiles expands the inputs: a directory stands for its files (not
// hidden), in name order.
func shardFiles(inputs []string) ([]string, error) {
	var names []string
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return nil, &format.IOError{Op: "open shard", Err: err}
		}
		if !st.IsDir() {
			names = append(names, in)
			continue
		}
		ents, err := os.ReadDir(in)
		if err != nil {
			return nil, &format.IOError{Op: "read directory", Err: err}
		}
		n := len(names)
		for _, d := range ents {
			if !strings.HasPrefix(d.Name(), ".") && d.Type().IsRegular() {
				names = append(names, filepath.Join(in, d.Name()))
			}
		}
		if len(names) == n {
			return nil, &dataError{fmt.Sprintf("%s: no shard files in the directory", in)}
		}
	}
	return names, nil
}

// readShard reads one shard stream's metadata and gpc:shard keys, and a
// table shard's rows. On an error after the metadata was read, the
// shardIn it returns with it holds the metadata (what --check reports).
func readShard(name string, mem format.Allocator) (*shardIn, error) {
	open := func() (*os.File, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, &format.IOError{Op: "open shard", Err: err}
		}
		return f, nil
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	meta, err := format.StreamMeta(f, name, mem)
	f.Close()
	if err != nil {
		return nil, err
	}
	s := &shardIn{name: name, meta: meta}
	bad := func(key string) (*shardIn, error) {
		return s, &dataError{fmt.Sprintf("%s: not a shard stream (gpc:schema %q, %s %q): gpc-merge reads what a tool's --shard writes", name, meta[format.KeySchema], key, meta[key])}
	}
	is, ks, ok := strings.Cut(meta[format.KeyShard], "/")
	var e1, e2 error
	s.i, e1 = strconv.Atoi(is)
	s.k, e2 = strconv.Atoi(ks)
	if !ok || e1 != nil || e2 != nil || s.k < 1 || s.i < 0 || s.i >= s.k {
		return bad(format.KeyShard)
	}
	los, his, ok := strings.Cut(meta[format.KeyShardRange], "-")
	s.lo, e1 = strconv.Atoi(los)
	s.hi, e2 = strconv.Atoi(his)
	if !ok || e1 != nil || e2 != nil || s.lo < 0 || s.hi <= s.lo {
		return bad(format.KeyShardRange)
	}
	if meta[format.KeyShardFingerprint] == "" {
		return bad(format.KeyShardFingerprint)
	}
	if meta[format.KeySchema] == format.SchemaCloudShard || meta[format.KeySchema] == format.SchemaVecchiaCloudShard {
		return s, nil // checked whole by mergeCloud or mergeVecchiaCloud
	}
	if f, err = open(); err != nil {
		return s, err
	}
	defer f.Close()
	if s.t, err = format.ReadTable(f, name, mem); err != nil {
		return s, err
	}
	return s, nil
}

// checkFiles is --check: each file read and checked whole on its own (a
// table shard's rows, a cloud shard's groups), one row per file.
func (c *mergeCmd) checkFiles(e *env, names []string, mem format.Allocator) error {
	n := len(names)
	col := func(name string) format.Column { return format.Column{Name: name, Str: make([]string, n)} }
	t := &format.Table{
		Meta: map[string]string{format.KeySchema: "gpc.shard-check/1", format.KeyTool: "gpc-merge", format.KeyVersion: Version},
		Cols: []format.Column{col("shard"), col("fingerprint"), col("complete"), col("of"), col("problem"), col("file")},
	}
	for j, name := range names {
		s, err := readShard(name, mem)
		if err == nil {
			err = checkWhole(s, mem)
		}
		complete := "yes"
		if err != nil {
			complete = "no"
			t.Cols[4].Str[j] = oneLine(err.Error())
		}
		if s != nil {
			t.Cols[0].Str[j] = s.meta[format.KeyShard]
			t.Cols[1].Str[j] = s.meta[format.KeyShardFingerprint]
			t.Cols[3].Str[j] = s.meta[format.KeyShardOf]
		}
		t.Cols[2].Str[j] = complete
		t.Cols[5].Str[j] = name
	}
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// checkWhole checks what of a shard can be checked without the others: a
// table shard's rows against its range, a cloud shard's groups whole. A
// shard read as a stream (not a table) of a kind it does not know is not
// taken for complete.
func checkWhole(s *shardIn, mem format.Allocator) error {
	if s.meta[format.KeySchema] == format.SchemaVecchiaCloudShard {
		_, err := readVecchiaShard(s, false, mem)
		return err
	}
	if s.meta[format.KeySchema] != format.SchemaCloudShard {
		if s.t == nil {
			return &dataError{fmt.Sprintf("%s: gpc-merge --check cannot check a %s shard whole", s.name, s.meta[format.KeySchema])}
		}
		if s.t.Rows() != s.hi-s.lo {
			return &dataError{fmt.Sprintf("%s: shard %d/%d has %d rows for %d-%d", s.name, s.i, s.k, s.t.Rows(), s.lo, s.hi)}
		}
		return nil
	}
	sizes, err := cloudGroupSizes(s)
	if err != nil {
		return err
	}
	if s.hi > len(sizes) {
		return &dataError{fmt.Sprintf("%s: shard %d/%d covers groups %d-%d of %d", s.name, s.i, s.k, s.lo, s.hi, len(sizes))}
	}
	_, err = checkCloudFile(s, sizes, mem)
	return err
}

// cloudGroupSizes is a cloud shard's gpc:group_sizes.
func cloudGroupSizes(s *shardIn) ([]int, error) {
	sizes, err := metaInts(s.meta[format.KeyGroupSizes])
	if err != nil || len(sizes) == 0 {
		return nil, &dataError{fmt.Sprintf("%s: metadata %s = %q does not give the sizes of the shards' groups", s.name, format.KeyGroupSizes, s.meta[format.KeyGroupSizes])}
	}
	return sizes, nil
}

// checkCloudFile reads the cloud shard s whole and checks it
// (format.CheckCloudShard).
func checkCloudFile(s *shardIn, sizes []int, mem format.Allocator) (*format.CloudShardInfo, error) {
	f, err := os.Open(s.name)
	if err != nil {
		return nil, &format.IOError{Op: "open shard", Err: err}
	}
	defer f.Close()
	return format.CheckCloudShard(f, s.name, s.lo, s.hi, sizes, mem)
}

// unshardedMeta is a shard's metadata without the keys that differ
// between the shards of one run (a Vecchia cloud shard's kept paths are
// its groups'): the unsharded output's, but for its schema, its rows and
// its kept paths.
func unshardedMeta(meta map[string]string) map[string]string {
	m := maps.Clone(meta)
	maps.DeleteFunc(m, func(k, _ string) bool {
		return format.IsShardKey(k) || k == format.KeyRows || k == format.KeyKeptPaths
	})
	return m
}

// checkShards checks that the shards are the K shards of one run, once
// each, and returns them in shard order.
func checkShards(shards []*shardIn) ([]*shardIn, error) {
	first := shards[0]
	fp := first.meta[format.KeyShardFingerprint]
	common := unshardedMeta(first.meta)
	common[format.KeyShardOf] = first.meta[format.KeyShardOf]
	byIndex := make([]*shardIn, first.k)
	for _, s := range shards {
		if s.meta[format.KeyShardFingerprint] != fp || s.k != first.k {
			return nil, &dataError{fmt.Sprintf("%s: shard %d/%d of another run than %s's shard %d/%d (another input, flags, seed, K or compute path: gpc:shard_fingerprint %s, not %s)", s.name, s.i, s.k, first.name, first.i, first.k, s.meta[format.KeyShardFingerprint], fp)}
		}
		m := unshardedMeta(s.meta)
		m[format.KeyShardOf] = s.meta[format.KeyShardOf]
		if !maps.Equal(m, common) {
			for _, key := range slices.Sorted(maps.Keys(common)) {
				if v, ok := m[key]; !ok || v != common[key] {
					return nil, &dataError{fmt.Sprintf("%s: shard %d/%d of another run than %s's shard %d/%d: metadata %s differs", s.name, s.i, s.k, first.name, first.i, first.k, key)}
				}
			}
			return nil, &dataError{fmt.Sprintf("%s: shard %d/%d of another run than %s's shard %d/%d: its metadata has keys the other's has not", s.name, s.i, s.k, first.name, first.i, first.k)}
		}
		if d := byIndex[s.i]; d != nil {
			return nil, &dataError{fmt.Sprintf("%s: shard %d/%d again (%s is shard %d/%d): each shard once", s.name, s.i, s.k, d.name, d.i, d.k)}
		}
		byIndex[s.i] = s
	}
	var missing []string
	for i, s := range byIndex {
		if s == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.k))
		}
	}
	if len(missing) > 0 {
		return nil, &dataError{fmt.Sprintf("shard %s missing: %d of %d shards read (%s)", strings.Join(missing, ", "), len(shards), first.k, strings.Join(shardNames(shards), ", "))}
	}
	for i, s := range byIndex {
		if i > 0 && s.lo != byIndex[i-1].hi || i == 0 && s.lo != 0 {
			return nil, &dataError{fmt.Sprintf("%s: shard %d/%d covers groups %d-%d, which do not follow shard %d's", s.name, s.i, s.k, s.lo, s.hi, i-1)}
		}
		if s.t != nil && s.t.Rows() != s.hi-s.lo {
			return nil, &dataError{fmt.Sprintf("%s: shard %d/%d has %d rows for groups %d-%d", s.name, s.i, s.k, s.t.Rows(), s.lo, s.hi)}
		}
	}
	return byIndex, nil
}

func shardNames(shards []*shardIn) []string {
	var ns []string
	for _, s := range shards {
		ns = append(ns, s.name)
	}
	return ns
}

// mergeOrthant merges gpc-orthant's shards into its one-row result.
func (c *mergeCmd) mergeOrthant(e *env, shards []*shardIn, mem format.Allocator) error {
	meta := shards[0].meta
	num := func(key string) (int, error) {
		n, err := strconv.Atoi(meta[key])
		if err != nil {
			return 0, &dataError{fmt.Sprintf("%s: metadata %s = %q is not a number", shards[0].name, key, meta[key])}
		}
		return n, nil
	}
	var vals [5]int
	for j, key := range []string{format.KeyShardN, format.KeyShardSamples, format.KeyShardGroups, format.KeyShardSolve, format.KeySeed} {
		v, err := num(key)
		if err != nil {
			return err
		}
		vals[j] = v
	}
	n, samples, groups, solve, seed := vals[0], vals[1], vals[2], vals[3], vals[4]
	var outs []core.GroupResult
	for _, s := range shards {
		cols := map[string]*format.Column{}
		for _, name := range []string{"group", "log_z", "min_ess", "resamples", "ancestors", "dead_at"} {
			col := s.t.Column(name)
			if col == nil || (name == "log_z" || name == "min_ess") != (col.Float != nil) {
				return &dataError{fmt.Sprintf("%s: no column %q of the right type: not a gpc-orthant shard", s.name, name)}
			}
			cols[name] = col
		}
		for r := range s.t.Rows() {
			if cols["group"].Int[r] != int64(s.lo+r) {
				return &dataError{fmt.Sprintf("%s: row %d is group %d, not %d", s.name, r, cols["group"].Int[r], s.lo+r)}
			}
			outs = append(outs, core.GroupResult{LogZ: cols["log_z"].Float[r], MinESS: cols["min_ess"].Float[r],
				Resamples: int(cols["resamples"].Int[r]), Ancestors: int(cols["ancestors"].Int[r]), DeadAt: int(cols["dead_at"].Int[r])})
		}
	}
	if len(outs) != groups {
		return &dataError{fmt.Sprintf("%s: the shards hold %d groups, and the metadata announces %d", shards[len(shards)-1].name, len(outs), groups)}
	}
	res := core.Summarize(samples, outs)
	if v, ok := meta[format.KeyShardESS]; ok {
		// Shards of an older gpc lack it: their merge keeps Trust's ESS
		// check whatever the threshold.
		frac, err := strconv.ParseFloat(v, 64)
		if err != nil || !(frac > 0 && frac <= 1) {
			return &dataError{fmt.Sprintf("%s: metadata %s = %q is not a resampling threshold in (0, 1]", shards[0].name, format.KeyShardESS, v)}
		}
		res.SetESSThreshold(frac)
	}
	t := orthantRow(&res, n, meta[format.KeyMethod], meta[format.KeyShardOrder], uint64(seed), solve)
	t.Meta = unshardedMeta(meta)
	t.Meta[format.KeySchema] = meta[format.KeyShardOf]
	noteEstimate(e, &res)
	if ok, why := res.Trust(); !ok {
		e.rep.warnf("the standard error is not reliable: %s", why)
	}
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// mergeCloud checks gpc-train's cloud shards whole, then splices their
// record batches into the unsharded cloud (format.MergeCloudShards).
func (c *mergeCmd) mergeCloud(e *env, shards []*shardIn, mem format.Allocator) error {
	if f := c.outputFormat(e.stdout); f != format.Arrow {
		return usagef("gpc-train's shards merge into a cloud, an Arrow stream: not --format %s (redirect standard output, or pipe it to gpc-predict)", c.Format)
	}
	meta := shards[0].meta
	sizes, err := cloudGroupSizes(shards[0])
	if err == nil && shards[len(shards)-1].hi != len(sizes) {
		err = &dataError{fmt.Sprintf("%s: metadata %s = %q does not give the sizes of the shards' groups", shards[0].name, format.KeyGroupSizes, meta[format.KeyGroupSizes])}
	}
	if err != nil {
		return err
	}
	infos := make([]*format.CloudShardInfo, len(shards))
	for i, s := range shards {
		if infos[i], err = checkCloudFile(s, sizes, mem); err != nil {
			return err
		}
		if infos[i].Rows != infos[0].Rows {
			return &dataError{fmt.Sprintf("%s: shard %d/%d of another run than %s's shard %d/%d: its train or test rows differ", s.name, s.i, s.k, shards[0].name, shards[0].i, shards[0].k)}
		}
	}
	out := unshardedMeta(meta)
	out[format.KeySchema] = meta[format.KeyShardOf]
	if v, ok := meta[format.KeyShardRowsOf]; ok {
		out[format.KeyRows] = v
	}
	var readers []io.Reader
	for _, s := range shards {
		f, err := os.Open(s.name)
		if err != nil {
			return &format.IOError{Op: "open shard", Err: err}
		}
		defer f.Close()
		readers = append(readers, f)
	}
	return format.MergeCloudShards(e.stdout, out, readers, infos, mem)
}

// metaInts parses a comma-separated list of integers.
func metaInts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// mergeTune joins gpc-tune's grid shards into the grid's table, with the
// standard errors of the differences between neighbouring points
// (fit.DiffSE), which may lie in different shards, computed from the
// points' group estimates.
func (c *mergeCmd) mergeTune(e *env, shards []*shardIn, mem format.Allocator) error {
	meta := shards[0].meta
	sizes, err := metaInts(meta[format.KeyShardGrid])
	if err != nil {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q is not the grid's axis sizes", shards[0].name, format.KeyShardGrid, meta[format.KeyShardGrid])}
	}
	// The rows, in order, without the group estimates' column.
	t := &format.Table{Cols: slices.Clone(shards[0].t.Cols[:len(shards[0].t.Cols)-1])}
	for j := range t.Cols {
		t.Cols[j].Float, t.Cols[j].Int, t.Cols[j].Str = nil, nil, nil
	}
	var groups []string
	for _, s := range shards {
		if len(s.t.Cols) != len(t.Cols)+1 || s.t.Cols[len(t.Cols)].Name != "group_log_p" {
			return &dataError{fmt.Sprintf("%s: the columns are not a gpc-tune shard's", s.name)}
		}
		for j := range t.Cols {
			t.Cols[j].Float = append(t.Cols[j].Float, s.t.Cols[j].Float...)
			t.Cols[j].Int = append(t.Cols[j].Int, s.t.Cols[j].Int...)
			t.Cols[j].Str = append(t.Cols[j].Str, s.t.Cols[j].Str...)
		}
		groups = append(groups, s.t.Cols[len(t.Cols)].Str...)
	}
	col := func(name string) *format.Column {
		if c := t.Column(name); c != nil {
			return c
		}
		return &format.Column{}
	}
	logML, se, samples := col("log_ml"), col("se_log_ml"), col("samples")
	n := t.Rows()
	if logML.Float == nil || se.Float == nil || samples.Int == nil || len(groups) != n {
		return &dataError{fmt.Sprintf("%s: the columns are not a gpc-tune shard's", shards[0].name)}
	}
	results := make([]*core.Result, n)
	for i, gs := range groups {
		if gs == "" {
			continue
		}
		g, err := metaFloats(gs)
		if err != nil {
			return &dataError{fmt.Sprintf("grid point %d: group_log_p %q: %v", i, gs, err)}
		}
		results[i] = &core.Result{LogP: logML.Float[i], SE: se.Float[i], Samples: int(samples.Int[i]), Groups: len(g), GroupLogP: g}
	}
	if slices.IndexFunc(results, func(r *core.Result) bool { return r != nil && !math.IsInf(r.LogP, -1) }) < 0 {
		return &dataError{"no grid point gave an estimate"}
	}
	// se_diff_<axis>: the columns after se_log_ml named so, one per axis
	// in order (format.TuneTable).
	var sed []*format.Column
	for j := range t.Cols {
		if strings.HasPrefix(t.Cols[j].Name, "se_diff_") {
			sed = append(sed, &t.Cols[j])
		}
	}
	if len(sed) != len(sizes) {
		return &dataError{fmt.Sprintf("%s: %d se_diff columns for a grid of %d axes", shards[0].name, len(sed), len(sizes))}
	}
	total, stride := 1, make([]int, len(sizes))
	for j := len(sizes) - 1; j >= 0; j-- {
		stride[j] = total
		total *= sizes[j]
	}
	if total != n {
		return &dataError{fmt.Sprintf("the shards hold %d grid points, and the grid has %d", n, total)}
	}
	for i := range n {
		for j := range sizes {
			sed[j].Float[i] = math.NaN()
			idx := i / stride[j] % sizes[j]
			if nb := i + stride[j]; idx+1 < sizes[j] && results[i] != nil && results[nb] != nil {
				if results[i].Samples != results[nb].Samples || results[i].Groups != results[nb].Groups {
					return &dataError{fmt.Sprintf("grid points %d and %d have different particle groups", i, nb)}
				}
				sed[j].Float[i] = fit.DiffSE(results[i], results[nb])
			}
		}
	}
	t.Meta = unshardedMeta(meta)
	t.Meta[format.KeySchema] = meta[format.KeyShardOf]
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// metaFloats parses a comma-separated list of numbers.
func metaFloats(v string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// mergePosteriors joins gpc-predict's shards, ranges of the test rows,
// into the posteriors table, in the unsharded run's record batches.
func (c *mergeCmd) mergePosteriors(e *env, shards []*shardIn, mem format.Allocator) error {
	meta := shards[0].meta
	batch, err := strconv.Atoi(meta[format.KeyShardBatch])
	if err != nil || batch < 1 {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q is not a batch size", shards[0].name, format.KeyShardBatch, meta[format.KeyShardBatch])}
	}
	t := &format.Table{Cols: slices.Clone(shards[0].t.Cols)}
	for j := range t.Cols {
		t.Cols[j].Float, t.Cols[j].Int, t.Cols[j].Str = nil, nil, nil
	}
	for _, s := range shards {
		if len(s.t.Cols) != len(t.Cols) {
			return &dataError{fmt.Sprintf("%s: the columns are not a gpc-predict shard's", s.name)}
		}
		for j := range t.Cols {
			if s.t.Cols[j].Name != t.Cols[j].Name {
				return &dataError{fmt.Sprintf("%s: the columns are not a gpc-predict shard's", s.name)}
			}
			t.Cols[j].Float = append(t.Cols[j].Float, s.t.Cols[j].Float...)
			t.Cols[j].Int = append(t.Cols[j].Int, s.t.Cols[j].Int...)
			t.Cols[j].Str = append(t.Cols[j].Str, s.t.Cols[j].Str...)
		}
	}
	if v := strconv.Itoa(t.Rows()); v != meta[format.KeyShardRowsOf] {
		return &dataError{fmt.Sprintf("the shards hold %s test rows, and the metadata announces %s", v, meta[format.KeyShardRowsOf])}
	}
	t.Meta = unshardedMeta(meta)
	t.Meta[format.KeySchema] = meta[format.KeyShardOf]
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), batch, mem)
}
