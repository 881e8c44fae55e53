package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

const fitDescription = `Fit a GP classifier's hyperparameters by maximizing the exact log marginal likelihood, and write them as a table that gpc-kernel --hyper reads.

Features are read as gpc-kernel reads them (CSV, Parquet or Arrow IPC, with labels: two classes, or three or more for the multinomial probit model). --alpha, --beta and --bias are the starting point (ard: one --alpha for every feature, or one per feature); every length scale and the latent scale are fitted, and the bias too when it starts above 0.

The start. Where --alpha or --beta is not given, the fit starts where the data say: alpha the median distance between two training points (after --standardize; for ard every feature's alpha, the isotropic start), where the median pair's RBF correlation is e^-1, and beta 1 (linear: 1 / the mean of x'x), the probit noise's variance, at which each training point's prior class probability Phi(f) is uniform on (0, 1), the latent function neither negligible nor saturated. gpc:start in the metadata gives the start and where it came from. A start where the kernel is practically diagonal (length scales far below the distances between the points: each point's squared correlation with the others sums to less than 1e-3), constant (far above them) or negligible (beta far below 1) is refused in one line that says what to try: the likelihood is flat there and the fit would not move; so is a fit that ends there. --restarts K fits again from K more starts drawn around the first (a normal of sd 1 on each log-hyperparameter, deterministic in --seed; a draw in a flat region is drawn again) and keeps the best by the exact objective, each start's optimum in gpc:restarts.

Two stages, each by L-BFGS on the log-hyperparameters, no step moving one by more than a factor e^0.5 (so that the fit follows the likelihood's own ascent from the start rather than jumping between its many local maxima):
  ep     EP's approximation of the log marginal likelihood (the evidence GPML's infEP maximizes), exact in theta and cheap, from the starting point;
  exact  the Monte Carlo estimate of the exact log marginal likelihood, from EP's optimum, with the gradient of Fisher's identity on the particle cloud, on common random numbers, in --rounds rounds of growing particle counts up to --samples, each ending when the gradient is consistent with its Monte Carlo noise.
From 2000 orthant variables on (N, or N (C - 1) for C classes) there is no ep stage: EP's evidence costs more there than the exact estimate.
The optimum is estimated again with --final-samples particles on a fresh seed: log_ml and se_log_ml, and per hyperparameter the gradient grad (d log_ml / d log value, zero at the maximum up to its standard error se_grad), ep_value (EP's optimum), and with --hessian mc_se_log, the Monte Carlo error of the fitted value in log units. EP's optimum is estimated on the same seed, and kept unless the exact stage's point beats it by more than 2 standard errors of the difference and by more than 0.005 nats, a tenth of a posterior standard deviation of the hyperparameters (gpc:exact_gain in the metadata).

Where the likelihood has no finite maximum (beta grows without end when the classes separate; the length scale of an irrelevant feature), the rule is a box: length scales from a tenth of the smallest distance between two training points to 10^4 times the largest (for ard, in the feature), beta and the bias from 10^-6 to 10^12 times the probit noise's variance (linear: per mean x'x). After the ep stage a hyperparameter whose gradient points out of the box moves to the box's edge if EP's evidence falls by less than 1e-5 nats there (the likelihood is flat or still rising up to it), and stays there. A hyperparameter that ends on the box's edge has run off: the bound column says lower or upper, gpc:ran_off lists them, and a warning names them.

The ard kernel is fitted under a weakly informative prior by default (--prior-sd 3: a normal of sd 3 on each log-hyperparameter, centred on the starting point), both stages maximizing the log marginal likelihood plus the log prior (a maximum a posteriori fit; grad includes the prior's): with one length scale per feature the likelihood alone overfits. log_prior is the prior's log density at the fit, so log_ml + log_prior is the log posterior. The other kernels are fitted by the likelihood alone (--prior-sd 0), unless --prior-sd says otherwise.

More than two classes: the exact log marginal likelihood of the multinomial probit model is an orthant in N (C - 1) dimensions (docs/multiclass.md), and Fisher's identity gives its gradient as for two classes. One kernel is shared by the classes; --per-class (or --class-alpha/--class-beta, each class's start) fits a kernel per class, whose rows name their class in the class column. gpc-kernel --hyper reads either.

` + fitVecchiaHelp + `

` + largeNHelp + `

` + examplesHelp + `
  gpc-fit --standardize --train examples/crabs/train.csv | gpc-kernel --hyper - --standardize --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict
  gpc-fit --standardize --alpha 30 --beta 1e4 --train examples/crabs/train.csv --format csv > hyper.csv
  gpc-fit --standardize --kernel ard --train examples/crabs/train.csv --format table   # one length scale per feature
  gpc-fit --vecchia 30 --standardize --train examples/crabs/train.csv | gpc-kernel --hyper - --vecchia 30 --standardize --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict   # the Vecchia path (for many rows: --vecchia auto)
  gpc-fit --vecchia 30 --vecchia-exact --standardize --train examples/crabs/train.csv --format table   # and its exact stage on the Vecchia model's log marginal likelihood
  gpc-fit --standardize --label species --id id --train examples/iris/train.csv | gpc-kernel --hyper - --standardize --label species --id id --train examples/iris/train.csv --test examples/iris/test.csv | gpc-train | gpc-predict   # three classes

` + exitHelp

// fitCmd is gpc-fit's command line.
type fitCmd struct {
	dataFlags       `embed:""`
	kernelFlags     `embed:""`
	hyperFlags      `embed:""`
	classFlags      `embed:""`
	PerClass        bool `name:"per-class" help:"Multi-class: fit a kernel per class (each class's length scale(s) and beta), instead of one shared by the classes."`
	estimatorFlags  `embed:"" set:"samples=2000"`
	FinalSamples    int        `default:"0" help:"Particles of the final estimate at the optimum (0: 4 x --samples)."`
	Rounds          int        `default:"2" help:"Rounds of the exact stage, each with 4 times the particles of the one before, up to --samples."`
	Iterations      int        `default:"0" help:"Most L-BFGS iterations per stage and round (0: 100 + 5 per hyperparameter)."`
	Restarts        int        `default:"0" help:"Fit again from this many more starting points drawn around the start (a normal of sd 1 on each log-hyperparameter, deterministic in --seed) and keep the best by the exact objective (scikit-learn's n_restarts_optimizer); each start's optimum is in gpc:restarts."`
	PriorSD         *float64   `name:"prior-sd" help:"A normal prior of this standard deviation on each log-hyperparameter, centred on the starting point (a maximum a posteriori fit; 0: none). Default: 3 for the ard kernel, whose D + 1 hyperparameters the likelihood alone overfits (95% of the prior within a factor 400 of the start), 0 for the others."`
	EP              bool       `default:"true" negatable:"" help:"Start the exact stage at the maximum of EP's evidence (--no-ep: at the starting point, as every fit of 2000 orthant variables or more does, where EP's evidence costs more than the exact estimate)."`
	Hessian         bool       `help:"Estimate the curvature at the optimum (2 gradients per hyperparameter at --final-samples) for the optimum's Monte Carlo error, mc_se_log."`
	fitVecchiaFlags `embed:""` // --vecchia: fit_vecchia.go
	commonFlags     `embed:""`
}

// Fit runs gpc-fit.
func Fit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-fit", fitDescription, &fitCmd{}, args, stdin, stdout, stderr)
}

// maxRestarts bounds --restarts.
const maxRestarts = 1000

// Validate checks the flags after parsing.
func (c *fitCmd) Validate() error {
	for _, check := range []func() error{c.validateCommon, c.validateData, c.validateEstimator, c.validateFitVecchia} {
		if err := check(); err != nil {
			return err
		}
	}
	switch {
	case c.Method == "paper-hard" || c.Method == "paper-soft":
		return usagef("--method %s keeps no particle weights, so it gives no gradient: use ep, smc or met", c.Method)
	case c.FinalSamples < 0 || c.FinalSamples == 1:
		return usagef("--final-samples %d: at least 2 particles are needed (0: 4 x --samples)", c.FinalSamples)
	case c.Rounds < 1:
		return usagef("--rounds %d: must be at least 1", c.Rounds)
	case c.Iterations < 0:
		return usagef("--iterations %d: must be 0 (default) or more", c.Iterations)
	case c.Restarts < 0 || c.Restarts > maxRestarts:
		return usagef("--restarts %d: must be from 0 to %d", c.Restarts, maxRestarts)
	case c.PriorSD != nil && (!(*c.PriorSD >= 0) || math.IsInf(*c.PriorSD, 1)):
		return usagef("--prior-sd %v: must be a finite number >= 0", *c.PriorSD)
	case c.Beta != nil && *c.Beta == 0:
		return usagef("--beta 0: the fit moves log beta, so it must start above 0")
	}
	for _, b := range c.ClassBeta {
		if b == 0 {
			return usagef("--class-beta: the fit moves log beta, so every class's must start above 0")
		}
	}
	return c.checkHyper(c.kind())
}

// fitCandidate is the estimator that --method and --order select for
// gpc-fit: one that gives a gradient, ep in the greedy order by default.
func (c *fitCmd) fitCandidate() core.Candidate {
	cand := fit.FitCandidate
	if m, ok := core.ParseMethod(c.Method); ok {
		cand.Method = m
		if m != core.MethodEP {
			cand.Order = core.OrderSharp
		}
	}
	if o, ok := core.ParseOrder(c.Order); ok {
		cand.Order = o
	}
	return cand
}

func (c *fitCmd) run(e *env) error {
	start := time.Now()
	train, labels, dataMeta, err := c.readTrainingClasses(e)
	if err != nil {
		return err
	}
	if c.Standardize {
		standardizeMeta(train, nil, dataMeta)
	}
	scale, err := fit.NewDataScale(train.x, len(train.names))
	if err != nil {
		return &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	k, startDesc, err := c.kernel(c.kind(), train.names, scale)
	if err != nil {
		return err
	}
	if c.fitVecchiaFlags.v.Vecchia > 0 {
		return c.runVecchia(e, start, train, labels, dataMeta, scale, k, startDesc)
	}
	m, err := c.fitModel(train, labels, k)
	if err != nil {
		return err
	}
	if m.startDesc == "" {
		m.startDesc = startDesc
	}
	lower, upper := scale.Bounds(k, m.params)
	cand := c.fitCandidate()
	cfg := c.config(c.Threads, byteSize(0).limit())
	cfg.Method = cand.Method
	final := c.finalSamples()
	big := cfg
	big.Samples = final
	if err := checkMemoryFlag("--final-samples", train.source, m.vars, &big, []core.Candidate{cand}, true); err != nil {
		return err
	}
	names := make([]string, len(m.params))
	for j, h := range m.params {
		names[j] = hyperName(h, k.Kind, train.names, m.classes, c.PerClass || c.perClass())
	}
	// The start where the kernel is flat: say so, and what to try.
	surf, err := fit.NewFitSurface(e.ctx, m.model, *k, m.params, m.theta0, cand, c.Jitter, cfg)
	if err != nil {
		return err
	}
	fcfg := fit.FitConfig{Samples: c.Samples, Rounds: c.Rounds, FinalSamples: final, Seed: uint64(c.Seed),
		MaxIterations: c.Iterations, SkipEP: !c.EP, Hessian: c.Hessian, Lower: lower, Upper: upper}
	priorSD := fit.DefaultPriorSD(k.Kind)
	if c.PriorSD != nil {
		priorSD = *c.PriorSD
	}
	fcfg.Prior = fit.NewLogNormalPrior(m.theta0, priorSD)
	if c.Progress {
		evals := 0
		fcfg.Progress = func(stage string, samples int, theta []float64, f float64) {
			evals++
			e.rep.note("%s %d: %s objective %.6g (%s)", stage, evals, describeTheta(names, theta), f, fmtDuration(time.Since(start).Seconds()))
		}
	}
	best, starts, err := surf.FitStarts(e.ctx, m.theta0, c.Restarts, fcfg)
	if err != nil {
		return c.fitError(err, names, m.theta0, scale, train.names)
	}
	res := starts[best].Result
	if err := starts[best].Err; err != nil {
		var nc *fit.ErrNotConverged
		if errors.As(err, &nc) {
			return &dataError{nc.Error()}
		}
		return err
	}
	rows, ranOff := m.hyperRows(surf, res, k, train.names, names, lower, upper)
	hf := format.HyperFit{Kernel: c.Kernel, Standardize: c.Standardize, LogML: res.Final.Result.LogP, SELogML: res.Final.Result.SE, EPLogZ: res.EPLogZ,
		LogPrior: fcfg.Prior.LogPDF(res.Theta)}
	meta := c.fitMeta(dataMeta, m, surf, res, final, priorSD, names, lower, upper, ranOff)
	if c.Restarts > 0 {
		meta["gpc:restarts"] = describeStarts(starts, best, names)
	}
	if ok, why := res.Final.Result.Trust(); !ok {
		e.rep.warnf("the final estimate's standard error is not reliable: %s", why)
	}
	if ranOff != nil {
		e.rep.warnf("%d hyperparameter(s) ran off to the edge of their box, where the likelihood no longer depends on them or still rises (fit.Bounds): %s", len(ranOff), shortList(ranOff, 4))
	}
	if c.Progress || e.rep.tty && !c.Quiet {
		post := ""
		if priorSD > 0 {
			post = fmt.Sprintf(", log prior %.6g (sd %g), log posterior %.6g", hf.LogPrior, priorSD, hf.LogML+hf.LogPrior)
		}
		e.rep.note("log ML %.6g (se %.2g)%s at %s; gradient norm %.3g against noise %.3g; %d estimates, %s",
			hf.LogML, hf.SELogML, post, describeTheta(names, res.Theta), res.GradNorm, res.NoiseNorm, res.Evals, fmtDuration(time.Since(start).Seconds()))
	}
	return format.WriteTable(e.stdout, format.HyperTable(hf, rows, meta), c.outputFormat(e.stdout), 0, format.NewAllocator())
}

// finalSamples is --final-samples, its 0 resolved (4 x --samples).
func (c *fitCmd) finalSamples() int {
	if c.FinalSamples == 0 {
		return 4 * c.Samples
	}
	return c.FinalSamples
}

// fitModel is the model gpc-fit fits: the binary classifier, or the
// multinomial probit model with one kernel, or one per class; its
// hyperparameters, their logs at the start, and its orthant variables.
type fitModel struct {
	model     gp.Model
	classes   []string
	params    []gp.Hyper
	theta0    []float64
	vars      int
	startDesc string // the classes' kernels at the start, or "": the kernel's
}

// fitModel is the model of the training data with kernel k.
func (c *fitCmd) fitModel(train *features, labels *labelMap, k *gp.Kernel) (*fitModel, error) {
	d := len(train.names)
	m := &fitModel{params: k.Hypers(), vars: train.rows}
	m.theta0 = make([]float64, 0, len(m.params))
	if labels.classes == nil {
		if c.PerClass || c.perClass() {
			return nil, usagef("--per-class, --class-alpha and --class-beta are for three or more classes; %s has two", c.Train)
		}
		m.model = &gp.Classifier{X: train.x, D: d, Y: train.y}
		for _, h := range m.params {
			m.theta0 = append(m.theta0, math.Log(h.Get(k)))
		}
		return m, nil
	}
	m.classes = labels.classes
	y := make([]int, train.rows)
	for i, v := range train.y {
		y[i] = int(v)
	}
	ks, err := c.classKernels(k, m.classes, d, c.PerClass, nil)
	if err != nil {
		return nil, err
	}
	mc := &gp.Multiclass{X: train.x, D: d, Y: y, C: len(m.classes), Kernels: ks}
	if err := mc.Validate(); err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	m.model, m.vars = mc, mc.Vars()
	var all []gp.Hyper
	for cl, kc := range ks {
		for _, h := range m.params {
			h.Class = cl
			all = append(all, h)
			m.theta0 = append(m.theta0, math.Log(h.Get(kc)))
		}
	}
	m.params = all
	if len(ks) > 1 {
		m.startDesc = describeClassKernels(ks, m.classes, train.names)
	}
	return m, nil
}

// hyperRows is the fit's rows, one per hyperparameter, and those that
// ran off to the edge of their box.
func (m *fitModel) hyperRows(surf *fit.Surface, res *fit.FitResult, k *gp.Kernel, features, names []string, lower, upper []float64) ([]format.HyperRow, []string) {
	ks := surf.KernelsAt(res.Theta)
	var epks []*gp.Kernel
	if res.EPTheta != nil {
		epks = surf.KernelsAt(res.EPTheta)
	}
	rows := make([]format.HyperRow, len(m.params))
	var ranOff []string
	for j, h := range m.params {
		r := format.HyperRow{Name: hyperKindName(h.Kind), Value: h.Get(ks[h.Class]), Grad: res.Final.Grad[j], SEGrad: res.Final.SE[j],
			MCSELog: math.NaN(), EPValue: math.NaN()}
		if k.Kind == gp.KernelARD && h.Kind == gp.HyperAlpha {
			r.Feature = features[h.Index]
		}
		if len(ks) > 1 {
			r.Class = m.classes[h.Class]
		}
		if res.MCSE != nil {
			r.MCSELog = res.MCSE[j]
		}
		if epks != nil {
			r.EPValue = h.Get(epks[h.Class])
		}
		var off string
		if r.Bound, off = ranOffAt(res.Bound[j], names[j], lower, upper, j); off != "" {
			ranOff = append(ranOff, off)
		}
		rows[j] = r
	}
	return rows, ranOff
}

// ranOffAt returns the bound column's word for hyperparameter j (name) of
// a fit whose fit.FitResult.Bound value is b ("lower", "upper" or ""),
// and for one that ran off the warning's phrase naming the bound (lower,
// upper: the box, in log units).
func ranOffAt(b int, name string, lower, upper []float64, j int) (word, off string) {
	switch b {
	case -1:
		return "lower", name + " to its lower bound " + fmtFloat(math.Exp(lower[j]))
	case 1:
		return "upper", name + " to its upper bound " + fmtFloat(math.Exp(upper[j]))
	}
	return "", ""
}

// fitMeta is the metadata of gpc-fit's output.
func (c *fitCmd) fitMeta(dataMeta map[string]string, m *fitModel, surf *fit.Surface, res *fit.FitResult, final int, priorSD float64, names []string, lower, upper []float64, ranOff []string) map[string]string {
	meta := map[string]string{}
	for key, v := range dataMeta {
		meta[key] = v
	}
	meta[format.KeyVersion] = Version
	meta["gpc:kernel"] = c.Kernel
	meta[format.KeySeed] = strconv.FormatUint(uint64(c.Seed), 10)
	meta[format.KeyMethod] = surf.Method.String()
	meta[format.KeyOrder] = format.JoinInts(surf.Perm)
	meta[format.KeyJitter] = strconv.FormatFloat(c.Jitter, 'g', -1, 64)
	meta[format.KeySamples] = strconv.Itoa(c.Samples)
	meta["gpc:final_samples"] = strconv.Itoa(final)
	meta["gpc:start"] = m.startDesc
	meta["gpc:prior_sd"] = strconv.FormatFloat(priorSD, 'g', -1, 64)
	meta["gpc:grad_norm"] = fmtFloat(res.GradNorm)
	meta["gpc:noise_norm"] = fmtFloat(res.NoiseNorm)
	meta["gpc:estimates"] = strconv.Itoa(res.Evals)
	meta["gpc:bounds"] = describeBounds(names, lower, upper)
	if ranOff != nil {
		meta["gpc:ran_off"] = strings.Join(ranOff, "; ")
	}
	if m.classes != nil {
		meta[format.KeyClasses] = format.JoinClasses(m.classes)
		delete(meta, format.KeyLabelPositive)
		delete(meta, format.KeyLabelNegative)
	}
	switch {
	case res.EPTheta != nil:
		// The exact stage's gain over EP's optimum and whether EP's was
		// kept (fit.KeepEP).
		meta["gpc:exact_gain"] = fmt.Sprintf("%s (se %s); kept EP's optimum: %t", fmtFloat(res.Gain), fmtFloat(res.SEGain), res.KeptEP)
	case c.EP:
		meta["gpc:ep_stage"] = fmt.Sprintf("none: %d orthant variables (from %d on the exact stage starts at the start, fit.EPStageMaxVars)", surf.Vars, fit.EPStageMaxVars)
	default:
		meta["gpc:ep_stage"] = "none: --no-ep"
	}
	meta["gpc:iterations"] = strconv.Itoa(res.Iterations)
	return meta
}

// fitError turns an error of the fit into the tool's: a start or an end in
// a flat region (fit.TrapError) becomes one line that says what to try.
func (c *fitCmd) fitError(err error, names []string, theta0 []float64, scale *fit.DataScale, features []string) error {
	var te *fit.TrapError
	var nc *fit.ErrNotConverged
	switch {
	case errors.As(err, &te):
		try := ""
		switch {
		case !te.End && te.Trap == fit.TrapNegligible:
			try = "start from a larger --beta (leave it out to start at 1, the probit noise's variance)"
		case !te.End && te.Trap == fit.TrapDiagonal:
			try = fmt.Sprintf("start from a larger --alpha (leave it out to start at the median distance between two training points, %.4g)", scale.Median)
		case !te.End:
			try = fmt.Sprintf("start from a smaller --alpha (leave it out to start at the median distance between two training points, %.4g)", scale.Median)
		default:
			try = "the data show no structure this kernel can use from this start: try --restarts, another --kernel, or another start"
		}
		return &dataError{fmt.Sprintf("%s (at %s); %s", strings.TrimPrefix(te.Error(), "fit: "), describeKernel(&te.Kernel, features), try)}
	case errors.As(err, &nc):
		return &dataError{nc.Error()}
	case errors.Is(err, fit.ErrNonFinite):
		return &dataError{fmt.Sprintf("%v (at %s)", err, describeTheta(names, theta0))}
	}
	return err
}

// describeClassKernels writes a kernel per class as class: name=value
// pairs.
func describeClassKernels(ks []*gp.Kernel, classes, features []string) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = classes[i] + ": " + describeKernel(k, features)
	}
	return strings.Join(parts, "; ")
}

// describeBounds writes the box of the log-hyperparameters as
// name=[lo, hi] in the hyperparameters' own units, once for a run of
// equal boxes.
func describeBounds(names []string, lower, upper []float64) string {
	var parts []string
	for j := range names {
		if j > 0 && lower[j] == lower[j-1] && upper[j] == upper[j-1] && len(parts) > 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=[%.4g, %.4g]", names[j], math.Exp(lower[j]), math.Exp(upper[j])))
	}
	return strings.Join(parts, " ")
}

// describeStarts writes each start of a fit with restarts: its starting
// point (the first: the start), and where it ended, with the exact
// objective there, or why it has none.
func describeStarts(starts []fit.Start, best int, names []string) string {
	parts := make([]string, len(starts))
	for i, st := range starts {
		tag := ""
		if i == best {
			tag = " (best)"
		}
		switch {
		case st.Result == nil:
			parts[i] = fmt.Sprintf("start %d%s: %v", i, tag, st.Err)
		default:
			v := fmt.Sprintf("objective %.6g, log ML %.6g (se %.2g)", st.Objective, st.Result.Final.Result.LogP, st.Result.Final.Result.SE)
			if st.Err != nil {
				v += fmt.Sprintf(" [%v]", st.Err)
			}
			parts[i] = fmt.Sprintf("start %d%s: from %s to %s: %s", i, tag, describeTheta(names, st.Theta), describeTheta(names, st.Result.Theta), v)
		}
	}
	return strings.Join(parts, "; ")
}

// shortList joins the first max items of s and says how many more.
func shortList(s []string, max int) string {
	if len(s) <= max {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:max], ", ") + fmt.Sprintf(" and %d more (gpc:ran_off)", len(s)-max)
}

// hyperName names a hyperparameter for messages: alpha, alpha_<feature>
// (ard), beta, bias, with a kernel per class (perClass) followed by
// @<class>.
func hyperName(h gp.Hyper, kind gp.KernelKind, features, classes []string, perClass bool) string {
	name := hyperKindName(h.Kind)
	if h.Kind == gp.HyperAlpha && kind == gp.KernelARD {
		name = "alpha_" + features[h.Index]
	}
	if perClass {
		name += "@" + classes[h.Class]
	}
	return name
}

func hyperKindName(k gp.HyperKind) string {
	switch k {
	case gp.HyperAlpha:
		return "alpha"
	case gp.HyperBeta:
		return "beta"
	}
	return "bias"
}

// describeTheta writes log-hyperparameters as name=value pairs.
func describeTheta(names []string, theta []float64) string {
	parts := make([]string, len(theta))
	for j, t := range theta {
		parts[j] = names[j] + "=" + strconv.FormatFloat(math.Exp(t), 'g', 4, 64)
	}
	return strings.Join(parts, " ")
}
