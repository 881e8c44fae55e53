package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

const mcmcDescription = `Sample the posterior of a GP classifier's hyperparameters by pseudo-marginal MCMC, and average test posteriors over it.

The marginal likelihood in the Metropolis acceptance ratio is replaced by gpc's estimate, which is unbiased for it (for P, not log P), so the chain samples the exact posterior of the hyperparameters. The random walk is on the logs of the hyperparameters (alpha, or one per feature for ard, beta, and bias when --bias is above 0), starting at --alpha, --beta and --bias (where not given, at the data's start, as gpc-fit's: alpha the median distance between two training points, beta 1), with independent normal priors on the logs: median --prior-median (by default the data's start: the median distance for the length scales, 1 for beta and the bias), standard deviation --prior-sd. Each estimate's particle groups have their own random streams; each iteration renews --refresh of them and keeps the others (block pseudo-marginal), so the estimates at the current and the proposed point share most of their random numbers and their noise mostly cancels in the acceptance ratio. The proposal adapts during --burn iterations and is fixed after.

The output is one row per kept iteration: the hyperparameters, the log marginal likelihood estimate the chain holds and its standard error, whether the iteration's proposal was accepted. The metadata give the acceptance rate (gpc:acceptance) and the variance of the log marginal likelihood estimator along the chain (gpc:var_log_ml). With --test and --posteriors, the test patterns' posteriors averaged over the kept iterations (each from the particles of the estimate the chain holds there) are written to that file: id, p, se (batch means over the chain), label, y, and sd_hyper, their spread over the hyperparameter samples.

` + largeNHelp + `

` + examplesHelp + `
  gpc-mcmc --standardize --alpha 16 --beta 1e5 --samples 200 --iterations 300 --burn 100 --train examples/crabs/train.csv --format csv > samples.csv
  gpc-mcmc --standardize --alpha 16 --beta 1e5 --samples 200 --iterations 300 --burn 100 --train examples/crabs/train.csv --test examples/crabs/test.csv --posteriors posteriors.csv > samples.arrows

` + exitHelp

// mcmcCmd is gpc-mcmc's command line.
type mcmcCmd struct {
	dataFlags   `embed:""`
	testFlags   `embed:""`
	Posteriors  string `help:"Write the test posteriors, averaged over the chain, to this file (needs --test): CSV for a .csv name, Arrow for .arrows (or .arrow, .ipc), a table for .txt, else as --format (auto: Arrow; table: CSV)."`
	kernelFlags `embed:""`
	hyperFlags  `embed:""`

	PriorMedian *float64 `help:"Median of every hyperparameter's log-normal prior. Default: the data's start, the median distance between two training points for the length scales, 1 for beta (linear: 1 / the mean of x'x) and the bias."`
	PriorSD     float64  `name:"prior-sd" default:"3" help:"Standard deviation of the logs of the hyperparameters under the prior."`
	Iterations  int      `default:"2000" help:"Iterations kept after the burn-in."`
	Burn        int      `default:"500" help:"Burn-in iterations (the proposal adapts during them)."`
	Thin        int      `default:"1" help:"Keep every THIN-th iteration."`
	Step        float64  `default:"0.3" help:"The proposal's initial standard deviation in each log-hyperparameter."`
	Refresh     int      `default:"1" help:"Particle groups whose random numbers are renewed each iteration (0: all, the standard pseudo-marginal method)."`

	estimatorFlags `embed:"" set:"samples=1000"`
	commonFlags    `embed:""`
}

// MCMC runs gpc-mcmc.
func MCMC(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-mcmc", mcmcDescription, &mcmcCmd{}, args, stdin, stdout, stderr)
}

// groups returns the particle groups per estimate: --groups, or at least 8
// (the block method needs several).
func (c *mcmcCmd) groups() int {
	if c.Groups > 0 {
		return c.Groups
	}
	return max(core.DefaultGroups(core.MethodEP, c.Samples), min(8, c.Samples/2))
}

// Validate checks the flags after parsing.
func (c *mcmcCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	for _, check := range []func() error{c.validateData, func() error { return c.validateTest(&c.dataFlags) }, c.validateEstimator} {
		if err := check(); err != nil {
			return err
		}
	}
	switch {
	case c.Posteriors != "" && c.Test == "":
		return usagef("--posteriors needs --test")
	case c.Test != "" && c.Posteriors == "":
		return usagef("--test needs --posteriors (the file the test posteriors go to)")
	case c.Iterations < 1:
		return usagef("--iterations %d: must be at least 1", c.Iterations)
	case c.Burn < 0:
		return usagef("--burn %d: must be 0 or more", c.Burn)
	case c.Thin < 1:
		return usagef("--thin %d: must be at least 1", c.Thin)
	case !(c.Step > 0) || math.IsInf(c.Step, 1):
		return usagef("--step %v: must be a finite number > 0", c.Step)
	case c.PriorMedian != nil && (!(*c.PriorMedian > 0) || math.IsInf(*c.PriorMedian, 1)):
		return usagef("--prior-median %v: must be a finite number > 0", *c.PriorMedian)
	case !(c.PriorSD > 0) || math.IsInf(c.PriorSD, 1):
		return usagef("--prior-sd %v: must be a finite number > 0", c.PriorSD)
	case c.Refresh < 0:
		return usagef("--refresh %d: must be 0 (all) or more", c.Refresh)
	case c.Bias < 0 || math.IsNaN(c.Bias) || math.IsInf(c.Bias, 1):
		return usagef("--bias %v: must be a finite number >= 0", c.Bias)
	}
	if c.Samples/c.groups() < 2 {
		return usagef("--samples %d in %d groups leaves fewer than 2 particles per group", c.Samples, c.groups())
	}
	if err := c.checkHyper(c.kind()); err != nil {
		return err
	}
	if c.Beta != nil && !(*c.Beta > 0) {
		return usagef("--beta %v: the chain moves in log beta, which needs beta > 0", *c.Beta)
	}
	return nil
}

func (c *mcmcCmd) run(e *env) error {
	train, test, dataMeta, err := c.readData(e)
	if err != nil {
		return err
	}
	scale, err := fit.NewDataScale(train.x, len(train.names))
	if err != nil {
		return &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	k, start, err := c.kernel(c.kind(), train.names, scale)
	if err != nil {
		return err
	}
	ch := c.newChain(train, k, scale)
	data := &gp.Classifier{X: train.x, D: len(train.names), Y: train.y}
	cfg := c.config(c.Threads, byteSize(0).limit())
	cands := candidates(c.Method, c.Order)
	// With --test the chain keeps the cloud of the estimate it holds.
	mcfg := cfg
	mcfg.Groups = c.groups()
	if err := checkEstimateMemory(c.Train, train.rows, &mcfg, cands, test != nil); err != nil {
		return err
	}
	cfg.MaxMemory = mcfg.MaxMemory
	surf, pilots, refOrder, err := fit.NewSurface(e.ctx, data, *k, ch.params, ch.theta0, cands, c.Jitter, cfg)
	if err != nil {
		return err
	}
	// Test rows and the running posteriors.
	var acc *postAccumulator
	if test != nil {
		acc = &postAccumulator{t: test.rows}
	}
	rows, stats, err := c.runChain(e, surf, ch, data, test, acc)
	if err != nil {
		return err
	}
	if stats.Failed > 0 {
		e.rep.warnf("%d of %d proposals could not be estimated and were rejected", stats.Failed, stats.Proposed)
	}
	meta := c.chainMeta(dataMeta, surf, refOrder, pilots, ch, start, stats)
	mem := format.NewAllocator()
	if acc != nil {
		if err := c.writePosteriors(e, acc, test, dataMeta, meta, mem); err != nil {
			return err
		}
	}
	return format.WriteTable(e.stdout, mcmcTable(ch.names, rows, meta), c.outputFormat(e.stdout), 0, mem)
}

// readData reads the training data and the test features, standardized
// as asked.
func (c *mcmcCmd) readData(e *env) (train, test *features, dataMeta map[string]string, err error) {
	train, labels, dataMeta, err := c.readTraining(e)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.Test != "" {
		testF, err := c.readFrame(c.Test, e)
		if err != nil {
			return nil, nil, nil, err
		}
		if test, err = c.extract(testF, train.names, labels, false); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := c.checkID(train, test); err != nil {
		return nil, nil, nil, err
	}
	if c.Standardize {
		standardizeMeta(train, test, dataMeta)
	}
	return train, test, dataMeta, nil
}

// chain is what gpc-mcmc samples: the kernel's hyperparameters (params,
// named names), their logs at the start, and their log-normal prior,
// described by priorDesc.
type chain struct {
	params    []gp.Hyper
	names     []string
	theta0    []float64
	prior     fit.LogNormalPrior
	priorDesc string
}

// newChain is the chain from kernel k, its prior's medians --prior-median
// or the data's start.
func (c *mcmcCmd) newChain(train *features, k *gp.Kernel, scale *fit.DataScale) *chain {
	kind, d := k.Kind, len(train.names)
	centre := scale.Start(kind, d)
	centre.Bias = 1
	ch := &chain{priorDesc: "the data's start"}
	if c.PriorMedian != nil {
		ch.priorDesc = fmtFloat(*c.PriorMedian)
	}
	for j := range k.Alpha {
		ch.params = append(ch.params, gp.Hyper{Kind: gp.HyperAlpha, Index: j})
		if kind == gp.KernelARD {
			ch.names = append(ch.names, "alpha_"+train.names[j])
		} else {
			ch.names = append(ch.names, "alpha")
		}
	}
	ch.params = append(ch.params, gp.Hyper{Kind: gp.HyperBeta})
	ch.names = append(ch.names, "beta")
	if c.Bias > 0 {
		ch.params = append(ch.params, gp.Hyper{Kind: gp.HyperBias})
		ch.names = append(ch.names, "bias")
	}
	ch.theta0 = make([]float64, len(ch.params))
	ch.prior = fit.LogNormalPrior{Mu: make([]float64, len(ch.params)), SD: make([]float64, len(ch.params))}
	for j, h := range ch.params {
		ch.theta0[j] = math.Log(h.Get(k))
		ch.prior.Mu[j], ch.prior.SD[j] = math.Log(h.Get(&centre)), c.PriorSD
		if c.PriorMedian != nil {
			ch.prior.Mu[j] = math.Log(*c.PriorMedian)
		}
	}
	return ch
}

// runChain runs the pseudo-marginal chain with progress and returns its
// kept iterations; acc, if not nil, averages the test posteriors.
func (c *mcmcCmd) runChain(e *env, surf *fit.Surface, ch *chain, data *gp.Classifier, test *features, acc *postAccumulator) ([]mcmcRow, fit.MCMCStats, error) {
	var rows []mcmcRow
	e.rep.startProgress(c.Progress, countProgress(c.Burn+c.Iterations, "iterations"))
	lastIt := -1 - c.Burn // the visits number the iterations after the burn-in
	mc := fit.MCMCConfig{Iterations: c.Iterations, Burn: c.Burn, Thin: c.Thin, Samples: c.Samples, Groups: c.groups(),
		Refresh: c.Refresh, Step: c.Step, Seed: uint64(c.Seed), Keep: test != nil,
		Visit: func(st *fit.MCMCState) error {
			e.rep.add(int64(st.Iteration - lastIt))
			lastIt = st.Iteration
			k := surf.KernelAt(st.Theta)
			v := make([]float64, len(ch.params))
			for j, h := range ch.params {
				v[j] = h.Get(k)
			}
			rows = append(rows, mcmcRow{st.Iteration, v, st.Result.LogP, st.Result.SE, st.Accepted})
			if acc == nil {
				return nil
			}
			return acc.add(k, data, test, st)
		}}
	stats, err := surf.PseudoMarginal(e.ctx, ch.theta0, ch.prior, mc)
	if err == nil {
		// The last line, 100%, as the other tools end theirs (--thin
		// visits fewer iterations than there are).
		e.rep.add(int64(c.Burn + c.Iterations))
	}
	e.rep.stopProgress()
	return rows, stats, err
}

// chainMeta is the metadata of gpc-mcmc's output.
func (c *mcmcCmd) chainMeta(dataMeta map[string]string, surf *fit.Surface, refOrder core.OrderKind, pilots []core.Pilot, ch *chain, start string, stats fit.MCMCStats) map[string]string {
	meta := map[string]string{}
	for k, v := range dataMeta {
		meta[k] = v
	}
	meta[format.KeySchema] = format.SchemaMCMC
	meta[format.KeyTool] = "gpc-mcmc"
	meta[format.KeyVersion] = Version
	meta["gpc:kernel"] = c.Kernel
	meta[format.KeySeed] = strconv.FormatInt(c.Seed, 10)
	meta[format.KeyMethod] = surf.Method.String()
	meta[format.KeyOrder] = format.JoinInts(surf.Perm)
	meta[format.KeyOrderKind] = refOrder.String()
	meta[format.KeyJitter] = strconv.FormatFloat(c.Jitter, 'g', -1, 64)
	meta[format.KeySamples] = strconv.Itoa(c.Samples)
	meta[format.KeyGroups] = strconv.Itoa(c.groups())
	meta["gpc:refresh"] = strconv.Itoa(min(max(c.Refresh, 0), c.groups()))
	if c.Refresh == 0 {
		meta["gpc:refresh"] = strconv.Itoa(c.groups())
	}
	meta["gpc:prior"] = fmt.Sprintf("log-normal median=%s sd_log=%s", ch.priorDesc, fmtFloat(c.PriorSD))
	meta["gpc:prior_median"] = describeTheta(ch.names, ch.prior.Mu)
	meta["gpc:start"] = start
	meta["gpc:burn"] = strconv.Itoa(c.Burn)
	meta["gpc:thin"] = strconv.Itoa(c.Thin)
	meta["gpc:acceptance"] = fmtFloat(stats.AcceptanceRate())
	meta["gpc:var_log_ml"] = fmtFloat(stats.VarLogML)
	meta["gpc:var_log_ratio"] = fmtFloat(stats.VarLogRatio)
	meta["gpc:proposal_step"] = fmtFloat(stats.Step)
	meta["gpc:proposal_shape"] = format.JoinFloats(stats.Shape)
	if len(pilots) > 0 {
		pm := estimatorMeta(&core.Factor{Perm: surf.Perm}, core.Config{Method: surf.Method}, pilots, c.Jitter)
		meta[format.KeyPilots] = pm[format.KeyPilots]
	}
	return meta
}

// mcmcRow is one kept iteration.
type mcmcRow struct {
	it       int
	hyper    []float64
	logML    float64
	se       float64
	accepted bool
}

// mcmcTable is gpc-mcmc's output (schema gpc.mcmc/1): iteration, the
// hyperparameters, log_ml, se_log_ml, accepted.
func mcmcTable(names []string, rows []mcmcRow, meta map[string]string) *format.Table {
	n := len(rows)
	it := format.Column{Name: "iteration", Int: make([]int64, n)}
	hc := make([]format.Column, len(names))
	for j, nm := range names {
		hc[j] = format.Column{Name: nm, Float: make([]float64, n)}
	}
	lml := format.Column{Name: "log_ml", Float: make([]float64, n)}
	se := format.Column{Name: "se_log_ml", Float: make([]float64, n)}
	acc := format.Column{Name: "accepted", Int: make([]int64, n)}
	for i, r := range rows {
		it.Int[i] = int64(r.it)
		for j := range hc {
			hc[j].Float[i] = r.hyper[j]
		}
		lml.Float[i], se.Float[i] = r.logML, r.se
		if r.accepted {
			acc.Int[i] = 1
		}
	}
	t := &format.Table{Meta: meta}
	t.Cols = append(t.Cols, it)
	t.Cols = append(t.Cols, hc...)
	t.Cols = append(t.Cols, lml, se, acc)
	return t
}

// postAccumulator collects each kept state's test posteriors.
type postAccumulator struct {
	t int
	p [][]float64 // per kept state, the t posteriors
}

// add predicts the test patterns from the state's particles at its
// hyperparameters.
func (a *postAccumulator) add(k *gp.Kernel, data *gp.Classifier, test *features, st *fit.MCMCState) error {
	n := len(data.Y)
	r := make([]float64, a.t*n)
	vars := make([]float64, a.t)
	for j := range a.t {
		vars[j] = gp.ClassifierTestRow(r[j*n:(j+1)*n], k, data.X, data.D, data.Y, test.x[j*data.D:(j+1)*data.D])
	}
	post := make([]core.Posterior, a.t)
	if err := core.Predict(post, st.Factor, st.Result.Cloud, r, vars); err != nil {
		return err
	}
	p := make([]float64, a.t)
	for j, q := range post {
		p[j] = q.P
	}
	a.p = append(a.p, p)
	return nil
}

// mcmcBatches is the number of batches of consecutive kept states whose
// means give the averaged posteriors' standard errors (batch means: they
// see the chain's autocorrelation and each state's Monte Carlo noise).
const mcmcBatches = 10

// summary returns, per test pattern, the mean posterior over the kept
// states, its batch-means standard error (NaN with fewer states than
// batches) and the posteriors' standard deviation over the states.
func (a *postAccumulator) summary() (mean, se, sd []float64) {
	s := len(a.p)
	mean, se, sd = make([]float64, a.t), make([]float64, a.t), make([]float64, a.t)
	bs := s / mcmcBatches
	for j := range a.t {
		for _, p := range a.p {
			mean[j] += p[j] / float64(s)
		}
		for _, p := range a.p {
			sd[j] += (p[j] - mean[j]) * (p[j] - mean[j])
		}
		sd[j] = math.Sqrt(sd[j] / float64(max(s-1, 1)))
		if bs == 0 {
			se[j] = math.NaN()
			continue
		}
		var bm []float64
		for b := range mcmcBatches {
			m := 0.0
			for _, p := range a.p[b*bs : (b+1)*bs] {
				m += p[j] / float64(bs)
			}
			bm = append(bm, m)
		}
		mu, v := 0.0, 0.0
		for _, m := range bm {
			mu += m / mcmcBatches
		}
		for _, m := range bm {
			v += (m - mu) * (m - mu) / (mcmcBatches - 1)
		}
		se[j] = math.Sqrt(v / mcmcBatches)
	}
	return mean, se, sd
}

// writePosteriors writes the averaged test posteriors to --posteriors.
func (c *mcmcCmd) writePosteriors(e *env, acc *postAccumulator, test *features, dataMeta, chainMeta map[string]string, mem format.Allocator) error {
	mean, se, sd := acc.summary()
	post := make([]core.Posterior, len(mean))
	for j := range post {
		post[j] = core.Posterior{P: mean[j], SE: se[j]}
	}
	t := posteriorTable(&format.TestRows{ID: test.id, Y: test.y}, post, 0, dataMeta[format.KeyLabelPositive], dataMeta[format.KeyLabelNegative])
	t.Cols = append(t.Cols, format.Column{Name: "sd_hyper", Float: sd})
	t.Meta = map[string]string{format.KeySchema: format.SchemaPosterior, format.KeyTool: "gpc-mcmc", format.KeyVersion: Version,
		"gpc:states": strconv.Itoa(len(acc.p))}
	passMeta(t.Meta, chainMeta)
	f, err := os.Create(c.Posteriors)
	if err != nil {
		return &format.IOError{Op: "create --posteriors", Err: err}
	}
	if err := format.WriteTable(f, t, c.fileFormat(c.Posteriors), 0, mem); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return &format.IOError{Op: "close --posteriors", Err: err}
	}
	return nil
}
