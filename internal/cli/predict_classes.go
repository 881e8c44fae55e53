package cli

// gpc-predict on a multi-class cloud: the class probabilities
// (core.PredictClasses).

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

// cloudClasses returns the class names of a multi-class cloud's metadata,
// or nil for a binary one.
func cloudClasses(meta map[string]string, name string) ([]string, error) {
	v, ok := meta[format.KeyClasses]
	if !ok {
		return nil, nil
	}
	names, err := format.SplitClasses(v)
	if err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", name, err)}
	}
	return names, nil
}

// runClasses is gpc-predict on a multi-class cloud: the particles are
// loaded (within --max-memory), then the test points predicted a batch at
// a time. testRows is the number of test rows if known, else -1.
func (c *predictCmd) runClasses(e *env, f *core.Factor, cloud *format.CloudReader, tests testSource, ahead *format.TestRows, names []string, testRows int, outMeta map[string]string, estimate func(), opt core.PredictOptions, name string, mem format.Allocator) error {
	if opt.Hard {
		return usagef("--count hard: a multi-class cloud's class probabilities are computed per particle; leave --count out")
	}
	if testRows == 0 {
		return c.noTests(name, false)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(cloudGCPercent))
	cl, err := cloud.LoadParticles(c.MaxMemory.limit(), sysmem.Floats)
	if err != nil {
		return err
	}
	estimate()
	all := &format.TestRows{}
	if ahead != nil {
		all = ahead
	}
	for {
		t, err := tests.NextTest(c.BatchSize)
		if err != nil {
			return err
		}
		if t == nil {
			break
		}
		all.Cov = append(all.Cov, t.Cov...)
		all.Var = append(all.Var, t.Var...)
		all.ID = append(all.ID, t.ID...)
		all.Y = append(all.Y, t.Y...)
	}
	if len(all.ID) != all.Len() {
		all.ID = nil
	}
	if len(all.Y) != all.Len() {
		all.Y = nil
	}
	if all.Len() == 0 {
		return c.noTests(name, false)
	}
	points := -1
	if testRows >= 0 {
		points = testRows / len(names)
	}
	proto := classTable(names, nil, nil, 0)
	proto.Meta = outMeta
	tw := format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), proto, points, c.BatchSize, mem)
	var sum predictSummary
	if err := c.predictClasses(e, f, cl, names, all, tw, &sum, opt, name); err != nil {
		return err
	}
	tw.Note = sum.line(outMeta)
	return tw.Close()
}

// predictClasses predicts the class probabilities of the test points in
// t (C rows each, format.KeyClasses) from the cloud cl, a batch of points
// at a time, and writes them with tw. first is the index of t's first
// point.
func (c *predictCmd) predictClasses(e *env, f *core.Factor, cl *core.Cloud, names []string, t *format.TestRows, tw *format.TableWriter, sum *predictSummary, opt core.PredictOptions, name string) error {
	nc := len(names)
	if t.Len()%nc != 0 {
		return &dataError{fmt.Sprintf("%s: %d test rows for %d classes: a multi-class stream has one row per class and test point", name, t.Len(), nc)}
	}
	points := t.Len() / nc
	per := max(1, c.BatchSize/nc)
	e.rep.startProgress(c.Progress, rowsProgress(points, "test points"))
	defer e.rep.stopProgress()
	for p0 := 0; p0 < points; p0 += per {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		p1 := min(points, p0+per)
		batch := sliceTests(t, p0*nc, p1*nc)
		post := make([]core.Posterior, batch.Len())
		opt.First = p0
		if err := core.PredictClasses(post, f, cl, nc, batch.Cov, batch.Var, opt); err != nil {
			if ie, ok := err.(*core.InputError); ok && ie.Index >= 0 {
				return &dataError{fmt.Sprintf("%s: test point %d: %s", name, p0+ie.Index, ie.Msg)}
			}
			return err
		}
		if p0 == 0 && len(post) > 0 && math.IsNaN(post[0].SE) {
			e.rep.warnf("the cloud has one particle group: the posteriors have no standard error (train with --groups)")
		}
		sum.addClasses(batch, post, nc)
		if err := tw.Write(classTable(names, batch, post, p0)); err != nil {
			return err
		}
		e.rep.add(int64(p1 - p0))
	}
	return nil
}

// addClasses adds the test points of t (nc rows each) with their class
// probabilities post whose true class is known.
func (s *predictSummary) addClasses(t *format.TestRows, post []core.Posterior, nc int) {
	if t.Y == nil {
		return
	}
	for p := range len(post) / nc {
		y := t.Y[p*nc]
		if math.IsNaN(y) {
			continue
		}
		k := int(y)
		best := 0
		for cl := range nc {
			if post[p*nc+cl].P > post[p*nc+best].P {
				best = cl
			}
		}
		s.labelled++
		if best == k {
			s.right++
		}
		s.logPred += math.Log(post[p*nc+k].P)
	}
}

// classTable is a batch of the multi-class posteriors stream: id, p_<class>
// and se_<class> for each class, label (the most probable class) and y
// (the true class, when known). first is the batch's first test point,
// for default ids. t (C rows per point) and post may be nil for the
// schema.
func classTable(names []string, t *format.TestRows, post []core.Posterior, first int) *format.Table {
	nc := len(names)
	points := len(post) / nc
	id, label, y := make([]string, points), make([]string, points), make([]string, points)
	cols := []format.Column{{Name: "id", Str: id}}
	ps, ses := make([][]float64, nc), make([][]float64, nc)
	for cl, nm := range names {
		ps[cl], ses[cl] = make([]float64, points), make([]float64, points)
		cols = append(cols, format.Column{Name: "p_" + nm, Float: ps[cl]})
	}
	for cl, nm := range names {
		cols = append(cols, format.Column{Name: "se_" + nm, Float: ses[cl]})
	}
	for p := range points {
		id[p] = strconv.Itoa(first + p)
		if t.ID != nil && t.ID[p*nc] != "" {
			id[p] = t.ID[p*nc]
		}
		best := 0
		for cl := range nc {
			q := post[p*nc+cl]
			ps[cl][p], ses[cl][p] = q.P, q.SE
			if q.P > post[p*nc+best].P {
				best = cl
			}
		}
		label[p] = names[best]
		if t.Y != nil && !math.IsNaN(t.Y[p*nc]) {
			if k := int(t.Y[p*nc]); k >= 0 && k < nc {
				y[p] = names[k]
			}
		}
	}
	return &format.Table{Cols: append(cols, format.Column{Name: "label", Str: label}, format.Column{Name: "y", Str: y})}
}
