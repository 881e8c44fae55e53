package cli

// Sharded runs (--shard I/K, docs/scale-out.md): a tool computes a range
// of its particle groups and writes a shard stream, whose metadata is the
// unsharded output's plus the gpc:shard keys; gpc-merge (merge.go) reads
// the K shards and writes the unsharded output, byte for byte.

import (
	"fmt"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// computePath names the arithmetic a result depends on: every GEMM and
// vector kernel path but the system BLAS's computes the same bits, so
// shards run on different CPUs merge into the same bytes.
func computePath() string {
	if gemm.Path() == "openblas" {
		return "openblas"
	}
	return "exact"
}

// tooManyShards is the error of --shard i/k where there are only n units
// to split (units "particle groups", unit "group"; advice may say how to
// get more).
func tooManyShards(i, k, n int, units, unit, advice string) error {
	return usagef("--shard %d/%d: %d shards of %d %s: at most one shard per %s%s", i, k, k, n, units, unit, advice)
}

// printFingerprint is --fingerprint's output: the run's
// gpc:shard_fingerprint, one line.
func printFingerprint(e *env, fp string) error {
	if _, err := fmt.Fprintln(e.stdout, fp); err != nil {
		return &format.IOError{Op: "write output", Err: err}
	}
	return nil
}

// shardRange is the particle groups of shard i of k among groups: [lo, hi).
func shardRange(i, k, groups int) (lo, hi int) {
	return groups * i / k, groups * (i + 1) / k
}

// estimatorFingerprint is the gpc:shard_fingerprint of an estimate
// sharded k ways: the box, the flags that change the result (the group
// count as planned, which --max-memory may have raised), the seed, K and
// the compute path.
func (c *estimatorFlags) estimatorFingerprint(tool string, box core.Box, plan core.Config, k int) string {
	return format.ShardFingerprint(tool,
		format.Digest(box.Cov, box.Lower, box.Upper, box.Mean, box.Labels),
		fmt.Sprintf("samples=%d groups=%d method=%s order=%s ess=%v jitter=%v seed=%d", plan.Samples, plan.Groups, c.Method, c.Order, c.ESS, c.Jitter, c.Seed),
		"shards="+strconv.Itoa(k), "path="+computePath())
}

// addShardMeta turns the unsharded output's metadata into shard i of k's,
// for groups [lo, hi): schema becomes the merged stream's gpc:shard_of.
func addShardMeta(meta map[string]string, schema string, i, k, lo, hi int, fingerprint string) {
	meta[format.KeyShardOf] = meta[format.KeySchema]
	meta[format.KeySchema] = schema
	meta[format.KeyShard] = fmt.Sprintf("%d/%d", i, k)
	meta[format.KeyShardRange] = fmt.Sprintf("%d-%d", lo, hi)
	meta[format.KeyShardFingerprint] = fingerprint
	meta[format.KeyShardPath] = computePath()
}

// runShard computes shard I of K of gpc-orthant's estimate, the particle
// groups of its range, and writes them as a gpc.orthant-shard/1 stream:
// one row per group with what core.Summarize needs.
func (c *orthantCmd) runShard(e *env, box core.Box, inMeta map[string]string, name string, cfg core.Config, mem format.Allocator) error {
	i, k, err := c.shard()
	if err != nil {
		return err
	}
	if err := checkEstimateMemory(name, box.N, &cfg, candidates(c.Method, c.Order), false); err != nil {
		return err
	}
	f, pilots, err := c.prepare(e, box, name, &cfg, c.Progress)
	if err != nil {
		return err
	}
	plan, err := core.Plan(cfg, f.N)
	if err != nil {
		return err
	}
	if k > plan.Groups {
		return tooManyShards(i, k, plan.Groups, "particle groups", "group", " (raise --groups)")
	}
	fingerprint := c.estimatorFingerprint("gpc-orthant", box, plan, k)
	if c.Fingerprint {
		return printFingerprint(e, fingerprint)
	}
	lo, hi := shardRange(i, k, plan.Groups)
	sizes := core.GroupSizes(plan.Samples, plan.Groups)
	samples := 0
	for _, m := range sizes[lo:hi] {
		samples += m
	}
	e.rep.startProgress(c.Progress, estimateProgress(samples, f.N))
	cfg.Progress = e.rep.add
	planned, outs, err := core.EstimateGroups(e.ctx, f, cfg, lo, hi)
	cfg.Progress = nil
	e.rep.stopProgress()
	if err != nil {
		return err
	}
	if cfg.Groups == 0 && plan.Groups > core.DefaultGroups(cfg.Method, cfg.Samples) {
		e.rep.warnf("the particles were split into %d groups of %d to fit --max-memory (%.3g GB)", plan.Groups, plan.Samples/plan.Groups, float64(cfg.MaxMemory)/1e9)
	}

	// The metadata is the unsharded run's (run in orthant.go).
	meta := orthantTable(&core.Result{}, f, cfg).Meta
	for key, v := range estimatorMeta(f, cfg, pilots, c.Jitter) {
		meta[key] = v
	}
	passMeta(meta, inMeta)
	addShardMeta(meta, format.SchemaOrthantShard, i, k, lo, hi, fingerprint)
	meta[format.KeyShardN] = strconv.Itoa(f.N)
	meta[format.KeyShardSamples] = strconv.Itoa(plan.Samples)
	meta[format.KeyShardGroups] = strconv.Itoa(plan.Groups)
	meta[format.KeyShardOrder] = f.Order.String()
	meta[format.KeyShardSolve] = strconv.Itoa(solveIterations(f, cfg.Method))
	meta[format.KeyShardESS] = strconv.FormatFloat(planned.ESSThreshold, 'g', -1, 64)
	t := groupTable(meta, outs, lo)
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// addTuneShard turns gpc-tune's grid rows of points [lo, hi) into shard i
// of k's table (gpc.tune-shard/1): the rows as the unsharded table has
// them, plus each point's group estimates (group_log_p, comma-separated;
// empty where the estimate failed), from which gpc-merge computes the
// se_diff_<axis> columns across the shards.
func (c *tuneCmd) addTuneShard(t *format.Table, results []*core.Result, train *features, i, k, lo, hi int, sizes []int) {
	groups := format.Column{Name: "group_log_p", Str: make([]string, len(results))}
	for j, r := range results {
		if r != nil {
			groups.Str[j] = format.JoinFloats(r.GroupLogP)
		}
	}
	t.Cols = append(t.Cols, groups)
	addShardMeta(t.Meta, format.SchemaTuneShard, i, k, lo, hi, c.tuneFingerprint(train, k))
	t.Meta[format.KeyShardGrid] = format.JoinInts(sizes)
}

// tuneFingerprint is the gpc:shard_fingerprint of gpc-tune's grid in k
// shards: the training data, the flags that change the grid's estimates,
// the seed, K and the compute path.
func (c *tuneCmd) tuneFingerprint(train *features, k int) string {
	return format.ShardFingerprint("gpc-tune", format.Digest(train.x, train.y),
		fmt.Sprintf("kernel=%s alpha=%q beta=%q bias=%q standardize=%v samples=%d groups=%d method=%s order=%s ess=%v jitter=%v seed=%d",
			c.Kernel, c.Alpha, c.Beta, c.Bias, c.Standardize, c.Samples, c.Groups, c.Method, c.Order, c.ESS, c.Jitter, c.Seed),
		"shards="+strconv.Itoa(k), "path="+computePath())
}

// printTuneFingerprint is gpc-tune's --fingerprint, for a grid of points
// points: nothing is estimated.
func (c *tuneCmd) printTuneFingerprint(e *env, train *features, points int) error {
	i, k, err := c.shard()
	if err != nil {
		return err
	}
	if k > points {
		return tooManyShards(i, k, points, "grid points", "point", "")
	}
	return printFingerprint(e, c.tuneFingerprint(train, k))
}
