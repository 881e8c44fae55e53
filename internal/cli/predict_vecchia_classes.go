package cli

// gpc-predict on a multi-class Vecchia cloud (gpc.vecchia-cloud/1 with
// gpc:classes): its groups' weighted class probabilities combined, in the
// dense multi-class path's table (classTable).

import (
	"fmt"
	"math"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// vecchiaClasses writes the class probabilities post of a multi-class
// Vecchia cloud's test points (C rows each, as tests' ids and labels), a
// batch of points at a time.
func (c *predictCmd) vecchiaClasses(e *env, tests *format.TestRows, post []core.Posterior, names []string, outMeta map[string]string, name string, mem format.Allocator) error {
	if _, sk, err := c.shard(); err != nil {
		return err
	} else if sk > 0 {
		return usagef("--shard: a multi-class cloud's posteriors are not sharded yet (predict them in one run)")
	}
	nc := len(names)
	if len(post)%nc != 0 {
		return &dataError{fmt.Sprintf("%s: %d test rows for %d classes: a multi-class cloud has one row per class and test point", name, len(post), nc)}
	}
	points := len(post) / nc
	if points > 0 && math.IsNaN(post[0].SE) {
		e.rep.warnf("the cloud has one particle group: the posteriors have no standard error (train with --groups)")
	}
	proto := classTable(names, nil, nil, 0)
	proto.Meta = outMeta
	tw := format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), proto, points, c.BatchSize, mem)
	var sum predictSummary
	per := max(1, c.BatchSize/nc)
	for p0 := 0; p0 < points; p0 += per {
		p1 := min(points, p0+per)
		batch := vecchiaTestRows(tests, p0*nc, p1*nc)
		sum.addClasses(batch, post[p0*nc:p1*nc], nc)
		if err := tw.Write(classTable(names, batch, post[p0*nc:p1*nc], p0)); err != nil {
			return err
		}
	}
	tw.Note = sum.line(outMeta)
	return tw.Close()
}
