package cli

import (
	"io"
	"math"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

const orthantDescription = `Estimate a Gaussian box probability P(lower <= v <= upper), v ~ N(mean, R), in log space with a standard error.

` + pipelineHelp + `

The input is a covariance stream (an Arrow IPC stream or file with a "cov" list column and optional lower, upper and mean columns; by default the orthant v >= 0), a square matrix as N numeric Arrow columns, or a CSV matrix with or without a header (columns named lower, upper, mean are then per-variable bounds and mean). The form is detected from the content. Rows after the N x N train block (test rows from gpc-kernel) are ignored: for a GP-classification covariance the result is the log marginal likelihood.

A Vecchia model (gpc-kernel --vecchia m, docs/vecchia.md) is read too: the result is its training rows' probability, the Vecchia classifier's log marginal likelihood, by the Vecchia estimator (O(m) per particle and variable for m neighbours; method vecchia).

With --shard I/K it computes only shard I of K: a fixed range of the particle groups (the preparation, deterministic, is done by every shard, or once: --prepare-only writes it as a plan that --plan reads), written as a gpc.orthant-shard/1 stream that gpc-merge combines with the other shards into exactly this output (docs/scale-out.md).

The output is one row: log_p, se_log_p, p, n, samples, groups, method, order, seed, and the diagnostics min_ess (the smallest effective sample size met, as a fraction of a group), resamples (resampling steps), ancestors (distinct ancestors of the final particles at the first variable) and solve_iterations (EP sweeps for ep, Newton iterations for met).

` + largeNHelp + `

` + examplesHelp + `
  gpc-orthant examples/onefactor-100.csv                 # a 100 x 100 CSV matrix; exact log P = -71.85754
  gpc-orthant --samples 100000 --format csv examples/onefactor-100.csv
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-orthant   # log marginal likelihood
  gpc-orthant --shard 0/2 examples/onefactor-100.csv > shard-0.arrows   # half the particle groups (gpc-merge joins the halves)
  gpc-orthant --shard 1/2 examples/onefactor-100.csv > shard-1.arrows   # the other half, on another machine
  gpc-orthant --prepare-only examples/onefactor-100.csv > plan.arrows   # the preparation once, for every shard's --plan

` + exitHelp

// orthantCmd is gpc-orthant's command line.
type orthantCmd struct {
	Input          string `arg:"" optional:"" default:"-" help:"Covariance input: Arrow IPC stream or file, or CSV; - or nothing reads standard input."`
	estimatorFlags `embed:"" set:"samples=10000"`
	memoryFlags    `embed:""`
	shardFlags     `embed:""`
	planFlags      `embed:""`
	commonFlags    `embed:""`
}

// Orthant runs gpc-orthant with the given arguments and standard streams and
// returns its exit status.
func Orthant(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-orthant", orthantDescription, &orthantCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing (kong calls it).
func (c *orthantCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
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

func (c *orthantCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	defer lowerGC()()
	mem := format.NewAllocator()
	cfg := c.config(c.Threads, c.MaxMemory.limit())
	c.plan = &c.planFlags
	p, err := c.problem(e, r, name, &cfg, mem)
	if err != nil || p == nil {
		return err
	}
	if c.Shard != "" {
		return c.runShard(e, p, cfg, mem)
	}
	res, err := estimate(e, p, cfg, c.Progress)
	if err != nil {
		return err
	}
	return format.WriteTable(e.stdout, problemRow(p, &res, cfg), c.outputFormat(e.stdout), 0, mem)
}

// problem reads the input, a covariance or a Vecchia model, and prepares
// its estimator; with --prepare-only it writes the plan instead and
// returns no problem.
func (c *orthantCmd) problem(e *env, r io.Reader, name string, cfg *core.Config, mem format.Allocator) (problem, error) {
	schema, r, err := format.Sniff(r, name)
	if err != nil {
		return nil, err
	}
	if schema == format.SchemaVecchia {
		return c.prepareVecchia(e, r, name, cfg, c.Progress, mem)
	}
	cov, err := format.ReadCovariance(r, name, mem)
	if err != nil {
		return nil, err
	}
	if c.PrepareOnly {
		return nil, c.writePlan(e, boxOf(cov), name, *cfg, c.Progress, mem)
	}
	if err := checkEstimateMemory(name, cov.N, cfg, candidates(c.Method, c.Order), false); err != nil {
		return nil, err
	}
	return c.prepareDense(e, boxOf(cov), cov.Meta, name, cfg, c.Progress)
}

// runShard computes shard I of K of the estimate, the particle groups of
// its range, and writes them as a gpc.orthant-shard/1 stream: one row per
// group with what core.Summarize needs.
func (c *orthantCmd) runShard(e *env, p problem, cfg core.Config, mem format.Allocator) error {
	plan, err := planned(p, cfg)
	if err != nil {
		return err
	}
	i, k, _ := c.shard()
	lo, hi, err := groupShard(i, k, plan)
	if err != nil {
		return err
	}
	fp := p.fingerprint("gpc-orthant", plan, k)
	if c.Fingerprint {
		return printFingerprint(e, fp)
	}
	outs, err := estimateGroups(e, p, cfg, plan, lo, hi, c.Progress)
	if err != nil {
		return err
	}
	return format.WriteTable(e.stdout, orthantShard(p, cfg, plan, i, k, lo, hi, fp, outs), c.outputFormat(e.stdout), 0, mem)
}

// orthantRow is gpc-orthant's one-row result (schema gpc.orthant/1) from
// the values it shows (what gpc-merge has of a sharded run).
func orthantRow(res *core.Result, n int, method, order string, seed uint64, solve int) *format.Table {
	meta := map[string]string{
		format.KeySchema: format.SchemaOrthant,
		format.KeyTool:   "gpc-orthant",
	}
	return &format.Table{Meta: meta, Cols: []format.Column{
		{Name: "log_p", Float: []float64{res.LogP}},
		{Name: "se_log_p", Float: []float64{res.SE}},
		{Name: "p", Float: []float64{math.Exp(res.LogP)}},
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "samples", Int: []int64{int64(res.Samples)}},
		{Name: "groups", Int: []int64{int64(res.Groups)}},
		{Name: "method", Str: []string{method}},
		{Name: "order", Str: []string{order}},
		{Name: "seed", Int: []int64{int64(seed)}},
		{Name: "min_ess", Float: []float64{res.MinESS}},
		{Name: "resamples", Int: []int64{int64(res.Resamples)}},
		{Name: "ancestors", Int: []int64{int64(res.Ancestors)}},
		{Name: "solve_iterations", Int: []int64{int64(solve)}},
	}}
}

// solveIterations is the iteration count of the method's preparation: EP's
// sweeps, the tilting solve's Newton steps, or 0.
func solveIterations(f *core.Factor, m core.Method) int {
	switch m {
	case core.MethodEP:
		return f.EPStats.Sweeps
	case core.MethodMET:
		return f.TiltStats.Iterations
	}
	return 0
}
