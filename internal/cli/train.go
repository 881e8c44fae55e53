package cli

import (
	"io"
	"math"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

const trainDescription = `Estimate a GP classifier's marginal likelihood and keep the particle cloud for prediction: the second step of the pipeline.

` + pipelineHelp + `

The input is a covariance stream (gpc-kernel's output): its train block is the orthant problem P(v >= 0) whose log probability is the log marginal likelihood. gpc-train runs the estimator on it (as gpc-orthant does) and writes the cloud stream as the estimate runs, never holding it: the train block, the test rows of the input (ahead of the particles when they take at most a quarter of the cloud's memory, else after them), and each group of particles with their log weights as soon as it and the groups before it are done, followed by the group's estimate of log P.

The input may also be a Vecchia model (gpc-kernel --vecchia m, docs/vecchia.md): gpc-train then runs the Vecchia estimator, O(m) per particle and training point for m neighbours (EP-twisted SMC on the sparse model: no --method, --order or --jitter; --prepare-only writes its preparation as a gpc.vecchia-plan/1 stream that --plan reads), and its cloud (gpc.vecchia-cloud/1) holds the test rows and each group's estimate and weighted test posteriors, not all the particles (a particle is a value per training point: 40 GB for 10^4 particles at N = 10^6 in float32), so gpc-predict combines the posteriors the groups computed as they ended (with more than two classes, each test point's C class probabilities; their standard error holds, 93-97 % of intervals covering, from about 625 particles a group, --samples 40000 with 64 groups, and covers about 92 % at the default's 156: docs/vecchia.md, Calibration). To predict new rows later, the cloud keeps --keep K particle paths (float32, drawn by each group from its final weights; by default 4000 when the model has no test rows, none otherwise): 4 N K bytes, 1.6 GB at N = 10^5 (with C classes a path holds each point's C - 1 class contrasts: 4 N (C - 1) K bytes), and gpc-predict --cloud predicts from them the test rows of a model of the same training data (docs/vecchia.md). A shard (--shard) keeps its groups' share, and gpc-merge joins the shards' paths into the unsharded cloud's.

With --shard I/K it estimates only shard I of K, a fixed range of the particle groups, and writes a sub-cloud (gpc.cloud-shard/1: the train and test rows and its groups' particles) that gpc-merge joins with the other shards into exactly the unsharded cloud (docs/scale-out.md).

With --prepare-only it writes the preparation (order, factorisation, tilting or EP, pilot runs) as a plan (gpc.plan/1) and stops; --plan FILE reads that plan instead of preparing, so that the shards of a run share one preparation, with the same output byte for byte.

In the metadata: the method, order, seed, samples and groups, the fingerprint of the train block, and the input's kernel and label mapping. The log marginal likelihood and its standard error come from the groups' estimates: gpc-predict's output carries them (gpc:log_ml, gpc:se_log_ml), and with --format table (the default on a terminal) or csv gpc-train writes a summary row with them instead of the cloud.

` + largeNHelp + `

` + examplesHelp + `
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train --samples 20000 | gpc-predict
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train --format table   # log_ml only
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train > cloud.arrows   # save the cloud

` + exitHelp

// trainCmd is gpc-train's command line.
type trainCmd struct {
	Input          string `arg:"" optional:"" default:"-" help:"Covariance stream (gpc-kernel's output); - or nothing reads standard input."`
	estimatorFlags `embed:"" set:"samples=10000"`
	memoryFlags    `embed:""`
	batchFlags     `embed:""`
	shardFlags     `embed:""`
	planFlags      `embed:""`
	Keep           string `default:"auto" placeholder:"K" help:"On a Vecchia model: the particle paths the cloud keeps for predicting new rows later (gpc-predict --cloud), K in all, split over the groups and drawn by each from its final weights; 0 keeps none. auto (the default): 4000 when the model has no test rows (fewer past N (C - 1) = 134217 for C classes, so that the cloud stays within 2 GiB, with a warning), else none; at least one per particle group. The cloud grows by 4 N K bytes (1.6 GB for K = 4000 at N = 10^5), 4 N (C - 1) K with C classes."`
	commonFlags    `embed:""`
}

// defaultKeep is the particle paths a Vecchia cloud keeps for later
// prediction when the model has no test rows (--keep auto): a test row's
// posterior from K equally weighted paths differs from the training
// pass's by the resampling's error, at most 0.5/sqrt(K) (0.008 at 4000;
// measured at N = 10^5: docs/vecchia.md), and the cloud holds 4 N K bytes
// (1.6 GB at N = 10^5, within the 2 GB the predict-later design allows).
const defaultKeep = 4000

// maxAutoKeepBytes bounds the paths --keep auto keeps: beyond N = 134217
// (4000 paths of 4 N bytes in 2 GiB) it keeps fewer, and says so.
const maxAutoKeepBytes = 2 << 30

// Train runs gpc-train.
func Train(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-train", trainDescription, &trainCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *trainCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	if err := c.validateBatch(); err != nil {
		return err
	}
	if _, _, err := c.shard(); err != nil {
		return err
	}
	if err := c.validatePlan(c.Shard, c.Input); err != nil {
		return err
	}
	if _, err := c.keep(); err != nil {
		return err
	}
	return c.validateEstimator()
}

// keep is --keep: a count, or -1 for auto.
func (c *trainCmd) keep() (int, error) {
	if c.Keep == "auto" {
		return -1, nil
	}
	k, err := strconv.Atoi(c.Keep)
	if err != nil || k < 0 {
		return 0, usagef("--keep %s: give a count of particle paths (0 keeps none) or auto", c.Keep)
	}
	return k, nil
}

func (c *trainCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	defer lowerGC()()
	mem := format.NewAllocator()
	schema, r, err := format.Sniff(r, name)
	if err != nil {
		return err
	}
	cfg := c.config(c.Threads, c.MaxMemory.limit())
	c.plan = &c.planFlags
	if schema == format.SchemaVecchia {
		return c.runVecchia(e, r, name, cfg, mem)
	}
	if k, _ := c.keep(); k >= 0 {
		return usagef("--keep %s: %s is a covariance stream, whose cloud keeps every particle: --keep is for a Vecchia model's cloud (gpc-kernel --vecchia): drop it", c.Keep, name)
	}
	cr, err := format.NewCovReader(r, name, mem)
	if err != nil {
		return err
	}
	defer cr.Close()
	if c.PrepareOnly {
		return c.writePlan(e, boxOf(cr.Train()), name, cfg, c.Progress, mem)
	}
	summary, err := c.summaryOnly(e)
	if err != nil {
		return err
	}
	if summary {
		return c.denseSummary(e, cr, name, cfg, mem)
	}
	return c.streamCloud(e, cr, name, cfg, mem)
}

// summaryOnly reports whether gpc-train writes its summary row instead of
// the cloud (--format table or csv), which a shard cannot.
func (c *trainCmd) summaryOnly(e *env) (bool, error) {
	out := c.outputFormat(e.stdout)
	if out == format.Arrow || c.Fingerprint {
		return false, nil
	}
	if c.Shard != "" {
		return false, usagef("--shard writes a shard of the cloud, an Arrow stream for gpc-merge: not --format %s (or redirect standard output)", c.Format)
	}
	return true, nil
}

// writeSummary estimates p without keeping its groups' outputs and
// writes one row describing the training run; tests counts the test rows
// (after the estimate: gpc-train reads a covariance stream's through).
func (c *trainCmd) writeSummary(e *env, p problem, cfg core.Config, meta map[string]string, tests func() (int, error), mem format.Allocator) error {
	res, err := estimate(e, p, cfg, c.Progress)
	if err != nil {
		return err
	}
	t, err := tests()
	if err != nil {
		return err
	}
	return format.WriteTable(e.stdout, summaryRow(p, &res, cfg, t, meta), c.outputFormat(e.stdout), 0, mem)
}

// denseSummary is writeSummary of a covariance stream's train block.
func (c *trainCmd) denseSummary(e *env, cr *format.CovReader, name string, cfg core.Config, mem format.Allocator) error {
	train := cr.Train()
	if err := checkEstimateMemory(name, train.N, &cfg, candidates(c.Method, c.Order), false); err != nil {
		return err
	}
	p, err := c.prepareDense(e, boxOf(train), train.Meta, name, &cfg, c.Progress)
	if err != nil {
		return err
	}
	meta := trainMeta(p, cfg)
	meta[format.KeyFingerprint] = format.Fingerprint(train.Cov)
	return c.writeSummary(e, p, cfg, meta, func() (int, error) {
		tests := 0
		for {
			t, err := cr.NextTest(c.BatchSize)
			if err != nil || t == nil {
				return tests, err
			}
			tests += t.Len()
		}
	}, mem)
}

// trainShard is the particle groups gpc-train's output holds: [lo, hi),
// all of them, or with --shard I/K (k > 0) shard i's, whose fingerprint
// is fp.
type trainShard struct {
	i, k, lo, hi int
	fp           string
}

// shardOf is the groups of p's estimate as planned that gpc-train's
// output holds.
func (c *trainCmd) shardOf(p problem, plan core.Config) (trainShard, error) {
	si, sk, _ := c.shard()
	if sk == 0 {
		return trainShard{lo: 0, hi: plan.Groups}, nil
	}
	lo, hi, err := groupShard(si, sk, plan)
	if err != nil {
		return trainShard{}, err
	}
	fp := format.ShardFingerprint(p.fingerprint("gpc-train", plan, sk), "batch-size="+strconv.Itoa(c.BatchSize))
	return trainShard{si, sk, lo, hi, fp}, nil
}

// estimate runs the shard's groups of p's estimate as planned, their
// outputs going to cfg.Sink, warning (unsharded) where the standard error
// cannot be trusted.
func (c *trainCmd) estimate(e *env, p problem, cfg, plan core.Config, sh trainShard) error {
	outs, err := estimateGroups(e, p, cfg, plan, sh.lo, sh.hi, c.Progress)
	if err == nil && sh.k == 0 {
		summarize(e, plan, outs)
	}
	return err
}

// streamCloud estimates a covariance stream's train block and writes the
// cloud as the estimate runs: each group's particles as soon as they and
// the groups before them are estimated, never holding them. The cloud's
// head (the train block, the factor and the leading test rows) is
// written while the particles are propagated (cloudHead): the Sink waits
// for it.
func (c *trainCmd) streamCloud(e *env, cr *format.CovReader, name string, cfg core.Config, mem format.Allocator) error {
	train := cr.Train()
	head := &cloudHead{done: make(chan error, 1)}
	cfg.Sink = func(g int, _ core.GroupResult, grp *core.CloudGroup) error {
		if err := head.wait(); err != nil {
			return err
		}
		return head.cw.WriteParticles(g, grp)
	}
	if err := checkEstimateMemory(name, train.N, &cfg, candidates(c.Method, c.Order), false); err != nil {
		return err
	}
	// The test rows go before the particles when they are small beside
	// the cloud, so that gpc-predict predicts them as the particles stream
	// past instead of holding the cloud; otherwise after them. They are
	// read (as many as may go first) before the preparation, so that the
	// tool upstream finishes and lets go of its memory meanwhile.
	ahead, first, err := readTests(cr, c.BatchSize, aheadBytes(cfg.Samples, train.N), false, name)
	if err != nil {
		return err
	}
	p, err := c.prepareDense(e, boxOf(train), train.Meta, name, &cfg, c.Progress)
	if err != nil {
		return err
	}
	releaseLarge(p.N) // the preparation's N x N scratch
	plan, err := planned(p, cfg)
	if err != nil {
		return err
	}
	if first && int64(ahead.Len())*testRowBytes(train.N) > aheadBytes(plan.Samples, train.N) {
		first = false // the plan's particles are fewer than asked
	}
	sh, err := c.shardOf(p, plan)
	if err != nil {
		return err
	}
	if c.Fingerprint {
		return printFingerprint(e, sh.fp)
	}
	meta := c.cloudMeta(p, cfg, plan, sh, train)
	var lead *format.TestRows
	if first {
		lead = ahead
	}
	enlargePipe(e.stdout)
	// The head goes out while the first groups run (at N = 10^4 it is
	// 1.6 GB, seconds through a pipe to gpc-predict): finished groups wait
	// for it, up to an eighth of its bytes (the train block and the factor:
	// about 2 N^2 values, whose memory goes once they are written) and
	// headAhead.
	group := int64(core.GroupSizes(plan.Samples, plan.Groups)[0]) * int64(p.N) * 8
	cfg.SinkAhead = int(max(1, min(int64(plan.Groups), min(headAhead, 2*int64(p.N)*int64(p.N))/group)))
	go head.write(e, train, p.Factor, lead, meta, c.BatchSize, mem)
	err = c.estimate(e, p, cfg, plan, sh)
	// The head's outcome, whatever the estimate's: the hand-over has
	// exited, and head.wait is this goroutine's now.
	if herr := head.wait(); err == nil {
		err = herr
	}
	if err != nil {
		return err
	}
	if !first {
		if err := c.writeTests(e, cr, head.cw, ahead); err != nil {
			return err
		}
	}
	return head.cw.Close()
}

// cloudMeta is the dense cloud's metadata: trainMeta's, the groups as
// planned, the rows of the shard's stream (where the input says how many
// rows it has) and the shard's keys.
func (c *trainCmd) cloudMeta(p *denseProblem, cfg, plan core.Config, sh trainShard, train *format.Covariance) map[string]string {
	meta := trainMeta(p, cfg)
	meta[format.KeyFingerprint] = format.Fingerprint(train.Cov)
	meta[format.KeyGroups] = strconv.Itoa(plan.Groups)
	sizes := core.GroupSizes(plan.Samples, plan.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(sizes)
	shardSamples := 0
	for _, m := range sizes[sh.lo:sh.hi] {
		shardSamples += m
	}
	if v, ok := train.Meta[format.KeyRows]; ok {
		if rows, err := strconv.Atoi(v); err == nil {
			rows += p.N // the factor rows
			meta[format.KeyRows] = strconv.Itoa(rows + shardSamples + sh.hi - sh.lo)
			if sh.k > 0 {
				meta[format.KeyShardRowsOf] = strconv.Itoa(rows + plan.Samples + plan.Groups)
			}
		}
	}
	if sh.k > 0 {
		meta[format.KeySchema] = format.SchemaCloud
		addShardMeta(meta, format.SchemaCloudShard, sh.i, sh.k, sh.lo, sh.hi, sh.fp)
	}
	return meta
}

// writeTests writes the test rows after the particles: those read ahead,
// then the rest of the input's.
func (c *trainCmd) writeTests(e *env, cr *format.CovReader, cw *format.CloudWriter, ahead *format.TestRows) error {
	for t := ahead; ; t = nil {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if t == nil {
			var err error
			if t, err = cr.NextTest(c.BatchSize); err != nil {
				return err
			}
			if t == nil {
				return nil
			}
		}
		if err := cw.WriteTest(t); err != nil {
			return err
		}
	}
}

// cloudHead is the head of a dense cloud (the train block, the factor and
// the leading test rows), written by write while the first groups run;
// wait returns its outcome.
type cloudHead struct {
	cw     *format.CloudWriter
	done   chan error
	waited bool
	err    error
}

// wait waits for the head to be written and returns write's error.
func (h *cloudHead) wait() error {
	if !h.waited {
		h.err, h.waited = <-h.done, true
	}
	return h.err
}

// write writes the head. The factor goes with the particles, so that
// gpc-predict never prepares it again. Once written, the train block and
// R's factor (two N x N matrices) are not needed by the estimate, and
// their memory goes while gpc-predict, down the pipe, holds its own
// copies.
func (h *cloudHead) write(e *env, train *format.Covariance, f *core.Factor, lead *format.TestRows, meta map[string]string, batch int, mem format.Allocator) {
	parts := f.Parts()
	w, err := format.NewCloudWriter(e.stdout, train, &parts, lead, meta, batch, mem)
	if err == nil {
		h.cw = w
		train.Cov = nil
		f.ReleasePredictionParts()
		parts = core.FactorParts{} // its slices too, before the memory goes back
		releaseLarge(f.N)
	}
	h.done <- err
}

// headAhead bounds the bytes of finished particle groups that gpc-train
// holds while the cloud's head is still being written (Config.SinkAhead).
const headAhead = 256 << 20

// Keys of the Vecchia cloud's metadata.
const (
	keyESSThreshold = "gpc:ess_threshold" // the resampling threshold as planned, a fraction of a group
)

// runVecchia estimates a Vecchia model's log marginal likelihood and its
// test rows' posteriors: the Vecchia cloud (gpc.vecchia-cloud/1), its
// groups' estimates and posteriors streamed as they end, or with
// --format table or csv a summary row.
func (c *trainCmd) runVecchia(e *env, r io.Reader, name string, cfg core.Config, mem format.Allocator) error {
	if err := c.vecchiaChecks(name); err != nil {
		return err
	}
	summary, err := c.summaryOnly(e)
	if err != nil {
		return err
	}
	p, err := c.prepareVecchia(e, r, name, c.Progress, mem)
	if err != nil {
		return err
	}
	if c.PrepareOnly {
		return c.writeVecchiaPlan(e, p, cfg, mem)
	}
	keep := 0
	if !summary {
		if keep, err = c.keepPaths(p); err != nil {
			return err
		}
	}
	plan, err := planned(p, cfg)
	if err != nil {
		return err
	}
	meta := trainMeta(p, cfg)
	meta[format.KeyN] = strconv.Itoa(p.n)
	meta[format.KeyTests] = strconv.Itoa(p.t)
	meta[format.KeyGroups] = strconv.Itoa(plan.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(core.GroupSizes(plan.Samples, plan.Groups))
	meta[format.KeyOrderKind] = p.order()
	meta[keyESSThreshold] = strconv.FormatFloat(plan.ESSThreshold, 'g', -1, 64)
	if summary {
		return c.writeSummary(e, p, cfg, meta, func() (int, error) { return p.t, nil }, mem)
	}
	meta[format.KeySchema] = format.SchemaVecchiaCloud
	sh, err := c.shardOf(p, plan)
	if err != nil {
		return err
	}
	if keep, err = c.keepPerGroup(e, keep, plan.Groups, p.pathVars(), p.n); err != nil {
		return err
	}
	// Each group's kept paths, and the rows they take: a shard's
	// groups' in its cloud, every group's in the merged one.
	var kept []int
	pathRows := 0
	if keep > 0 {
		kept = vecchia.KeptSizes(keep, core.GroupSizes(plan.Samples, plan.Groups))
		for _, k := range kept {
			pathRows += format.VecchiaPathRows(p.pathVars(), k)
		}
		if sh.k > 0 {
			// Shards keeping other paths must not merge.
			sh.fp = format.ShardFingerprint(sh.fp, "keep="+strconv.Itoa(keep))
		}
	}
	if c.Fingerprint {
		return printFingerprint(e, sh.fp)
	}
	if sh.k > 0 {
		addShardMeta(meta, format.SchemaVecchiaCloudShard, sh.i, sh.k, sh.lo, sh.hi, sh.fp)
		meta[format.KeyShardRowsOf] = strconv.Itoa(p.t + plan.Groups + pathRows)
		meta[format.KeyShardBatch] = strconv.Itoa(c.BatchSize)
	}
	rowCount := p.t + sh.hi - sh.lo
	if kept != nil {
		meta[format.KeyKeptPaths] = format.JoinInts(kept[sh.lo:sh.hi])
		for _, k := range kept[sh.lo:sh.hi] {
			rowCount += format.VecchiaPathRows(p.pathVars(), k)
		}
	}
	meta[format.KeyRows] = strconv.Itoa(rowCount)
	rows, ids, y := p.tests()
	enlargePipe(e.stdout)
	cw, err := format.NewVecchiaCloudWriter(e.stdout, meta, rows, ids, y, c.BatchSize, mem)
	if err != nil {
		return err
	}
	cfg.Sink = func(g int, out core.GroupResult, grp *core.CloudGroup) error {
		if err := cw.WriteGroup(g, out, grp.Post); err != nil || kept == nil || kept[g] == 0 {
			return err
		}
		return cw.WritePaths(g, p.pathVars(), grp.Paths, grp.PathW)
	}
	if err := c.estimate(e, p, cfg, plan, sh); err != nil {
		return err
	}
	return cw.Close()
}

// keepPaths sets the particle paths a Vecchia model's estimate keeps in
// all for later prediction (--keep; auto: defaultKeep where the model has
// no test rows), before the estimate is planned (the kept paths take
// memory), and returns it. A shard keeps its groups' share (gpc-merge
// joins them).
func (c *trainCmd) keepPaths(p *vecchiaProblem) (int, error) {
	k, _ := c.keep()
	if k < 0 {
		k = 0
		if p.t == 0 {
			k = min(defaultKeep, maxAutoKeepBytes/(4*max(p.pathVars(), 1)))
		}
	}
	if k == 0 {
		return 0, nil
	}
	switch est := p.Estimator.(type) {
	case *vecchia.Prepared:
		est.KeepPaths = k
	case *vecchia.PreparedMulticlass:
		est.KeepPaths = k
	}
	return k, nil
}

// keepPerGroup checks the kept paths against the groups, every one of
// which keeps at least one: a --keep below the group count is refused,
// auto's is raised to it; and says when auto keeps fewer than defaultKeep
// (a cloud of at most maxAutoKeepBytes), for paths of vars values on n
// training rows.
func (c *trainCmd) keepPerGroup(e *env, keep, groups, vars, n int) (int, error) {
	if keep == 0 {
		return 0, nil
	}
	if c.Keep != "auto" && keep < groups {
		return 0, usagef("--keep %s: the estimate runs %d particle groups and each keeps at least one path: give at least %d (or 0 for none)", c.Keep, groups, groups)
	}
	keep = max(keep, groups)
	if c.Keep == "auto" && keep < defaultKeep {
		e.rep.warnf("--keep auto keeps %d particle paths (a %.1f GB cloud at N = %d), not %d: a later prediction is then within about %.3f of the training pass's (0.5/sqrt(K)); --keep K asks for more", keep, float64(keep)*4*float64(vars)/1e9, n, defaultKeep, 0.5/math.Sqrt(float64(keep)))
	}
	return keep, nil
}
