package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gpc/core"
	"gpc/core/fit"
	"gpc/core/gp"
	"gpc/format"
)

const fitDescription = `Fit a GP classifier's hyperparameters by maximizing the exact log marginal likelihood, and write them as a table that gpc-kernel --hyper reads.

Features are read as gpc-kernel reads them (CSV, Parquet or Arrow IPC, with labels). --alpha, --beta and --bias are the starting point (ard: one --alpha for every feature, or one per feature); every length scale and the latent scale are fitted, and the bias too when it starts above 0.

Two stages, each by L-BFGS (gonum's optimize) on the log-hyperparameters:
  ep     EP's approximation of the log marginal likelihood (the evidence GPML's infEP maximizes), exact in theta and cheap, from the starting point;
  exact  the Monte Carlo estimate of the exact log marginal likelihood, from EP's optimum, with the gradient of Fisher's identity on the particle cloud, on common random numbers, in --rounds rounds of growing particle counts up to --samples.
The optimum is estimated again with --final-samples particles on a fresh seed: log_ml and se_log_ml, and per hyperparameter the gradient grad (d log_ml / d log value, zero at the maximum up to its standard error se_grad), ep_value (EP's optimum), and with --hessian mc_se_log, the Monte Carlo error of the fitted value in log units. EP's optimum is estimated on the same seed, and kept unless the exact stage's point beats it by more than 2 standard errors of the difference and by more than 0.005 nats, a tenth of a posterior standard deviation of the hyperparameters (gpc:exact_gain in the metadata).

The ard kernel is fitted under a weakly informative prior by default (--prior-sd 3: a normal of sd 3 on each log-hyperparameter, centred on the starting point), both stages maximizing the log marginal likelihood plus the log prior (a maximum a posteriori fit; grad includes the prior's): with one length scale per feature the likelihood alone overfits. log_prior is the prior's log density at the fit, so log_ml + log_prior is the log posterior. The other kernels are fitted by the likelihood alone (--prior-sd 0), unless --prior-sd says otherwise.

` + examplesHelp + `
  gpc-fit --standardize --alpha 30 --beta 1e4 --train examples/crabs/train.csv | gpc-kernel --hyper - --standardize --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict
  gpc-fit --standardize --alpha 30 --beta 1e4 --train examples/crabs/train.csv --format csv > hyper.csv
  gpc-fit --standardize --kernel ard --alpha 3 --beta 100 --train examples/crabs/train.csv --format table   # one length scale per feature

` + exitHelp

// fitCmd is gpc-fit's command line.
type fitCmd struct {
	dataFlags      `embed:""`
	kernelFlags    `embed:""`
	hyperFlags     `embed:""`
	estimatorFlags `embed:"" set:"samples=2000"`
	FinalSamples   int      `default:"0" help:"Particles of the final estimate at the optimum (0: 4 x --samples)."`
	Rounds         int      `default:"2" help:"Rounds of the exact stage, each with 4 times the particles of the one before, up to --samples."`
	Iterations     int      `default:"0" help:"Most L-BFGS iterations per stage and round (0: 50 + 5 per hyperparameter)."`
	PriorSD        *float64 `name:"prior-sd" help:"A normal prior of this standard deviation on each log-hyperparameter, centred on the starting point (a maximum a posteriori fit; 0: none). Default: 3 for the ard kernel, whose D + 1 hyperparameters the likelihood alone overfits (95% of the prior within a factor 400 of the start), 0 for the others."`
	EP             bool     `default:"true" negatable:"" help:"Start the exact stage at the maximum of EP's evidence (--no-ep: at the starting point)."`
	Hessian        bool     `help:"Estimate the curvature at the optimum (2 gradients per hyperparameter at --final-samples) for the optimum's Monte Carlo error, mc_se_log."`
	commonFlags    `embed:""`
}

// Fit runs gpc-fit.
func Fit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-fit", fitDescription, &fitCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *fitCmd) Validate() error {
	for _, check := range []func() error{c.validateCommon, c.validateData, c.validateEstimator} {
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
	case c.PriorSD != nil && (!(*c.PriorSD >= 0) || math.IsInf(*c.PriorSD, 1)):
		return usagef("--prior-sd %v: must be a finite number >= 0", *c.PriorSD)
	}
	if c.kind() == gp.KernelARD && len(c.Alpha) == 1 {
		return nil // one alpha for every feature
	}
	_, err := c.kernel(c.kind(), -1)
	return err
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
	train, _, dataMeta, err := c.readTraining(e)
	if err != nil {
		return err
	}
	if c.Standardize {
		standardizeMeta(train, nil, dataMeta)
	}
	d := len(train.names)
	if c.kind() == gp.KernelARD && len(c.Alpha) == 1 && d > 1 {
		a := c.Alpha[0]
		c.Alpha = make([]float64, d)
		for j := range c.Alpha {
			c.Alpha[j] = a
		}
	}
	k, err := c.kernel(c.kind(), d)
	if err != nil {
		return usagef("%v (the training file has %d features: %s)", err, d, strings.Join(train.names, ", "))
	}
	if k.Beta == 0 {
		return usagef("--beta 0: the fit moves log beta, so it must start above 0")
	}
	params := k.Hypers()
	theta0 := make([]float64, len(params))
	for j, h := range params {
		theta0[j] = math.Log(h.Get(k))
	}
	data := &gp.Classifier{X: train.x, D: d, Y: train.y}
	cand := c.fitCandidate()
	cfg := c.config(c.Threads, byteSize(0).limit())
	cfg.Method = cand.Method
	final := c.FinalSamples
	if final == 0 {
		final = 4 * c.Samples
	}
	big := cfg
	big.Samples = final
	if err := checkMemoryFlag("--final-samples", c.Train, train.rows, &big, []core.Candidate{cand}, true); err != nil {
		return err
	}
	surf, err := fit.NewFitSurface(e.ctx, data, *k, params, theta0, cand, c.Jitter, cfg)
	if err != nil {
		return err
	}
	fcfg := fit.FitConfig{Samples: c.Samples, Rounds: c.Rounds, FinalSamples: final, Seed: uint64(c.Seed),
		MaxIterations: c.Iterations, SkipEP: !c.EP, Hessian: c.Hessian}
	priorSD := fit.DefaultPriorSD(k.Kind)
	if c.PriorSD != nil {
		priorSD = *c.PriorSD
	}
	fcfg.Prior = fit.NewLogNormalPrior(theta0, priorSD)
	names := make([]string, len(params))
	for j, h := range params {
		names[j] = hyperName(h, k.Kind, train.names)
	}
	if c.Progress {
		evals := 0
		fcfg.Progress = func(stage string, samples int, theta []float64, f float64) {
			evals++
			e.rep.note("%s %d: %s objective %.6g (%s)", stage, evals, describeTheta(names, theta), f, fmtDuration(time.Since(start).Seconds()))
		}
	}
	res, err := surf.Fit(e.ctx, theta0, fcfg)
	var nc *fit.ErrNotConverged
	switch {
	case errors.As(err, &nc):
		return &dataError{nc.Error()}
	case errors.Is(err, fit.ErrNonFinite):
		return &dataError{fmt.Sprintf("%v (at %s)", err, describeTheta(names, theta0))}
	case err != nil:
		return err
	}

	fk := surf.KernelAt(res.Theta)
	var epk *gp.Kernel
	if res.EPTheta != nil {
		epk = surf.KernelAt(res.EPTheta)
	}
	rows := make([]format.HyperRow, len(params))
	for j, h := range params {
		r := format.HyperRow{Name: hyperKindName(h.Kind), Value: h.Get(fk), Grad: res.Final.Grad[j], SEGrad: res.Final.SE[j],
			MCSELog: math.NaN(), EPValue: math.NaN()}
		if k.Kind == gp.KernelARD && h.Kind == gp.HyperAlpha {
			r.Feature = train.names[h.Index]
		}
		if res.MCSE != nil {
			r.MCSELog = res.MCSE[j]
		}
		if epk != nil {
			r.EPValue = h.Get(epk)
		}
		rows[j] = r
	}
	hf := format.HyperFit{Kernel: c.Kernel, Standardize: c.Standardize, LogML: res.Final.Result.LogP, SELogML: res.Final.Result.SE, EPLogZ: res.EPLogZ,
		LogPrior: fcfg.Prior.LogPDF(res.Theta)}
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
	meta["gpc:start"] = describeTheta(names, theta0)
	meta["gpc:prior_sd"] = strconv.FormatFloat(priorSD, 'g', -1, 64)
	meta["gpc:grad_norm"] = fmtFloat(res.GradNorm)
	meta["gpc:noise_norm"] = fmtFloat(res.NoiseNorm)
	meta["gpc:estimates"] = strconv.Itoa(res.Evals)
	if res.EPTheta != nil {
		// The exact stage's gain over EP's optimum and whether EP's was
		// kept (fit.KeepEP).
		meta["gpc:exact_gain"] = fmt.Sprintf("%s (se %s); kept EP's optimum: %t", fmtFloat(res.Gain), fmtFloat(res.SEGain), res.KeptEP)
	}
	meta["gpc:iterations"] = strconv.Itoa(res.Iterations)
	if ok, why := res.Final.Result.Trust(); !ok {
		e.rep.warnf("the final estimate's standard error is not reliable: %s", why)
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

// hyperName names a hyperparameter for messages: alpha, alpha_<feature>
// (ard), beta, bias.
func hyperName(h gp.Hyper, kind gp.KernelKind, features []string) string {
	if h.Kind == gp.HyperAlpha && kind == gp.KernelARD {
		return "alpha_" + features[h.Index]
	}
	return hyperKindName(h.Kind)
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
