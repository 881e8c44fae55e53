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
		return usagef("--count %s: %s is a Vecchia cloud, whose groups predicted their test rows by the soft count as they ended: drop --count", c.Count, name)
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
	sizes, err := vecchiaGroups(cl, name)
	if err != nil {
		return err
	}
	t := len(cl.Row)
	logZ := make([]float64, len(sizes))
	pg := make([]float64, 0, len(sizes)*t)
	for g, grp := range cl.Groups {
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
	outMeta, pos, neg := c.vecchiaMeta(meta, logZ, sizes)
	names, err := cloudClasses(meta, name)
	if err != nil {
		return err
	}
	if names != nil {
		return c.vecchiaClasses(e, &format.TestRows{Y: cl.Y, ID: cl.ID}, post, names, outMeta, name, mem)
	}
	return c.writeVecchia(e, &format.TestRows{Y: cl.Y, ID: cl.ID}, post, pg, outMeta, pos, neg, mem)
}

// vecchiaGroups checks a Vecchia cloud's group rows against its metadata
// (gpc:samples, gpc:groups: every group, in order) and returns the
// groups' sizes.
func vecchiaGroups(cl *format.VecchiaCloud, name string) ([]int, error) {
	meta := cl.Meta
	samples, err1 := strconv.Atoi(meta[format.KeySamples])
	groups, err2 := strconv.Atoi(meta[format.KeyGroups])
	if err1 != nil || err2 != nil || groups < 1 || samples < groups {
		return nil, &dataError{fmt.Sprintf("%s: metadata %s = %q and %s = %q are not a particle and a group count", name, format.KeySamples, meta[format.KeySamples], format.KeyGroups, meta[format.KeyGroups])}
	}
	if len(cl.Groups) != groups {
		return nil, &dataError{fmt.Sprintf("%s: %d group rows where the metadata announces %d groups", name, len(cl.Groups), groups)}
	}
	for g, grp := range cl.Groups {
		if grp.Group != g {
			return nil, &dataError{fmt.Sprintf("%s: group row %d is group %d", name, g, grp.Group)}
		}
	}
	return core.GroupSizes(samples, groups), nil
}

// vecchiaMeta is the posteriors' metadata from a Vecchia cloud's: its
// estimate of the log marginal likelihood from its groups', and the
// labels of the two classes.
func (c *predictCmd) vecchiaMeta(meta map[string]string, logZ []float64, sizes []int) (outMeta map[string]string, pos, neg string) {
	outMeta, pos, neg = c.posteriorsMeta(meta)
	logML, se, _ := core.CombineGroups(logZ, sizes)
	outMeta[format.KeyLogML] = fmtFloat(logML)
	outMeta[format.KeySELogML] = fmtFloat(se)
	outMeta[format.KeyGroupLogP] = format.JoinFloats(logZ)
	return outMeta, pos, neg
}

// writeVecchia writes the two-class posteriors post of the test rows
// tests (ids and labels), all of them or --shard's; pg (the groups'
// posteriors, group-major) and the rows identify a shard's test rows.
func (c *predictCmd) writeVecchia(e *env, tests *format.TestRows, post []core.Posterior, pg []float64, outMeta map[string]string, pos, neg string, mem format.Allocator) error {
	t := len(post)
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
		ids := format.ShardFingerprint(tests.ID...)
		outMeta[format.KeyShardTests] = format.ShardFingerprint(format.Digest(pg, tests.Y), ids)
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
