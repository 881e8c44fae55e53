package cli

// The Vecchia path (docs/vecchia.md): gpc-kernel --vecchia M writes a
// Vecchia model (gpc.vecchia/1) instead of a covariance, and gpc-orthant,
// gpc-train, gpc-predict and gpc-merge tell it, and gpc-train's Vecchia
// cloud (gpc.vecchia-cloud/1), from their dense counterparts by the
// stream's gpc:schema.

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"

	"github.com/alecthomas/kong"
)

// vecchiaFlags are gpc-kernel's --vecchia and its settings.
type vecchiaFlags struct {
	Vecchia       neighbours `placeholder:"M" default:"0" help:"Write a Vecchia model (gpc.vecchia/1) instead of the N x N covariance: each training point conditioned on its M nearest earlier points in a maxmin order, each test point on its M nearest training points; O(N M) memory, O(M) time per particle and point, for N up to millions (docs/vecchia.md). auto: M = 50, within 1 nat of the dense model's log marginal likelihood and 0.003 of its posteriors on the 2-D tables at N = 1000 to 10^4, at 1.4-1.6 times the time of M = 30 (30: within 1.5 nats and 0.005). Many features with length scales long beside the points' spacing need far more, or the dense path: on 36-feature satellite data no M up to 100 comes within a nat, and gpc-train warns. 0: the dense covariance."`
	VecchiaOrder  string     `enum:"maxmin,given" default:"maxmin" help:"With --vecchia: the order of the training points: maxmin (each next point the farthest from those before it: coarse to fine) or given (the file's)."`
	VecchiaNugget float64    `default:"1e-4" help:"With --vecchia: the part of the probit's noise variance (1) moved into the latent process, so that the neighbours' covariances stay well conditioned; the dense model is the same for any value in (0, 1)."`
}

// neighbours is --vecchia's value: the neighbours per point, 0 for the
// dense path, or auto for vecchia.DefaultM.
type neighbours int

// Decode parses the flag's value (kong.MapperValue).
func (v *neighbours) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("M", &s); err != nil {
		return err
	}
	if s == "auto" {
		*v = vecchia.DefaultM
		return nil
	}
	m, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a count of neighbours (a whole number, auto for %d, 0 for the dense path)", s, vecchia.DefaultM)
	}
	*v = neighbours(m)
	return nil
}

// validateVecchia checks the flags.
func (v *vecchiaFlags) validateVecchia() error {
	switch {
	case v.Vecchia < 0:
		return usagef("--vecchia %d: the neighbours per point must be 1 or more (0: the dense covariance)", v.Vecchia)
	case !(v.VecchiaNugget > 0 && v.VecchiaNugget < 1):
		return usagef("--vecchia-nugget %v: must be in (0, 1)", v.VecchiaNugget)
	}
	return nil
}

// runVecchia writes the Vecchia model of the training and test features
// (standardized already as asked) with kernel k.
func (c *kernelCmd) runVecchia(e *env, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string, mem format.Allocator) error {
	n, d := train.rows, len(train.names)
	if labels.classes != nil {
		return usagef("--vecchia: %s has %d classes; the Vecchia path takes two so far (docs/vecchia.md says what more would take): drop --vecchia", train.source, len(labels.classes))
	}
	if int(c.Vecchia) >= n {
		return usagef("--vecchia %d: the training data have %d points, and each conditions on at most the %d before it: give --vecchia below %d, or drop it (the dense path is exact, and fast at this size)", c.Vecchia, n, n-1, n)
	}
	order, _ := vecchia.ParseOrder(c.VecchiaOrder)
	// The neighbours are Euclidean in the kernel's metric: the ard
	// kernel's features scaled by their length scales.
	metric := func(x []float64, rows int) []float64 {
		if k.Kind != gp.KernelARD {
			return x
		}
		out := make([]float64, len(x))
		for r := range rows {
			for j := range d {
				out[r*d+j] = x[r*d+j] / k.Alpha[j]
			}
		}
		return out
	}
	if c.Progress {
		e.rep.note("ordering %d training points (%s) and finding %d neighbours each", n, order, c.Vecchia)
	}
	s, err := vecchia.NewStructure(metric(train.x, n), n, d, vecchia.Options{M: int(c.Vecchia), Order: order, Threads: c.Threads})
	if err != nil {
		return err
	}
	if err := e.ctx.Err(); err != nil {
		return err
	}
	if rep := s.Duplicates(); rep > 0 {
		e.rep.warnf("%d of %d training points repeat an earlier point's features: each shares that point's latent value, with a label of its own (docs/vecchia.md)", rep, n)
	}
	tests := 0
	var tnb [][]int32
	var tx []float64
	if test != nil {
		tests, tx = test.rows, test.x
		tnb = s.TestNeighbours(metric(test.x, tests), tests, int(c.Vecchia), c.Threads)
	}
	if c.Progress {
		e.rep.note("the conditionals of %d training and %d test points", n, tests)
	}
	m, err := vecchia.NewClassifier(s, k, train.x, train.y, c.VecchiaNugget, tx, tnb, c.Threads)
	if err != nil {
		return &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	st := &format.VecchiaStream{Model: m, Row: make([]int, 0, n+tests), Y: make([]float64, 0, n+tests), Meta: meta}
	if train.id != nil || (test != nil && test.id != nil) {
		st.ID = make([]string, 0, n+tests)
	}
	for _, r := range s.Perm {
		st.Row = append(st.Row, r)
		st.Y = append(st.Y, train.y[r])
		if st.ID != nil {
			st.ID = append(st.ID, train.id[r])
		}
	}
	for j := range tests {
		st.Row = append(st.Row, j)
		y := math.NaN()
		if test.y != nil {
			y = test.y[j]
		}
		st.Y = append(st.Y, y)
		if st.ID != nil {
			id := ""
			if test.id != nil {
				id = test.id[j]
			}
			st.ID = append(st.ID, id)
		}
	}
	meta[format.KeyVecchiaM] = strconv.Itoa(int(c.Vecchia))
	meta[format.KeyVecchiaOrder] = order.String()
	meta[format.KeyVecchiaNugget] = fmtFloat(c.VecchiaNugget)
	meta[format.KeyVecchiaRepeat] = strconv.Itoa(s.Duplicates())
	switch c.outputFormat(e.stdout) {
	case format.Arrow:
		return format.WriteVecchia(e.stdout, st, c.BatchSize, mem)
	case format.CSV:
		return format.WriteTable(e.stdout, vecchiaRows(st), format.CSV, 0, nil)
	}
	t := &format.Table{Cols: []format.Column{
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "test_rows", Int: []int64{int64(tests)}},
		{Name: "features", Int: []int64{int64(d)}},
		{Name: "kernel", Str: []string{c.Kernel}},
		{Name: "alpha", Str: []string{meta["gpc:alpha"]}},
		{Name: "beta", Float: []float64{k.Beta}},
		{Name: "vecchia", Int: []int64{int64(c.Vecchia)}},
		{Name: "order", Str: []string{order.String()}},
		{Name: "repeats", Int: []int64{int64(s.Duplicates())}},
		{Name: "fingerprint", Str: []string{format.VecchiaFingerprint(m)}},
	}}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// vecchiaRows is the Vecchia stream as a table (--format csv): a row per
// variable, its neighbours and coefficients space-separated.
func vecchiaRows(s *format.VecchiaStream) *format.Table {
	m := s.Model
	cols := []format.Column{{Name: "role"}, {Name: "row"}, {Name: "id"}, {Name: "y"}, {Name: "cond_var"}, {Name: "lower"}, {Name: "upper"}, {Name: "nbr"}, {Name: "coef"}}
	t := &format.Table{Cols: cols}
	for i := range m.N + m.T {
		role, start, nbr, coef, cv, lo, hi := "train", m.Start, m.Nbr, m.Coef, m.CondVar, 0.0, math.Inf(1)
		k := i
		if i >= m.N {
			role, start, nbr, coef, cv, k = "test", m.TStart, m.TNbr, m.TCoef, m.TCondVar, i-m.N
		} else {
			lo, hi = m.Lower[i], m.Upper[i]
		}
		var ns, cs []string
		for q := start[k]; q < start[k+1]; q++ {
			ns = append(ns, strconv.Itoa(int(nbr[q])))
			cs = append(cs, fmtFloat(coef[q]))
		}
		id := ""
		if s.ID != nil {
			id = s.ID[i]
		}
		vals := []string{role, strconv.Itoa(s.Row[i]), id, fmtFloat(s.Y[i]), fmtFloat(cv[k]), fmtFloat(lo), fmtFloat(hi), strings.Join(ns, " "), strings.Join(cs, " ")}
		for c := range t.Cols {
			t.Cols[c].Str = append(t.Cols[c].Str, vals[c])
		}
	}
	return t
}

// vecchiaChecks refuses the estimator flags that the Vecchia path does not
// have: it has one method and one order (the model's) and no jitter (its
// nugget is gpc-kernel's).
func (c *estimatorFlags) vecchiaChecks(name string) error {
	switch {
	case c.Method != "auto":
		return usagef("--method %s: %s is a Vecchia model (gpc.vecchia/1), which has one estimator, EP-twisted SMC on the sparse model (docs/vecchia.md): drop --method", c.Method, name)
	case c.Order != "auto":
		return usagef("--order %s: %s is a Vecchia model, whose order is gpc-kernel's (--vecchia-order): drop --order", c.Order, name)
	case c.Jitter != 0:
		return usagef("--jitter %v: %s is a Vecchia model, whose conditionals gpc-kernel computed (with --vecchia-nugget): drop --jitter", c.Jitter, name)
	}
	return nil
}

// prepareVecchia reads a Vecchia stream and prepares its estimator.
func prepareVecchia(e *env, r interface{ Read([]byte) (int, error) }, name string, progress bool, mem format.Allocator) (*format.VecchiaStream, *vecchia.Prepared, error) {
	s, err := format.ReadVecchia(r, name, mem)
	if err != nil {
		return nil, nil, err
	}
	tr, done := e.rep.trace(progress)
	p, err := vecchia.Prepare(e.ctx, s.Model, tr)
	done()
	if err != nil {
		return nil, nil, err
	}
	vecchiaWarnings(e, p)
	return s, p, nil
}

// vecchiaMeta is the metadata that says how a Vecchia estimate was made.
func vecchiaMeta(p *vecchia.Prepared, cfg core.Config, fingerprint string) map[string]string {
	return map[string]string{
		format.KeyVersion:     Version,
		format.KeySeed:        strconv.FormatUint(cfg.Seed, 10),
		format.KeyMethod:      vecchiaMethod,
		format.KeyFingerprint: fingerprint,
		format.KeyEP:          p.EP.String(),
		"gpc:vecchia_prepare": fmt.Sprintf("laplace_steps=%d block=%d ep_rounds=%d shift=%g clipped=%d site_scale=%g", p.Laplace.Iterations, p.Block, p.EP.Sweeps, p.Shift, p.Clipped, p.SiteScale),
	}
}

// vecchiaMethod is the Vecchia estimator's name in the outputs.
const vecchiaMethod = "vecchia"

// runVecchia estimates a Vecchia model's log P (gpc-orthant).
func (c *orthantCmd) runVecchia(e *env, r interface{ Read([]byte) (int, error) }, name string, mem format.Allocator) error {
	c.plan = &c.planFlags
	if err := c.vecchiaChecks(name); err != nil {
		return err
	}
	s, p, err := c.vecchiaPrepared(e, r, name, c.Progress, mem)
	if err != nil {
		return err
	}
	cfg := c.config(c.Threads, c.MaxMemory.limit())
	planned, _, err := vecchia.Plan(p, cfg)
	if err != nil {
		return err
	}
	if c.PrepareOnly {
		return writeVecchiaPlan(e, s, p, mem)
	}
	order := s.Meta[format.KeyVecchiaOrder]
	meta := vecchiaMeta(p, cfg, s.Meta[format.KeyFingerprint])
	passMeta(meta, s.Meta)
	if c.Shard != "" {
		i, k, _ := c.shard()
		if k > planned.Groups {
			return usagef("--shard %d/%d: %d shards of %d particle groups: at most one shard per group (raise --groups)", i, k, k, planned.Groups)
		}
		lo, hi := shardRange(i, k, planned.Groups)
		fp := vecchiaShardFingerprint("gpc-orthant", s.Meta[format.KeyFingerprint], planned, c.ESS, c.Seed, k)
		if c.Fingerprint {
			return printFingerprint(e, fp)
		}
		outs, err := vecchiaGroups(e, p, cfg, planned, lo, hi, c.Progress, nil)
		if err != nil {
			return err
		}
		tab := orthantRow(&core.Result{}, s.Model.N, vecchiaMethod, order, cfg.Seed, p.EP.Sweeps)
		for key, v := range meta {
			tab.Meta[key] = v
		}
		addShardMeta(tab.Meta, format.SchemaOrthantShard, i, k, lo, hi, fp)
		tab.Meta[format.KeyShardN] = strconv.Itoa(s.Model.N)
		tab.Meta[format.KeyShardSamples] = strconv.Itoa(planned.Samples)
		tab.Meta[format.KeyShardGroups] = strconv.Itoa(planned.Groups)
		tab.Meta[format.KeyShardOrder] = order
		tab.Meta[format.KeyShardSolve] = strconv.Itoa(p.EP.Sweeps)
		tab.Meta[format.KeyShardESS] = strconv.FormatFloat(planned.ESSThreshold, 'g', -1, 64)
		return format.WriteTable(e.stdout, groupTable(tab.Meta, outs, lo), c.outputFormat(e.stdout), 0, mem)
	}
	outs, err := vecchiaGroups(e, p, cfg, planned, 0, planned.Groups, c.Progress, nil)
	if err != nil {
		return err
	}
	res := vecchiaResult(e, planned, outs)
	t := orthantRow(&res, s.Model.N, vecchiaMethod, order, cfg.Seed, p.EP.Sweeps)
	for key, v := range meta {
		t.Meta[key] = v
	}
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// groupTable is a gpc.orthant-shard/1 table of groups from lo on.
func groupTable(meta map[string]string, outs []core.GroupResult, lo int) *format.Table {
	t := &format.Table{Meta: meta, Cols: []format.Column{
		{Name: "group", Int: make([]int64, len(outs))},
		{Name: "log_z", Float: make([]float64, len(outs))},
		{Name: "min_ess", Float: make([]float64, len(outs))},
		{Name: "resamples", Int: make([]int64, len(outs))},
		{Name: "ancestors", Int: make([]int64, len(outs))},
		{Name: "dead_at", Int: make([]int64, len(outs))},
	}}
	for j, o := range outs {
		t.Cols[0].Int[j] = int64(lo + j)
		t.Cols[1].Float[j] = o.LogZ
		t.Cols[2].Float[j] = o.MinESS
		t.Cols[3].Int[j] = int64(o.Resamples)
		t.Cols[4].Int[j] = int64(o.Ancestors)
		t.Cols[5].Int[j] = int64(o.DeadAt)
	}
	return t
}

// vecchiaShardFingerprint is a Vecchia run's gpc:shard_fingerprint: the
// model, the flags that change the result (groups as planned), the seed,
// K and the compute path.
func vecchiaShardFingerprint(tool, model string, plan core.Config, ess float64, seed int64, k int) string {
	return format.ShardFingerprint(tool, model,
		fmt.Sprintf("samples=%d groups=%d ess=%v seed=%d", plan.Samples, plan.Groups, ess, seed),
		"shards="+strconv.Itoa(k), "path="+computePath())
}

// vecchiaGroups runs groups [lo, hi) of the estimate with progress; sink
// (if not nil) gets their test posteriors in order.
func vecchiaGroups(e *env, p *vecchia.Prepared, cfg, planned core.Config, lo, hi int, progress bool, sink vecchia.GroupSink) ([]core.GroupResult, error) {
	samples := 0
	for _, m := range core.GroupSizes(planned.Samples, planned.Groups)[lo:hi] {
		samples += m
	}
	e.rep.startProgress(progress, estimateProgress(samples, p.Model().N))
	cfg.Progress = e.rep.add
	_, outs, err := vecchia.EstimateGroups(e.ctx, p, cfg, lo, hi, sink)
	e.rep.stopProgress()
	if err != nil {
		return nil, err
	}
	if cfg.Groups == 0 && planned.Groups > core.DefaultGroups(core.MethodEP, cfg.Samples) {
		e.rep.warnf("the particles were split into %d groups of %d to fit --max-memory (%.3g GB)", planned.Groups, planned.Samples/planned.Groups, float64(cfg.MaxMemory)/1e9)
	}
	return outs, nil
}

// vecchiaResult summarizes the groups as the dense estimate does, warning
// where the standard error cannot be trusted.
func vecchiaResult(e *env, planned core.Config, outs []core.GroupResult) core.Result {
	res := core.Summarize(planned.Samples, outs)
	res.SetESSThreshold(planned.ESSThreshold)
	if ok, why := res.Trust(); !ok {
		e.rep.warnf("the standard error is not reliable: %s", why)
	}
	return res
}

// Keys of the Vecchia cloud's metadata.
const (
	keyESSThreshold = "gpc:ess_threshold" // the resampling threshold as planned, a fraction of a group
)

// runVecchia estimates a Vecchia model's log marginal likelihood and its
// test rows' posteriors (gpc-train): the Vecchia cloud, streamed group by
// group, or with --format table or csv a summary row.
func (c *trainCmd) runVecchia(e *env, r interface{ Read([]byte) (int, error) }, name string, mem format.Allocator) error {
	c.plan = &c.planFlags
	if err := c.vecchiaChecks(name); err != nil {
		return err
	}
	out := c.outputFormat(e.stdout)
	if out != format.Arrow && c.Shard != "" && !c.Fingerprint {
		return usagef("--shard writes a shard of the cloud, an Arrow stream for gpc-merge: not --format %s (or redirect standard output)", c.Format)
	}
	s, p, err := c.vecchiaPrepared(e, r, name, c.Progress, mem)
	if err != nil {
		return err
	}
	m := s.Model
	cfg := c.config(c.Threads, c.MaxMemory.limit())
	planned, _, err := vecchia.Plan(p, cfg)
	if err != nil {
		return err
	}
	if c.PrepareOnly {
		return writeVecchiaPlan(e, s, p, mem)
	}
	meta := vecchiaMeta(p, cfg, s.Meta[format.KeyFingerprint])
	passMeta(meta, s.Meta)
	meta[format.KeyTool] = "gpc-train"
	meta[format.KeyN] = strconv.Itoa(m.N)
	meta[format.KeyTests] = strconv.Itoa(m.T)
	meta[format.KeySamples] = strconv.Itoa(planned.Samples)
	meta[format.KeyGroups] = strconv.Itoa(planned.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(core.GroupSizes(planned.Samples, planned.Groups))
	meta[format.KeyOrderKind] = s.Meta[format.KeyVecchiaOrder]
	meta[keyESSThreshold] = strconv.FormatFloat(planned.ESSThreshold, 'g', -1, 64)
	if out != format.Arrow && c.Shard == "" {
		outs, err := vecchiaGroups(e, p, cfg, planned, 0, planned.Groups, c.Progress, nil)
		if err != nil {
			return err
		}
		res := vecchiaResult(e, planned, outs)
		t := orthantRow(&res, m.N, vecchiaMethod, s.Meta[format.KeyVecchiaOrder], cfg.Seed, p.EP.Sweeps)
		t.Cols[0].Name, t.Cols[1].Name = "log_ml", "se_log_ml"
		t.Cols = append(t.Cols[:2], t.Cols[3:]...)
		t.Cols = append(t.Cols, format.Column{Name: "test_rows", Int: []int64{int64(m.T)}})
		t.Meta = meta
		t.Meta[format.KeySchema] = "gpc.train-summary/1"
		t.Meta[format.KeyLogML] = fmtFloat(res.LogP)
		t.Meta[format.KeySELogML] = fmtFloat(res.SE)
		t.Meta[format.KeyGroupLogP] = format.JoinFloats(res.GroupLogP)
		return format.WriteTable(e.stdout, t, out, 0, mem)
	}
	meta[format.KeySchema] = format.SchemaVecchiaCloud
	si, sk, _ := c.shard()
	lo, hi := 0, planned.Groups
	if sk > 0 {
		if sk > planned.Groups {
			return usagef("--shard %d/%d: %d shards of %d particle groups: at most one shard per group (raise --groups)", si, sk, sk, planned.Groups)
		}
		lo, hi = shardRange(si, sk, planned.Groups)
		fp := format.ShardFingerprint(vecchiaShardFingerprint("gpc-train", s.Meta[format.KeyFingerprint], planned, c.ESS, c.Seed, sk), "batch-size="+strconv.Itoa(c.BatchSize))
		if c.Fingerprint {
			return printFingerprint(e, fp)
		}
		addShardMeta(meta, format.SchemaVecchiaCloudShard, si, sk, lo, hi, fp)
		meta[format.KeyShardRowsOf] = strconv.Itoa(m.T + planned.Groups)
		meta[format.KeyShardBatch] = strconv.Itoa(c.BatchSize)
	}
	meta[format.KeyRows] = strconv.Itoa(m.T + hi - lo)
	var ids []string
	if s.ID != nil {
		ids = s.ID[m.N:]
	}
	enlargePipe(e.stdout)
	cw, err := format.NewVecchiaCloudWriter(e.stdout, meta, s.Row[m.N:], ids, s.Y[m.N:], c.BatchSize, mem)
	if err != nil {
		return err
	}
	outs, err := vecchiaGroups(e, p, cfg, planned, lo, hi, c.Progress, cw.WriteGroup)
	if err != nil {
		return err
	}
	if sk == 0 {
		vecchiaResult(e, planned, outs)
	}
	return cw.Close()
}

// runVecchia writes the posteriors of a Vecchia cloud's test rows
// (gpc-predict): its groups' weighted posteriors combined
// (core.CombinePosteriors), with standard errors from their spread.
func (c *predictCmd) runVecchia(e *env, r interface{ Read([]byte) (int, error) }, name string, mem format.Allocator) error {
	if c.Count != "soft" {
		return usagef("--count %s: %s is a Vecchia cloud, whose groups predicted their test rows by the soft count as they ended (their particles are not kept): drop --count", c.Count, name)
	}
	cl, err := format.ReadVecchiaCloud(r, name, false, mem)
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
	if t == 0 {
		return c.noTests(name)
	}
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

// mergeVecchiaCloud merges gpc-train's Vecchia cloud shards: their test
// rows (the same in each) and their groups, in order, written as the
// unsharded run writes them.
func (c *mergeCmd) mergeVecchiaCloud(e *env, shards []*shardIn, mem format.Allocator) error {
	if f := c.outputFormat(e.stdout); f != format.Arrow {
		return usagef("gpc-train's shards merge into a cloud, an Arrow stream: not --format %s (redirect standard output, or pipe it to gpc-predict)", c.Format)
	}
	meta := shards[0].meta
	batch, err := strconv.Atoi(meta[format.KeyShardBatch])
	if err != nil || batch < 1 {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q is not a batch size", shards[0].name, format.KeyShardBatch, meta[format.KeyShardBatch])}
	}
	var first *format.VecchiaCloud
	var groups []format.VecchiaGroup
	for _, s := range shards {
		cl, err := readVecchiaShard(s, mem)
		if err != nil {
			return err
		}
		if first == nil {
			first = cl
		} else if len(cl.Row) != len(first.Row) {
			return &dataError{fmt.Sprintf("%s: %d test rows where %s has %d", s.name, len(cl.Row), shards[0].name, len(first.Row))}
		}
		groups = append(groups, cl.Groups...)
	}
	out := unshardedMeta(meta)
	out[format.KeySchema] = meta[format.KeyShardOf]
	if n, err := strconv.Atoi(out[format.KeyGroups]); err != nil || n != len(groups) {
		return &dataError{fmt.Sprintf("%s: the shards hold %d groups, and the metadata announces %s", shards[len(shards)-1].name, len(groups), out[format.KeyGroups])}
	}
	out[format.KeyRows] = strconv.Itoa(len(first.Row) + len(groups))
	cw, err := format.NewVecchiaCloudWriter(e.stdout, out, first.Row, first.ID, first.Y, batch, mem)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := cw.WriteGroup(g.Group, g.Out, g.P); err != nil {
			return err
		}
	}
	return cw.Close()
}

// readVecchiaShard reads a Vecchia cloud shard whole and checks that it
// holds its range's groups, in order.
func readVecchiaShard(s *shardIn, mem format.Allocator) (*format.VecchiaCloud, error) {
	f, err := os.Open(s.name)
	if err != nil {
		return nil, &format.IOError{Op: "open shard", Err: err}
	}
	defer f.Close()
	cl, err := format.ReadVecchiaCloud(f, s.name, true, mem)
	if err != nil {
		return nil, err
	}
	if len(cl.Groups) != s.hi-s.lo {
		return nil, &dataError{fmt.Sprintf("%s: shard %d/%d has %d groups for groups %d-%d", s.name, s.i, s.k, len(cl.Groups), s.lo, s.hi)}
	}
	for j, g := range cl.Groups {
		if g.Group != s.lo+j {
			return nil, &dataError{fmt.Sprintf("%s: group row %d is group %d, not %d", s.name, j, g.Group, s.lo+j)}
		}
	}
	return cl, nil
}
