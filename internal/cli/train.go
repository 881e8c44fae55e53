package cli

import (
	"errors"
	"io"
	"strconv"

	"gpc/core"
	"gpc/format"
)

const trainDescription = `Estimate a GP classifier's marginal likelihood and keep the particle cloud for prediction: the second step of the pipeline.

` + pipelineHelp + `

The input is a covariance stream (gpc-kernel's output): its train block is the orthant problem P(v >= 0) whose log probability is the log marginal likelihood. gpc-train runs the estimator on it (as gpc-orthant does) and writes the cloud stream: the train block, every particle with its log weight and group, then the test rows of the input, passed through as they are read.

In the metadata: gpc:log_ml and gpc:se_log_ml, the method, order, seed, samples and groups, the fingerprint of the train block, and the input's kernel and label mapping. With --format table (the default on a terminal) or csv it writes a summary row instead of the cloud.

` + examplesHelp + `
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train --samples 20000 | gpc-predict
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train --format table   # log_ml only
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train > cloud.arrows   # save the cloud

` + exitHelp

// trainCmd is gpc-train's command line.
type trainCmd struct {
	Input string `arg:"" optional:"" default:"-" help:"Covariance stream (gpc-kernel's output); - or nothing reads standard input."`
	estimatorFlags
	BatchSize int `default:"4096" help:"Rows per Arrow record batch."`
	commonFlags
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
	if c.BatchSize < 1 {
		return usagef("--batch-size %d: must be at least 1", c.BatchSize)
	}
	return c.validateEstimator()
}

func (c *trainCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	mem := format.NewAllocator()
	cr, err := format.NewCovReader(r, name, mem)
	if err != nil {
		return err
	}
	defer cr.Close()
	train := cr.Train()
	cfg := c.config(c.Threads)
	out := c.outputFormat(e.stdout)
	cfg.Keep = out == format.Arrow // a summary needs no cloud
	if err := checkEstimateMemory(name, train.N, &cfg, candidates(c.Method, c.Order), cfg.Keep); err != nil {
		return err
	}
	f, pilots, err := c.prepare(e, boxOf(train), name, &cfg)
	if err != nil {
		return err
	}
	res, err := c.runEstimate(e, f, &cfg, c.Progress)
	var me *core.MemoryError
	inParts := false
	if errors.As(err, &me) && cfg.Keep {
		// The cloud does not fit: estimate without keeping it, then
		// regenerate its groups in parts as they are written.
		e.rep.warnf("the cloud needs %.3g GB, more than --max-memory (%.3g GB): it is regenerated in parts as it is written, which doubles the run time", float64(me.Need)/1e9, float64(me.Limit)/1e9)
		cfg.Keep, inParts = false, true
		res, err = c.runEstimate(e, f, &cfg, c.Progress)
	}
	if err != nil {
		return err
	}
	meta := estimatorMeta(f, cfg, pilots, c.Jitter)
	passMeta(meta, train.Meta)
	meta[format.KeyTool] = "gpc-train"
	meta[format.KeyFingerprint] = format.Fingerprint(train.Cov)
	meta[format.KeySamples] = strconv.Itoa(res.Samples)
	meta[format.KeyGroups] = strconv.Itoa(res.Groups)
	meta[format.KeyGroupSizes] = format.JoinInts(core.GroupSizes(res.Samples, res.Groups))
	meta[format.KeyGroupLogP] = format.JoinFloats(res.GroupLogP)
	meta[format.KeyLogML] = fmtFloat(res.LogP)
	meta[format.KeySELogML] = fmtFloat(res.SE)
	if v, ok := train.Meta[format.KeyRows]; ok {
		if rows, err := strconv.Atoi(v); err == nil {
			meta[format.KeyRows] = strconv.Itoa(rows + res.Samples)
		}
	}
	if out != format.Arrow {
		return c.summary(e, cr, &res, f, cfg, meta, out, mem)
	}
	// The test rows go before the particles when they are small beside
	// the cloud, so that gpc-predict predicts them as the particles stream
	// past instead of holding the cloud; otherwise after them.
	ahead, first, err := readTests(cr, c.BatchSize, aheadBytes(res.Samples, train.N), false, name)
	if err != nil {
		return err
	}
	enlargePipe(e.stdout)
	var lead *format.TestRows
	if first {
		lead = ahead
	}
	cw, err := format.NewCloudWriter(e.stdout, train, lead, meta, c.BatchSize, mem)
	if err != nil {
		return err
	}
	if inParts {
		if err := c.writeInParts(e, cw, f, cfg, res.Groups); err != nil {
			return err
		}
	} else {
		for g := range res.Cloud.Groups {
			if err := e.ctx.Err(); err != nil {
				return err
			}
			if err := cw.WriteParticles(g, &res.Cloud.Groups[g]); err != nil {
				return err
			}
			res.Cloud.Groups[g] = core.CloudGroup{} // written: let it go
		}
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

// writeInParts regenerates the cloud of an estimate that did not fit in
// memory, as many groups at a time as fit, and writes them: the same
// particles, bit for bit, as a run that kept them (core.EstimateRange).
func (c *trainCmd) writeInParts(e *env, cw *format.CloudWriter, f *core.Factor, cfg core.Config, groups int) error {
	cfg.Keep, cfg.Groups = true, groups
	batch := core.GroupsInMemory(cfg, f.N)
	if batch < 1 {
		sizes := core.GroupSizes(cfg.Samples, groups)
		return &core.MemoryError{Need: core.CloudBytes(sizes[0], f.N), Limit: cfg.MaxMemory, What: "one particle group with its working memory"}
	}
	p := estimateProgress(cfg.Samples, f.N)
	what := p.what
	p.what = func(done int64) string { return "regenerating the cloud: " + what(done) }
	e.rep.startProgress(c.Progress, p)
	defer e.rep.stopProgress()
	cfg.Progress = e.rep.add
	for a := 0; a < groups; a += batch {
		b := min(groups, a+batch)
		cl, err := core.EstimateRange(e.ctx, f, cfg, a, b)
		if err != nil {
			return err
		}
		for k := range cl.Groups {
			if err := e.ctx.Err(); err != nil {
				return err
			}
			if err := cw.WriteParticles(a+k, &cl.Groups[k]); err != nil {
				return err
			}
			cl.Groups[k] = core.CloudGroup{}
		}
	}
	return nil
}

// summary writes one row describing the training run (and counts the test
// rows, reading them through).
func (c *trainCmd) summary(e *env, cr *format.CovReader, res *core.Result, f *core.Factor, cfg core.Config, meta map[string]string, out format.Format, mem format.Allocator) error {
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
	t := orthantTable(res, f, cfg)
	t.Cols[0].Name, t.Cols[1].Name = "log_ml", "se_log_ml"
	t.Cols = append(t.Cols[:2], t.Cols[3:]...) // no p: the likelihood's exp adds nothing
	t.Cols = append(t.Cols, format.Column{Name: "test_rows", Int: []int64{int64(tests)}})
	t.Meta = meta
	t.Meta[format.KeySchema] = "gpc.train-summary/1"
	return format.WriteTable(e.stdout, t, out, 0, mem)
}
