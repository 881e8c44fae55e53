package cli

// gpc-tune's shards (--shard I/K): ranges of its grid's points.

import (
	"fmt"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

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
