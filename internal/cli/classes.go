package cli

// Multi-class labels: the label map of more than two classes, gpc-kernel's
// covariance stream of the multinomial probit model (core/gp's
// Multiclass) and gpc-predict's class probabilities (core.PredictClasses).

import (
	"cmp"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

// readTrainingClasses reads and labels the training features as gpc-kernel
// does, two classes or more, and returns their label mapping and metadata
// (for three or more classes, label indices 0..C-1 in train.y).
func (c *dataFlags) readTrainingClasses(e *env) (*features, *labelMap, map[string]string, error) {
	label, positive := c.Label, c.Positive
	frame, err := c.readFrame(c.Train, e)
	if err != nil {
		return nil, nil, nil, err
	}
	labels, err := newLabelMap(frame, label, positive)
	if err != nil {
		return nil, nil, nil, err
	}
	train, err := c.extract(frame, nil, labels, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if train.rows == 0 {
		return nil, nil, nil, &dataError{fmt.Sprintf("%s: no training rows", frame.Name)}
	}
	meta := map[string]string{
		"gpc:features":          strings.Join(train.names, ","),
		"gpc:label":             label,
		format.KeyLabelPositive: labels.pos,
		format.KeyLabelNegative: labels.neg,
	}
	if labels.classes != nil {
		delete(meta, format.KeyLabelPositive)
		delete(meta, format.KeyLabelNegative)
		meta[format.KeyClasses] = format.JoinClasses(labels.classes)
	}
	return train, labels, meta, nil
}

// newClassMap maps the distinct label values of col to class indices:
// numbers in increasing order when the column is numeric, else text in
// byte order.
func newClassMap(col *format.FrameColumn, distinct []string) *labelMap {
	m := &labelMap{classes: slices.Clone(distinct)}
	if col.Num != nil {
		slices.SortFunc(m.classes, func(a, b string) int { return cmp.Compare(parseOr(a), parseOr(b)) })
		for _, s := range m.classes {
			m.classNum = append(m.classNum, parseOr(s))
		}
	} else {
		slices.Sort(m.classes)
	}
	return m
}

// applyClasses maps column ci of f to class indices, as apply does.
func (m *labelMap) applyClasses(f *format.Frame, ci int, missing bool) ([]float64, error) {
	col := &f.Cols[ci]
	index := make(map[string]int, len(m.classes))
	for i, s := range m.classes {
		index[s] = i
	}
	y := make([]float64, f.Rows)
	for r, s := range col.Text {
		if col.Null[r] {
			if !missing {
				return nil, &dataError{fmt.Sprintf("%s: the label is missing", f.Describe(r, ci))}
			}
			y[r] = math.NaN()
			continue
		}
		i, ok := index[s]
		if !ok && m.classNum != nil && col.Num != nil {
			i = slices.Index(m.classNum, col.Num[r])
			ok = i >= 0
		}
		if !ok {
			return nil, &dataError{fmt.Sprintf("%s: unknown label %q: the training labels have %d classes, %s", f.Describe(r, ci), s, len(m.classes), quoteList(m.classes, 6))}
		}
		y[r] = float64(i)
	}
	return y, nil
}

// quoteList quotes the first max values of s, and says how many more.
func quoteList(s []string, max int) string {
	q := make([]string, 0, max)
	for i, x := range s {
		if i == max {
			return strings.Join(q, ", ") + fmt.Sprintf(" and %d more", len(s)-max)
		}
		q = append(q, strconv.Quote(x))
	}
	return strings.Join(q, ", ")
}

// runClasses writes the multi-class covariance stream (format.KeyClasses):
// the N (C - 1) class differences of the training points, then C rows per
// test point.
func (c *kernelCmd) runClasses(e *env, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string, mem format.Allocator) error {
	d, nc := len(train.names), len(labels.classes)
	y := make([]int, train.rows)
	for i, v := range train.y {
		y[i] = int(v)
	}
	kernels := c.hyperKernels
	if kernels == nil {
		var err error
		if kernels, err = c.classKernels(k, labels.classes, d, false, meta); err != nil {
			return err
		}
	} else {
		classMeta(kernels, meta)
	}
	m := &gp.Multiclass{X: train.x, D: d, Y: y, C: nc, Kernels: kernels}
	n := m.Vars()
	if avail, ok := availableMemory(); ok {
		if need := 8 * float64(n) * float64(n); need > float64(avail) {
			return &dataError{fmt.Sprintf("%s: %d training rows of %d classes make %d class differences, a %d x %d covariance of about %s, and only %s of memory is available", c.Train, train.rows, nc, n, n, n, format.Bytes(need), format.Bytes(float64(avail)))}
		}
	}
	delete(meta, format.KeyLabelPositive)
	delete(meta, format.KeyLabelNegative)
	meta[format.KeyClasses] = format.JoinClasses(labels.classes)
	meta["gpc:train_points"] = strconv.Itoa(train.rows)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	cov := &format.Covariance{N: n, Cov: m.Cov(), Y: ones}
	if train.id != nil {
		cov.ID = make([]string, n)
		for i := range n {
			cov.ID[i] = train.id[i/(nc-1)]
		}
	}
	meta[format.KeyFingerprint] = format.Fingerprint(cov.Cov)
	tests := 0
	if test != nil {
		tests = test.rows * nc
	}
	// Test rows lo..hi: point p's class c at row p C + c.
	rows := func(lo, hi int) *format.TestRows {
		t := &format.TestRows{Cov: make([]float64, (hi-lo)*n), Var: make([]float64, hi-lo)}
		if test.id != nil {
			t.ID = make([]string, hi-lo)
		}
		if test.y != nil {
			t.Y = make([]float64, hi-lo)
		}
		pc, pv := make([]float64, nc*n), make([]float64, nc)
		for p := lo / nc; p*nc < hi; p++ {
			m.TestRows(pc, pv, test.x[p*d:p*d+d])
			for cl := range nc {
				r := p*nc + cl
				if r < lo || r >= hi {
					continue
				}
				copy(t.Cov[(r-lo)*n:(r-lo+1)*n], pc[cl*n:(cl+1)*n])
				t.Var[r-lo] = pv[cl]
				if t.ID != nil {
					t.ID[r-lo] = test.id[p]
				}
				if t.Y != nil {
					t.Y[r-lo] = test.y[p]
				}
			}
		}
		return t
	}
	switch c.outputFormat(e.stdout) {
	case format.Arrow:
		return c.writeStream(e, cov, rows, meta, tests, mem)
	case format.CSV:
		return c.writeCSV(e.stdout, cov, rows, tests)
	}
	testPoints := 0
	if test != nil {
		testPoints = test.rows
	}
	t := &format.Table{Cols: []format.Column{
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "train_points", Int: []int64{int64(train.rows)}},
		{Name: "test_points", Int: []int64{int64(testPoints)}},
		{Name: "features", Int: []int64{int64(d)}},
		{Name: "kernel", Str: []string{c.Kernel}},
		{Name: "alpha", Str: []string{meta["gpc:alpha"]}},
		{Name: "beta", Float: []float64{k.Beta}},
		{Name: "bias", Float: []float64{k.Bias}},
		{Name: "classes", Str: []string{strings.Join(labels.classes, ",")}},
		{Name: "fingerprint", Str: []string{meta[format.KeyFingerprint]}},
	}}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// classMeta records kernels per class (a --hyper table's) in meta:
// gpc:class_alpha (one length scale per class; for ard, each class's list,
// separated by semicolons) and gpc:class_beta.
func classMeta(ks []*gp.Kernel, meta map[string]string) {
	alphas, betas := make([]string, len(ks)), make([]float64, len(ks))
	for i, k := range ks {
		alphas[i], betas[i] = format.JoinFloats(k.Alpha), k.Beta
	}
	if ks[0].Kind != gp.KernelLinear {
		meta["gpc:class_alpha"] = strings.Join(alphas, ";")
	}
	meta["gpc:class_beta"] = format.JoinFloats(betas)
}

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
		return c.noTests(name)
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
		return c.noTests(name)
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
