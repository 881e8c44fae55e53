package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

const trainDescription = `Estimate a GP classifier's marginal likelihood and keep the particle cloud for prediction: the second step of the pipeline.

` + pipelineHelp + `

The input is a covariance stream (gpc-kernel's output): its train block is the orthant problem P(v >= 0) whose log probability is the log marginal likelihood. gpc-train runs the estimator on it (as gpc-orthant does) and writes the cloud stream as the estimate runs, never holding it: the train block, the test rows of the input (ahead of the particles when they take at most a quarter of the cloud's memory, else after them), and each group of particles with their log weights as soon as it and the groups before it are done, followed by the group's estimate of log P.

The input may also be a Vecchia model (gpc-kernel --vecchia M, docs/vecchia.md): gpc-train then runs the Vecchia estimator, O(M) per particle and training point (EP-twisted SMC on the sparse model: no --method, --order or --jitter; --prepare-only writes its preparation as a gpc.vecchia-plan/1 stream that --plan reads), and its cloud (gpc.vecchia-cloud/1) holds the test rows and each group's estimate and weighted test posteriors, not the particles (a particle is a value per training point: 80 GB for 10^4 particles at N = 10^6), so gpc-predict combines the posteriors the groups computed as they ended.

With --shard I/K it estimates only shard I of K, a fixed range of the particle groups, and writes a sub-cloud (gpc.cloud-shard/1: the train and test rows and its groups' particles) that gpc-merge joins with the other shards into exactly the unsharded cloud (docs/scale-out.md).

With --prepare-only it writes the preparation (order, factorisation, tilting or EP, pilot runs) as a plan (gpc.plan/1) and stops; --plan FILE reads that plan instead of preparing, so that the shards of a run share one preparation, with the same output byte for byte.

In the metadata: the method, order, seed, samples and groups, the fingerprint of the train block, and the input's kernel and label mapping. The log marginal likelihood and its standard error come from the groups' estimates: gpc-predict's output carries them (gpc:log_ml, gpc:se_log_ml), and with --format table (the default on a terminal) or csv gpc-train writes a summary row with them instead of the cloud.

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
	commonFlags    `embed:""`
}

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
	return c.validateEstimator()
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
	if schema == format.SchemaVecchia {
		return c.runVecchia(e, r, name, mem)
	}
	cr, err := format.NewCovReader(r, name, mem)
	if err != nil {
		return err
	}
	defer cr.Close()
	train := cr.Train()
	cfg := c.config(c.Threads, c.MaxMemory.limit())
	c.plan = &c.planFlags
	if c.PrepareOnly {
		return c.writePlan(e, boxOf(train), name, cfg, c.Progress, mem)
	}
	if out := c.outputFormat(e.stdout); out != format.Arrow && !c.Fingerprint {
		if c.Shard != "" {
			return usagef("--shard writes a shard of the cloud, an Arrow stream for gpc-merge: not --format %s (or redirect standard output)", c.Format)
		}
		return c.summary(e, cr, train, name, cfg, out, mem)
	}
	// The cloud is streamed: each group's particles are written as soon as
	// they and the groups before them are estimated, and never held. Its
	// head (the train block, the factor and the leading test rows) is
	// written while the particles are propagated (below): Sink waits for
	// its outcome.
	var cw *format.CloudWriter
	head := make(chan error, 1)
	headDone, headErr := false, error(nil)
	waitHead := func() error {
		if !headDone {
			headErr, headDone = <-head, true
		}
		return headErr
	}
	cfg.Sink = func(g int, grp *core.CloudGroup) error {
		if err := waitHead(); err != nil {
			return err
		}
		return cw.WriteParticles(g, grp)
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
	f, pilots, err := c.prepare(e, boxOf(train), name, &cfg, c.Progress)
	if err != nil {
		return err
	}
	releaseLarge(f.N) // the preparation's N x N scratch
	plan, err := core.Plan(cfg, f.N)
	if err != nil {
		return err
	}
	if first && int64(ahead.Len())*testRowBytes(train.N) > aheadBytes(plan.Samples, train.N) {
		first = false // the plan's particles are fewer than asked
	}
	meta := c.trainMeta(f, cfg, pilots, train)
	meta[format.KeyGroups] = strconv.Itoa(plan.Groups)
	sizes := core.GroupSizes(plan.Samples, plan.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(sizes)
	// A shard (--shard I/K) holds groups [lo, hi) only.
	si, sk, _ := c.shard()
	lo, hi := 0, plan.Groups
	var fingerprint string
	if sk > 0 {
		if sk > plan.Groups {
			return tooManyShards(si, sk, plan.Groups, "particle groups", "group", " (raise --groups)")
		}
		lo, hi = shardRange(si, sk, plan.Groups)
		fingerprint = format.ShardFingerprint(c.estimatorFingerprint("gpc-train", boxOf(train), plan, sk), "batch-size="+strconv.Itoa(c.BatchSize))
		if c.Fingerprint {
			return printFingerprint(e, fingerprint)
		}
	}
	shardSamples := 0
	for _, m := range sizes[lo:hi] {
		shardSamples += m
	}
	if v, ok := train.Meta[format.KeyRows]; ok {
		if rows, err := strconv.Atoi(v); err == nil {
			rows += f.N // the factor rows
			meta[format.KeyRows] = strconv.Itoa(rows + shardSamples + hi - lo)
			if sk > 0 {
				meta[format.KeyShardRowsOf] = strconv.Itoa(rows + plan.Samples + plan.Groups)
			}
		}
	}
	if sk > 0 {
		meta[format.KeySchema] = format.SchemaCloud
		addShardMeta(meta, format.SchemaCloudShard, si, sk, lo, hi, fingerprint)
	}
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
	group := int64(sizes[0]) * int64(f.N) * 8
	cfg.SinkAhead = int(max(1, min(int64(plan.Groups), min(headAhead, 2*int64(f.N)*int64(f.N))/group)))
	go func() {
		// The factor goes with the particles, so that gpc-predict never
		// prepares it again.
		parts := f.Parts()
		w, err := format.NewCloudWriter(e.stdout, train, &parts, lead, meta, c.BatchSize, mem)
		if err == nil {
			// Written: the train block and R's factor (two N x N
			// matrices) are not needed by the estimate, and their memory
			// goes while gpc-predict, down the pipe, holds its own copies.
			cw = w
			train.Cov = nil
			f.ReleasePredictionParts()
			parts = core.FactorParts{} // its slices too, before the memory goes back
			releaseLarge(f.N)
		}
		head <- err
	}()
	estimate := func() error {
		if sk > 0 {
			e.rep.startProgress(c.Progress, estimateProgress(shardSamples, f.N))
			cfg.Progress = e.rep.add
			_, _, err := core.EstimateGroups(e.ctx, f, cfg, lo, hi)
			cfg.Progress = nil
			e.rep.stopProgress()
			return err
		}
		res, err := c.runEstimate(e, f, &cfg, c.Progress)
		if err == nil && res.Groups != plan.Groups {
			err = fmt.Errorf("internal: %d groups announced, %d estimated", plan.Groups, res.Groups)
		}
		return err
	}
	err = estimate()
	// The head's outcome, whatever the estimate's: the streamer has exited,
	// and waitHead is this goroutine's now.
	if herr := waitHead(); err == nil {
		err = herr
	}
	if err != nil {
		return err
	}
	for t := ahead; !first; {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if t == nil {
			if t, err = cr.NextTest(c.BatchSize); err != nil {
				return err
			}
			if t == nil {
				break
			}
		}
		if err := cw.WriteTest(t); err != nil {
			return err
		}
		t = nil
	}
	return cw.Close()
}

// headAhead bounds the bytes of finished particle groups that gpc-train
// holds while the cloud's head is still being written (Config.SinkAhead).
const headAhead = 256 << 20

// trainMeta is the metadata of gpc-train's outputs that is known before
// the estimate.
func (c *trainCmd) trainMeta(f *core.Factor, cfg core.Config, pilots []core.Pilot, train *format.Covariance) map[string]string {
	meta := estimatorMeta(f, cfg, pilots, c.Jitter)
	passMeta(meta, train.Meta)
	meta[format.KeyTool] = "gpc-train"
	meta[format.KeyFingerprint] = format.Fingerprint(train.Cov)
	meta[format.KeySamples] = strconv.Itoa(cfg.Samples)
	return meta
}

// summary estimates without keeping the particles and writes one row
// describing the training run (and counts the test rows, reading them
// through).
func (c *trainCmd) summary(e *env, cr *format.CovReader, train *format.Covariance, name string, cfg core.Config, out format.Format, mem format.Allocator) error {
	if err := checkEstimateMemory(name, train.N, &cfg, candidates(c.Method, c.Order), false); err != nil {
		return err
	}
	f, pilots, err := c.prepare(e, boxOf(train), name, &cfg, c.Progress)
	if err != nil {
		return err
	}
	res, err := c.runEstimate(e, f, &cfg, c.Progress)
	if err != nil {
		return err
	}
	meta := c.trainMeta(f, cfg, pilots, train)
	meta[format.KeyGroups] = strconv.Itoa(res.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(core.GroupSizes(res.Samples, res.Groups))
	meta[format.KeyGroupLogP] = format.JoinFloats(res.GroupLogP)
	meta[format.KeyLogML] = fmtFloat(res.LogP)
	meta[format.KeySELogML] = fmtFloat(res.SE)
	tests := 0
	for {
		t, err := cr.NextTest(c.BatchSize)
		if err != nil {
			return err
		}
		if t == nil {
			break
		}
		tests += t.Len()
	}
	t := orthantTable(&res, f, cfg)
	t.Cols[0].Name, t.Cols[1].Name = "log_ml", "se_log_ml"
	t.Cols = append(t.Cols[:2], t.Cols[3:]...) // no p: the likelihood's exp adds nothing
	t.Cols = append(t.Cols, format.Column{Name: "test_rows", Int: []int64{int64(tests)}})
	t.Meta = meta
	t.Meta[format.KeySchema] = "gpc.train-summary/1"
	return format.WriteTable(e.stdout, t, out, 0, mem)
}
