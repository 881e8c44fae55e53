package cli

// The estimators as gpc-orthant and gpc-train run them. A problem is
// core's Estimator (the dense Factor, or the Vecchia model's Prepared)
// with what the tools' outputs say of it; the paths below take a problem,
// whichever it is: the plan under --max-memory, a range of particle
// groups (a shard) with its progress and warnings, the summary of their
// outcomes, the shard's range, fingerprint and metadata, gpc-orthant's
// row and gpc-train's summary row. What is left to each estimator is its
// input, its preparation and the stream of its groups' outputs (a dense
// cloud's particles, a Vecchia cloud's posteriors).

import (
	"fmt"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// problem is a prepared estimate (denseProblem, vecchiaProblem).
type problem interface {
	core.Estimator
	// meta is the metadata that says how the estimate with cfg (its
	// method settled) was made, the input's passed on (passMeta).
	meta(cfg core.Config) map[string]string
	// method, order and solve are what gpc-orthant's row says of the
	// estimator: its name, its variable order and its preparation's
	// iterations.
	method(cfg core.Config) string
	order() string
	solve(cfg core.Config) int
	// fingerprint is the gpc:shard_fingerprint of tool's estimate with
	// the planned configuration plan sharded k ways: the problem, the
	// flags that change the result, the seed, K and the compute path.
	fingerprint(tool string, plan core.Config, k int) string
}

// planned returns cfg as p runs it (core.Estimator.Plan).
func planned(p problem, cfg core.Config) (core.Config, error) {
	plan, _, err := p.Plan(cfg)
	return plan, err
}

// estimateGroups runs groups [lo, hi) of p's estimate as planned with
// progress (cfg.Sink, if set, takes their outputs), warning when the
// particles were split to fit --max-memory.
func estimateGroups(e *env, p problem, cfg, plan core.Config, lo, hi int, progress bool) ([]core.GroupResult, error) {
	samples := 0
	for _, m := range core.GroupSizes(plan.Samples, plan.Groups)[lo:hi] {
		samples += m
	}
	e.rep.startProgress(progress, estimateProgress(samples, p.Dim()))
	cfg.Progress = e.rep.add
	_, outs, err := core.EstimateGroups(e.ctx, p, cfg, lo, hi)
	e.rep.stopProgress()
	if err != nil {
		return nil, err
	}
	warnSplit(e, p, cfg, plan)
	return outs, nil
}

// warnSplit warns when the particles were split into more groups than
// p's default (its plan without a memory limit) to fit --max-memory.
func warnSplit(e *env, p problem, cfg, plan core.Config) {
	if cfg.Groups != 0 {
		return
	}
	free := cfg
	free.MaxMemory = 0
	if def, err := planned(p, free); err == nil && plan.Groups > def.Groups {
		e.rep.warnf("the particles were split into %d groups of %d to fit --max-memory (%.3g GB)", plan.Groups, plan.Samples/plan.Groups, float64(cfg.MaxMemory)/1e9)
	}
}

// estimate runs p's whole estimate with progress and summarizes it
// (summarize).
func estimate(e *env, p problem, cfg core.Config, progress bool) (core.Result, error) {
	plan, err := planned(p, cfg)
	if err != nil {
		return core.Result{}, err
	}
	outs, err := estimateGroups(e, p, cfg, plan, 0, plan.Groups, progress)
	if err != nil {
		return core.Result{}, err
	}
	return summarize(e, plan, outs), nil
}

// summarize is the Result of a whole estimate's groups as planned,
// warning where its standard error cannot be trusted and, with
// --progress, noting the estimate and its effective groups
// (noteEstimate).
func summarize(e *env, plan core.Config, outs []core.GroupResult) core.Result {
	res := core.Summarize(plan.Samples, outs)
	res.SetESSThreshold(plan.ESSThreshold)
	noteEstimate(e, &res)
	if ok, why := res.Trust(); !ok {
		e.rep.warnf("the standard error is not reliable: %s", why)
	}
	return res
}

// noteEstimate notes, with --progress, the estimate of log P, its
// standard error and the effective number of groups that carry the mean
// (core.Result.EffectiveGroups): the one figure of the groups' agreement,
// which the output streams do not carry (gpc-show --summary computes it
// from a cloud's or posteriors' group estimates).
func noteEstimate(e *env, res *core.Result) {
	if !e.rep.progress {
		return
	}
	e.rep.note("estimate: log P %.10g (se %.3g) from %d groups: effectively %.1f of them carry the mean", res.LogP, res.SE, res.Groups, res.EffectiveGroups)
}

// groupShard is shard i of k of a planned estimate's groups: [lo, hi),
// or the usage error of more shards than groups.
func groupShard(i, k int, plan core.Config) (lo, hi int, err error) {
	if k > plan.Groups {
		return 0, 0, tooManyShards(i, k, plan.Groups, "particle groups", "group", " (raise --groups)")
	}
	lo, hi = shardRange(i, k, plan.Groups)
	return lo, hi, nil
}

// problemRow is gpc-orthant's one-row result for p's estimate res (schema
// gpc.orthant/1, the metadata p's).
func problemRow(p problem, res *core.Result, cfg core.Config) *format.Table {
	t := orthantRow(res, p.Dim(), p.method(cfg), p.order(), cfg.Seed, p.solve(cfg))
	for k, v := range p.meta(cfg) {
		t.Meta[k] = v
	}
	return t
}

// orthantShard is shard i of k of gpc-orthant's estimate on p, groups
// [lo, hi) of plan with outcomes outs: a gpc.orthant-shard/1 table, one
// row per group, whose metadata is the unsharded run's and what gpc-merge
// needs to write it.
func orthantShard(p problem, cfg, plan core.Config, i, k, lo, hi int, fp string, outs []core.GroupResult) *format.Table {
	meta := problemRow(p, &core.Result{}, cfg).Meta
	addShardMeta(meta, format.SchemaOrthantShard, i, k, lo, hi, fp)
	meta[format.KeyShardN] = strconv.Itoa(p.Dim())
	meta[format.KeyShardSamples] = strconv.Itoa(plan.Samples)
	meta[format.KeyShardGroups] = strconv.Itoa(plan.Groups)
	meta[format.KeyShardOrder] = p.order()
	meta[format.KeyShardSolve] = strconv.Itoa(p.solve(cfg))
	meta[format.KeyShardESS] = strconv.FormatFloat(plan.ESSThreshold, 'g', -1, 64)
	return groupTable(meta, outs, lo)
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

// summaryRow is gpc-train's summary row (gpc.train-summary/1) of p's
// estimate res with tests test rows, its metadata meta: gpc-orthant's row
// with the log marginal likelihood's names, without p (its exp adds
// nothing), and the test rows counted.
func summaryRow(p problem, res *core.Result, cfg core.Config, tests int, meta map[string]string) *format.Table {
	t := orthantRow(res, p.Dim(), p.method(cfg), p.order(), cfg.Seed, p.solve(cfg))
	t.Cols[0].Name, t.Cols[1].Name = "log_ml", "se_log_ml"
	t.Cols = append(t.Cols[:2], t.Cols[3:]...)
	t.Cols = append(t.Cols, format.Column{Name: "test_rows", Int: []int64{int64(tests)}})
	t.Meta = meta
	t.Meta[format.KeySchema] = "gpc.train-summary/1"
	t.Meta[format.KeyGroups] = strconv.Itoa(res.Groups)
	t.Meta[format.KeyGroupSizes] = format.JoinInts(core.GroupSizes(res.Samples, res.Groups))
	t.Meta[format.KeyGroupLogP] = format.JoinFloats(res.GroupLogP)
	t.Meta[format.KeyLogML] = fmtFloat(res.LogP)
	t.Meta[format.KeySELogML] = fmtFloat(res.SE)
	return t
}

// trainMeta is the metadata of gpc-train's outputs on p with cfg that is
// known before the estimate.
func trainMeta(p problem, cfg core.Config) map[string]string {
	meta := p.meta(cfg)
	meta[format.KeyTool] = "gpc-train"
	meta[format.KeySamples] = strconv.Itoa(cfg.Samples)
	return meta
}

// denseProblem is a Factor prepared from a covariance's box as
// estimatorFlags ask.
type denseProblem struct {
	*core.Factor
	flags  *estimatorFlags
	box    core.Box
	pilots []core.Pilot
	inMeta map[string]string
}

func (d *denseProblem) meta(cfg core.Config) map[string]string {
	meta := estimatorMeta(d.Factor, cfg, d.pilots, d.flags.Jitter)
	passMeta(meta, d.inMeta)
	return meta
}

func (d *denseProblem) method(cfg core.Config) string { return cfg.Method.String() }
func (d *denseProblem) order() string                 { return d.Order.String() }
func (d *denseProblem) solve(cfg core.Config) int     { return solveIterations(d.Factor, cfg.Method) }

func (d *denseProblem) fingerprint(tool string, plan core.Config, k int) string {
	return d.flags.estimatorFingerprint(tool, d.box, plan, k)
}

// vecchiaProblem is a Vecchia model (gpc.vecchia/1) prepared for its
// estimator: vecchia.Prepared, or vecchia.PreparedMulticlass where the
// stream names more than two classes.
type vecchiaProblem struct {
	core.Estimator
	s       *format.VecchiaStream
	classes []string     // nil: two classes
	ep      core.EPStats // the preparation's EP rounds
	prep    string       // gpc:vecchia_prepare
	n, t    int          // training rows, test posteriors (a test point's C with classes)
	ess     float64      // --ess as given
	seed    int64        // --seed as given
}

// pathVars is the variables of the problem's kept particle paths
// (format.VecchiaPathVars).
func (v *vecchiaProblem) pathVars() int { return format.VecchiaPathVars(v.n, len(v.classes)) }

func (v *vecchiaProblem) meta(cfg core.Config) map[string]string {
	meta := map[string]string{
		format.KeyVersion:     Version,
		format.KeySeed:        strconv.FormatUint(cfg.Seed, 10),
		format.KeyMethod:      vecchiaMethod,
		format.KeyFingerprint: v.s.Meta[format.KeyFingerprint],
		format.KeyEP:          v.ep.String(),
		"gpc:vecchia_prepare": v.prep,
	}
	passMeta(meta, v.s.Meta)
	return meta
}

func (v *vecchiaProblem) method(core.Config) string { return vecchiaMethod }
func (v *vecchiaProblem) order() string             { return v.s.Meta[format.KeyVecchiaOrder] }
func (v *vecchiaProblem) solve(core.Config) int     { return v.ep.Sweeps }

// tests returns the test posteriors' input rows, ids (nil: none) and
// labels: the stream's test rows, each C times with classes (point p's
// class c at p C + c, as the dense multi-class stream lays them out).
func (v *vecchiaProblem) tests() (rows []int, ids []string, y []float64) {
	rows, y = v.s.Row[v.n:], v.s.Y[v.n:]
	if v.s.ID != nil {
		ids = v.s.ID[v.n:]
	}
	return perClass(rows, ids, y, len(v.classes))
}

// perClass repeats each test row's input row (rows may be nil), id (ids
// may be nil) and label nc times, for the C rows per test point of a
// multi-class cloud and its posteriors (nc above 0; 0: as they are).
func perClass(rows []int, ids []string, y []float64, nc int) ([]int, []string, []float64) {
	if nc == 0 {
		return rows, ids, y
	}
	var er []int
	var eid []string
	ey := make([]float64, 0, len(y)*nc)
	if rows != nil {
		er = make([]int, 0, len(y)*nc)
	}
	if ids != nil {
		eid = make([]string, 0, len(y)*nc)
	}
	for j := range y {
		for range nc {
			ey = append(ey, y[j])
			if rows != nil {
				er = append(er, rows[j])
			}
			if ids != nil {
				eid = append(eid, ids[j])
			}
		}
	}
	return er, eid, ey
}

func (v *vecchiaProblem) fingerprint(tool string, plan core.Config, k int) string {
	return format.ShardFingerprint(tool, v.s.Meta[format.KeyFingerprint],
		fmt.Sprintf("samples=%d groups=%d ess=%v seed=%d", plan.Samples, plan.Groups, v.ess, v.seed),
		"shards="+strconv.Itoa(k), "path="+computePath())
}

// vecchiaMethod is the Vecchia estimator's name in the outputs.
const vecchiaMethod = "vecchia"
