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
