package cli

// gpc-predict on a Vecchia cloud (gpc.vecchia-cloud/1): its groups'
// weighted test posteriors combined.

import (
	"fmt"
	"math"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// runVecchia writes the posteriors of a Vecchia cloud's test rows
// (gpc-predict): its groups' weighted posteriors combined
// (core.CombinePosteriors), with standard errors from their spread.
func (c *predictCmd) runVecchia(e *env, r interface{ Read([]byte) (int, error) }, name string, mem format.Allocator) error {
	if c.Count != "soft" {
		return usagef("--count %s: %s is a Vecchia cloud, whose groups predicted their test rows by the soft count as they ended (their particles are not kept): drop --count", c.Count, name)
	}
	// A cloud without test rows is refused at its schema (gpc:tests),
	// while gpc-train, which wrote it, still estimates.
	cl, err := format.ReadVecchiaCloudHead(r, name, false, mem, func(_ map[string]string, tests int) error {
		if tests == 0 {
			return c.noTests(name, true)
		}
		return nil
	})
	if err != nil {
		return err
	}
	meta := cl.Meta
	samples, err1 := strconv.Atoi(meta[format.KeySamples])
	groups, err2 := strconv.Atoi(meta[format.KeyGroups])
	if err1 != nil || err2 != nil || groups < 1 || samples < groups {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q and %s = %q are not a particle and a group count", name, format.KeySamples, meta[format.KeySamples], format.KeyGroups, meta[format.KeyGroups])}
	}
	if len(cl.Groups) != groups {
		return &dataError{fmt.Sprintf("%s: %d group rows where the metadata announces %d groups", name, len(cl.Groups), groups)}
	}
	t := len(cl.Row)
	sizes := core.GroupSizes(samples, groups)
	logZ := make([]float64, groups)
	pg := make([]float64, 0, groups*t)
	for g, grp := range cl.Groups {
		if grp.Group != g {
			return &dataError{fmt.Sprintf("%s: group row %d is group %d", name, g, grp.Group)}
		}
		logZ[g] = grp.Out.LogZ
		pg = append(pg, grp.P...)
	}
	for g, grp := range cl.Groups {
		if math.IsInf(grp.Out.LogZ, -1) {
			// A dead group weighs 0; its posteriors (NaN) do not count.
			for j := range t {
				pg[g*t+j] = 0
			}
		}
	}
	post := make([]core.Posterior, t)
	if err := core.CombinePosteriors(post, sizes, logZ, pg); err != nil {
		return &dataError{fmt.Sprintf("%s: %v", name, err)}
	}
	outMeta, pos, neg := c.posteriorsMeta(meta)
	logML, se, _ := core.CombineGroups(logZ, sizes)
	outMeta[format.KeyLogML] = fmtFloat(logML)
	outMeta[format.KeySELogML] = fmtFloat(se)
	outMeta[format.KeyGroupLogP] = format.JoinFloats(logZ)
	names, err := cloudClasses(meta, name)
	if err != nil {
		return err
	}
	if names != nil {
		return c.vecchiaClasses(e, cl, post, names, outMeta, name, mem)
	}
	tests := &format.TestRows{Y: cl.Y, ID: cl.ID}
	lo, hi := 0, t
	si, sk, err := c.shard()
	if err != nil {
		return err
	}
	if sk > 0 {
		if sk > t {
			return usagef("--shard %d/%d: %d shards of %d test rows: at most one shard per row", si, sk, sk, t)
		}
		lo, hi = shardRange(si, sk, t)
		addShardMeta(outMeta, format.SchemaPosteriorsShard, si, sk, lo, hi, "")
		outMeta[format.KeyShardRowsOf] = strconv.Itoa(t)
		outMeta[format.KeyShardBatch] = strconv.Itoa(c.BatchSize)
		// The test rows are the cloud's: their posteriors and labels,
		// and their ids, identify them.
		ids := format.ShardFingerprint(cl.ID...)
		outMeta[format.KeyShardTests] = format.ShardFingerprint(format.Digest(pg, cl.Y), ids)
		outMeta[format.KeyShardFingerprint] = c.predictFingerprint(outMeta, sk)
		if c.Fingerprint {
			return printFingerprint(e, outMeta[format.KeyShardFingerprint])
		}
	}
	proto := posteriorTable(nil, nil, 0, pos, neg)
	proto.Meta = outMeta
	tw := format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), proto, hi-lo, c.BatchSize, mem)
	var sum predictSummary
	for a := lo; a < hi; a += c.BatchSize {
		b := min(hi, a+c.BatchSize)
		batch := vecchiaTestRows(tests, a, b)
		sum.add(batch, post[a:b])
		if err := tw.Write(posteriorTable(batch, post[a:b], a, pos, neg)); err != nil {
			return err
		}
	}
	tw.Note = sum.line(outMeta)
	return tw.Close()
}

// vecchiaTestRows is rows [a, b) of a Vecchia cloud's test rows (ids and
// labels only).
func vecchiaTestRows(t *format.TestRows, a, b int) *format.TestRows {
	s := &format.TestRows{Y: t.Y[a:b]}
	if t.ID != nil {
		s.ID = t.ID[a:b]
	}
	return s
}
