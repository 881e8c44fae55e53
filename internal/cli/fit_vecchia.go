package cli

// gpc-fit --vecchia m (docs/vecchia-fit.md): the hyperparameters fitted on
// the Vecchia path by the Vecchia model's Laplace evidence
// (vfit.MaximizeStarts), then with --vecchia-exact by its log marginal
// likelihood (vfit.Exact), written as the dense fit's table (gpc.hyper/1)
// that gpc-kernel --hyper reads.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/core/vecchia/vfit"
	"github.com/gpc-mc/gpc/format"
)

// fitVecchiaHelp is gpc-fit's --help paragraph on --vecchia.
const fitVecchiaHelp = `The Vecchia path (--vecchia m, or auto for m = 50; docs/vecchia-fit.md): for many training points (from about 10^4, where the dense fit's N x N matrices take GBs and its N^3 work minutes to hours), the hyperparameters are fitted on all the rows by maximizing the Vecchia model's Laplace evidence (the model that gpc-kernel --vecchia m writes: each point conditioned on its m nearest earlier points in the maxmin order), O(N m^3) per evaluation with its exact gradient, by the same L-BFGS steps, start, box, run-off, traps, --restarts, --prior-sd and --seed as the dense fit's ep stage. This stage is deterministic, and approximate twice over: the Vecchia model for m below N - 1, and Laplace's approximation of its evidence: log_ml in the output is the Vecchia model's Laplace evidence at the optimum (se_log_ml, mc_se_log, ep_value and ep_log_z NaN), grad its gradient (with the prior's), exact, se_grad 0, and gpc:evidence in the metadata says so. With --vecchia-exact (two classes) the dense fit's exact stage follows it on the Vecchia model's own log marginal likelihood: gpc-train's estimator on the model gpc-kernel --vecchia m writes, its gradient by Fisher's identity over each particle group's final weighted paths, on common random numbers with the ordering and neighbours of the Laplace stage's end fixed, --rounds rounds up to --samples particles, the final estimate with --final-samples on a fresh seed (the bits gpc-train gives on the fitted kernel with that seed); log_ml and se_log_ml are that estimate, grad and se_grad its gradient, ep_value and ep_log_z the Laplace stage's optimum and evidence, kept unless the exact stage's point beats it by 2 standard errors of the difference and 0.005 nats (gpc:exact_gain). The gradient's noise is larger than the dense fit's (the latent values' prior is nearly singular at the default nugget: docs/vecchia-fit.md), so the stage moves where the Laplace evidence's error is large beside it, and stops at once where it is not. Three or more classes: the multinomial probit classifier with one kernel shared by the classes (the model gpc-kernel --vecchia m writes for them), its Laplace evidence in the classes' C - 1 contrasts per point, the gradient by central differences (two evaluations per hyperparameter); --per-class is refused. The exact stage's flags (--samples, --final-samples, --rounds, --hessian) are taken with --vecchia-exact only; --no-ep, --method, --order, --groups, --ess and --jitter are refused with --vecchia. The ard kernel's ordering and neighbours follow its length scales: computed at the start, and again at an optimum whose length scales have moved relative to one another by more than a factor 2 (up to 4 times). The Vecchia model's log marginal likelihood itself, which log_ml approximates, is what gpc-train estimates on gpc-kernel --vecchia m's model (its gpc:log_ml).`

// fitVecchiaFlags are gpc-fit's --vecchia and its settings; they are
// checked and resolved (auto) by gpc-kernel's rule (vecchiaFlags).
type fitVecchiaFlags struct {
	Vecchia       neighbours `placeholder:"m" default:"0" help:"Fit on the Vecchia path: maximize the Laplace evidence of the Vecchia model with m neighbours per point (the model gpc-kernel --vecchia m writes) on all the training rows, instead of the dense fit's two stages; auto: m = 50 (gpc-kernel's --vecchia auto chooses its sets from the data and the fitted kernel). At most 254; 0: the dense fit. See the Vecchia path, above."`
	VecchiaOrder  string     `enum:"maxmin,given" default:"maxmin" help:"With --vecchia: the order of the training points, as gpc-kernel's --vecchia-order (give gpc-kernel the same)."`
	VecchiaNugget float64    `default:"1e-4" help:"With --vecchia: the part of the probit's noise variance moved into the latent process, as gpc-kernel's --vecchia-nugget (give gpc-kernel the same)."`
	VecchiaExact  bool       `name:"vecchia-exact" help:"With --vecchia, two classes: after the Laplace stage, the exact stage on the Vecchia model's own log marginal likelihood (gpc-train's estimate, its gradient by Fisher's identity), with --samples, --rounds, --final-samples and --hessian as the dense fit's exact stage; the Laplace optimum is kept unless the exact stage's point beats it by 2 standard errors of the difference and 0.005 nats. See the Vecchia path, above."`

	// v is the flags as gpc-kernel's, resolved by validateFitVecchia.
	v vecchiaFlags
}

// validateFitVecchia resolves --vecchia auto and checks the flags as
// gpc-kernel does, and refuses the flags of the dense fit's exact stage
// with --vecchia.
func (c *fitCmd) validateFitVecchia() error {
	f := &c.fitVecchiaFlags
	f.v = vecchiaFlags{Vecchia: f.Vecchia, VecchiaOrder: f.VecchiaOrder, VecchiaNugget: f.VecchiaNugget}
	if err := f.v.validateVecchia(); err != nil {
		return err
	}
	if f.v.vecchiaAuto {
		// gpc-fit's auto is the fixed m = 50: gpc-kernel's auto chooses
		// its sets from the data with the fitted kernel, which the fit
		// has yet to find.
		f.v.Vecchia, f.v.autoFixed = neighbours(vecchia.DefaultM), true
	}
	if f.v.Vecchia == 0 {
		if f.VecchiaExact {
			return usagef("--vecchia-exact without --vecchia: the dense fit has its exact stage always; give --vecchia m (or auto) for the Vecchia path's")
		}
		return nil
	}
	for _, x := range []struct {
		set, exact bool // exact: the flag is the exact stage's, taken with --vecchia-exact
		flag       string
	}{
		{c.Samples != 2000, true, "--samples"}, {c.FinalSamples != 0, true, "--final-samples"}, {c.Rounds != 2, true, "--rounds"},
		{c.Hessian, true, "--hessian"}, {!c.EP, false, "--no-ep"}, {c.Method != "auto", false, "--method"}, {c.Order != "auto", false, "--order"},
		{c.Groups != 0, false, "--groups"}, {c.ESS != 0, false, "--ess"}, {c.Jitter != 0, false, "--jitter"},
		{c.PerClass, false, "--per-class"}, {c.ClassAlpha != nil, false, "--class-alpha"}, {c.ClassBeta != nil, false, "--class-beta"},
	} {
		switch {
		case !x.set || x.exact && f.VecchiaExact:
		case x.exact:
			return usagef("%s with --vecchia: it is the exact stage's, which gpc-fit --vecchia runs only with --vecchia-exact (docs/vecchia-fit.md): add --vecchia-exact, or drop %s", x.flag, x.flag)
		default:
			return usagef("%s with --vecchia: gpc-fit --vecchia maximizes the Vecchia model's Laplace evidence, then with --vecchia-exact its log marginal likelihood by gpc-train's estimator, with one method, order and nugget, and one kernel shared by the classes (docs/vecchia-fit.md): drop %s, or --vecchia for the dense fit", x.flag, x.flag)
		}
	}
	return nil
}

// runVecchia fits kernel k (the start, from the flags or the data's
// scale) on the Vecchia path and writes the hyper table.
func (c *fitCmd) runVecchia(e *env, start time.Time, train *features, labels *labelMap, dataMeta map[string]string, scale *fit.DataScale, k *gp.Kernel, startDesc string) error {
	v := &c.fitVecchiaFlags.v
	n := train.rows
	if int(v.Vecchia) >= n {
		return v.tooFewPoints(n)
	}
	if c.VecchiaExact && len(labels.classes) > 2 {
		return usagef("--vecchia-exact: %d classes; the Vecchia path's exact stage is built for two (docs/vecchia-fit.md): drop --vecchia-exact", len(labels.classes))
	}
	if avail, ok := availableMemory(); ok {
		// The multi-class evidence's expanded model: C - 1 latent values
		// per point, each conditioned on C - 1 per neighbour.
		l := max(len(labels.classes)-1, 1)
		need, what := vecchiaFitBytes(n*l, int(v.Vecchia)*l), ""
		if c.VecchiaExact {
			final := c.finalSamples()
			ex := vecchiaExactBytes(n, int(v.Vecchia), final, c.Threads)
			what = fmt.Sprintf(" (%s of it the exact stage's, for %d final particles: fewer --samples or --final-samples take less)", format.Bytes(ex), final)
			need += ex
		}
		if need > float64(avail) {
			return &dataError{fmt.Sprintf("%s: the Vecchia fit of %d training rows with m = %d neighbours needs about %s%s, and only %s of memory is available: give fewer neighbours (--vecchia 30: about %s for the Laplace stage) or fit on fewer rows", train.source, n, v.Vecchia, format.Bytes(need), what, format.Bytes(float64(avail)), format.Bytes(vecchiaFitBytes(n, 30)))}
		}
	}
	params := k.Hypers()
	theta0 := make([]float64, len(params))
	names := make([]string, len(params))
	for j, h := range params {
		theta0[j] = math.Log(h.Get(k))
		names[j] = hyperName(h, k.Kind, train.names, nil, false)
	}
	lower, upper := scale.Bounds(k, params)
	priorSD := fit.DefaultPriorSD(k.Kind)
	if c.PriorSD != nil {
		priorSD = *c.PriorSD
	}
	cfg := fit.FitConfig{Seed: uint64(c.Seed), MaxIterations: c.Iterations, Lower: lower, Upper: upper,
		Prior: fit.NewLogNormalPrior(theta0, priorSD)}
	if c.Progress {
		evals := 0
		cfg.Progress = func(stage string, _ int, theta []float64, f float64) {
			evals++
			e.rep.note("%s %d: %s objective %.6g (%s)", stage, evals, describeTheta(names, theta), f, fmtDuration(time.Since(start).Seconds()))
		}
	}
	order, _ := vecchia.ParseOrder(v.VecchiaOrder)
	p := &vfit.Problem{X: train.x, D: len(train.names), Y: train.y, Classes: len(labels.classes), M: int(v.Vecchia), Order: order, Nugget: v.VecchiaNugget, Threads: c.Threads}
	if c.Progress {
		what := "two classes"
		if p.Classes > 2 {
			what = fmt.Sprintf("%d classes, one kernel", p.Classes)
		}
		e.rep.note("the Vecchia-Laplace fit of %d training points (%s), %d neighbours each (%s order), from %s", n, what, v.Vecchia, order, describeTheta(names, theta0))
	}
	best, starts, err := vfit.MaximizeStarts(e.ctx, p, *k, params, theta0, c.Restarts, cfg)
	if errors.Is(err, vecchia.ErrLaplaceBreakdown) {
		return &dataError{fmt.Sprintf("%s: %v (at %s): the Vecchia conditionals are far weaker than the labels' information there; start elsewhere (--alpha, --beta) or give more neighbours", train.source, err, describeTheta(names, theta0))}
	}
	if err != nil {
		return c.fitError(err, names, theta0, scale, train.names)
	}
	res := starts[best].Result
	ev := res.Evidence
	// The gradient at the optimum, of the objective the search maximized
	// (the evidence on the best start's own final structure, and the
	// prior).
	lz, grad, err := ev.At(e.ctx, res.Theta, true)
	if err != nil {
		return fmt.Errorf("the evidence's gradient at the optimum: %w", err)
	}
	var exact *fit.FitResult
	if c.VecchiaExact {
		if exact, err = c.vecchiaExact(e, ev, res.Theta, lz, cfg, names, theta0, scale, train.names); err != nil {
			return err
		}
	}
	rows, ranOff, gnorm := vecchiaHyperRows(k, ev.KernelAt(res.Theta), params, grad, res, cfg, names, train.names)
	hf := format.HyperFit{Kernel: c.Kernel, Standardize: c.Standardize, LogML: lz, SELogML: math.NaN(), EPLogZ: math.NaN(),
		LogPrior: cfg.Prior.LogPDF(res.Theta)}
	if exact != nil {
		rows, ranOff = exactHyperRows(rows, ev, exact, cfg, names)
		hf.LogML, hf.SELogML, hf.EPLogZ, hf.LogPrior = exact.Final.Result.LogP, exact.Final.Result.SE, lz, cfg.Prior.LogPDF(exact.Theta)
		gnorm = exact.GradNorm
	}
	meta := c.vecchiaFitMeta(dataMeta, res, order, startDesc, priorSD, gnorm, names, cfg, ranOff, starts, best)
	if exact != nil {
		c.vecchiaExactMeta(meta, exact)
		if ok, why := exact.Final.Result.Trust(); !ok {
			e.rep.warnf("the final estimate's standard error is not reliable: %s", why)
		}
	}
	if labels.classes != nil {
		meta[format.KeyClasses] = format.JoinClasses(labels.classes)
		delete(meta, format.KeyLabelPositive)
		delete(meta, format.KeyLabelNegative)
	}
	if rep := ev.S.Duplicates(); rep > 0 {
		e.rep.warnf("%d of %d training points repeat an earlier point's features: each shares that point's latent value, with a label of its own (docs/vecchia.md)", rep, n)
	}
	if res.Kept {
		e.rep.warnf("the neighbours at the fitted length scales break the Vecchia-Laplace factor down even with a dense block of %d rows: the optimum is the search's on the neighbours at the scales in gpc:vecchia_scales, more than a factor %d from the fitted ones (more neighbours, --vecchia, may help)", vecchia.MaxBlock, vfit.RestructureFactor)
	}
	if ranOff != nil {
		e.rep.warnf("%d hyperparameter(s) ran off to the edge of their box, where the likelihood no longer depends on them or still rises (fit.Bounds): %s", len(ranOff), shortList(ranOff, 4))
	}
	if c.Progress || e.rep.tty && !c.Quiet {
		post := ""
		if priorSD > 0 {
			post = fmt.Sprintf(", log prior %.6g (sd %g), log posterior %.6g", hf.LogPrior, priorSD, hf.LogML+hf.LogPrior)
		}
		if exact != nil {
			e.rep.note("Vecchia log ML %.6g (se %.2g, m = %d)%s at %s; gradient norm %.3g against noise %.3g; %d estimates after the Laplace stage's %d evaluations, %s",
				hf.LogML, hf.SELogML, v.Vecchia, post, describeTheta(names, exact.Theta), gnorm, exact.NoiseNorm, exact.Evals, res.Evals, fmtDuration(time.Since(start).Seconds()))
		} else {
			e.rep.note("Vecchia-Laplace log evidence %.6g (m = %d)%s at %s; gradient norm %.3g; %d evaluations, %d gradients, %s",
				hf.LogML, v.Vecchia, post, describeTheta(names, res.Theta), gnorm, res.Evals, res.Grads, fmtDuration(time.Since(start).Seconds()))
		}
	}
	return format.WriteTable(e.stdout, format.HyperTable(hf, rows, meta), c.outputFormat(e.stdout), 0, format.NewAllocator())
}

// vecchiaHyperRows is the fit's table of hyperparameters at res's optimum
// (kernel kf): each value and the objective's gradient (the evidence's,
// grad, and the prior's), the ones that ran off to the box's edge, and
// the gradient's norm over the others.
func vecchiaHyperRows(k, kf *gp.Kernel, params []gp.Hyper, grad []float64, res *vfit.Result, cfg fit.FitConfig, names, features []string) (rows []format.HyperRow, ranOff []string, gnorm float64) {
	rows = make([]format.HyperRow, len(params))
	for j, h := range params {
		if cfg.Prior.Mu != nil {
			grad[j] -= (res.Theta[j] - cfg.Prior.Mu[j]) / (cfg.Prior.SD[j] * cfg.Prior.SD[j])
		}
		r := format.HyperRow{Name: hyperKindName(h.Kind), Value: h.Get(kf), Grad: grad[j], SEGrad: 0, MCSELog: math.NaN(), EPValue: math.NaN()}
		if k.Kind == gp.KernelARD && h.Kind == gp.HyperAlpha {
			r.Feature = features[h.Index]
		}
		var off string
		if r.Bound, off = ranOffAt(res.Bound[j], names[j], cfg.Lower, cfg.Upper, j); off != "" {
			ranOff = append(ranOff, off)
		} else {
			gnorm += grad[j] * grad[j]
		}
		rows[j] = r
	}
	return rows, ranOff, math.Sqrt(gnorm)
}

// vecchiaFitMeta is the Vecchia fit's metadata: the data's, the evidence
// it maximized (gpc:evidence), the Vecchia model's, and the search's.
func (c *fitCmd) vecchiaFitMeta(dataMeta map[string]string, res *vfit.Result, order vecchia.OrderKind, startDesc string, priorSD, gnorm float64, names []string, cfg fit.FitConfig, ranOff []string, starts []vfit.Start, best int) map[string]string {
	v, ev := &c.fitVecchiaFlags.v, res.Evidence
	meta := map[string]string{}
	for key, val := range dataMeta {
		meta[key] = val
	}
	meta[format.KeyVersion] = Version
	meta["gpc:kernel"] = c.Kernel
	meta[format.KeySeed] = strconv.FormatUint(uint64(c.Seed), 10)
	model, grad := "", "its exact gradient"
	if ev.P.Classes > 2 {
		model, grad = fmt.Sprintf(" (the multinomial probit classifier of %d classes, one kernel; in the classes' %d contrasts per point)", ev.P.Classes, ev.P.Classes-1), fmt.Sprintf("its gradient by central differences of step %g in each log-hyperparameter", vfit.FDStep)
	}
	meta["gpc:evidence"] = fmt.Sprintf("vecchia-laplace: the Laplace evidence of the Vecchia model%s with m = %d neighbours per point in the %s order (nugget %s), its log-determinant's factor incomplete beyond a dense block of %d rows, %s; an approximation of the log marginal likelihood, maximized deterministically", model, v.Vecchia, order, fmtFloat(v.VecchiaNugget), ev.Block, grad)
	meta[format.KeyVecchiaM] = strconv.Itoa(int(v.Vecchia))
	meta[format.KeyVecchiaOrder] = order.String()
	meta[format.KeyVecchiaNugget] = fmtFloat(v.VecchiaNugget)
	meta[format.KeyVecchiaRepeat] = strconv.Itoa(ev.S.Duplicates())
	meta["gpc:laplace_block"] = strconv.Itoa(ev.Block)
	if ev.Scales != nil {
		// The ard kernel's neighbours: the length scales whose metric
		// the final structure was computed in.
		meta["gpc:vecchia_scales"] = format.JoinFloats(ev.Scales)
	}
	meta["gpc:restructures"] = strconv.Itoa(res.Restructures)
	meta["gpc:reblocks"] = strconv.Itoa(res.Reblocks)
	if res.Kept {
		meta["gpc:vecchia_kept"] = "the structure at the fitted length scales broke the Laplace factor down: the search's structure (gpc:vecchia_scales) kept"
	}
	meta["gpc:start"] = startDesc
	meta["gpc:prior_sd"] = strconv.FormatFloat(priorSD, 'g', -1, 64)
	meta["gpc:grad_norm"] = fmtFloat(gnorm)
	meta["gpc:evaluations"] = strconv.Itoa(res.Evals)
	meta["gpc:gradients"] = strconv.Itoa(res.Grads)
	meta["gpc:bounds"] = describeBounds(names, cfg.Lower, cfg.Upper)
	if ranOff != nil {
		meta["gpc:ran_off"] = strings.Join(ranOff, "; ")
	}
	if c.Restarts > 0 {
		meta["gpc:restarts"] = describeVecchiaStarts(starts, best, names)
	}
	return meta
}

// vecchiaFitBytes is the peak memory of gpc-fit --vecchia m on n training
// rows: per row, the features as read, the structure, the conditionals,
// the Laplace evidence's factors and their adjoints, O(m) each, and
// scratch that grows as m^2 over the rows; fitted to the peak resident
// memory measured at n = 10^4 with m = 10, 30, 50 and 100 (60, 109, 186
// and 480 MB), and 16% above it at n = 10^5, m = 50 (1.58 GB).
func vecchiaFitBytes(n, m int) float64 {
	fm := float64(m)
	return float64(n) * (4400 + 130*fm + 3*fm*fm)
}

// vecchiaExactBytes is what the exact stage (--vecchia-exact) adds to the
// fit's peak memory on n training rows with m neighbours, its largest
// estimate of final particles on threads goroutines (0: GOMAXPROCS): the
// estimator's preparation (its pair cache grows as m^2), fitted to
// gpc-train's peak at n = 10^5, m = 30 (617 MB) and to the exact stage's
// addition at n = 10^5, m = 50 (3.34 GB against the Laplace stage's 2.02
// GB, with 8000 final particles), and the particles beyond those 8000: a
// group of the default 64 per goroutine, 20 bytes per particle and row
// (the latent values and the score's scratch).
func vecchiaExactBytes(n, m, final, threads int) float64 {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	extra := float64(threads) * float64(max(0, final-8000)/64+1) * float64(n) * 20
	return vecchiaPrepareBytes(n, m) + extra
}

// vecchiaPrepareBytes is the peak memory of the estimator's preparation
// (vecchia.Prepare) on n training rows with m neighbours, its pair cache
// growing as m^2: fitted to gpc-train's peak at n = 10^5, m = 30 (617 MB)
// and with vecchiaExactBytes' particles to the exact stage at n = 10^5, m
// = 50; 6.2 GB at n = 10^6, m = 30, where gpc-train's peak is 5.0 GB.
func vecchiaPrepareBytes(n, m int) float64 {
	fm := float64(m)
	return float64(n) * (2260 + 4.4*fm*fm)
}

// describeVecchiaStarts writes each start of a Vecchia fit with restarts:
// where it started and ended, with the objective that chose the best (the
// first start's evidence, plus the prior), or why it has none.
func describeVecchiaStarts(starts []vfit.Start, best int, names []string) string {
	parts := make([]string, len(starts))
	for i, st := range starts {
		tag := ""
		if i == best {
			tag = " (best)"
		}
		switch {
		case st.Result == nil:
			parts[i] = fmt.Sprintf("start %d%s: from %s: %v", i, tag, describeTheta(names, st.Theta), st.Err)
		default:
			v := fmt.Sprintf("objective %.6g, its own evidence %.6g", st.Objective, st.Result.LogZ)
			if st.Err != nil {
				v += fmt.Sprintf(" [%v]", st.Err)
			}
			parts[i] = fmt.Sprintf("start %d%s: from %s to %s: %s", i, tag, describeTheta(names, st.Theta), describeTheta(names, st.Result.Theta), v)
		}
	}
	return strings.Join(parts, "; ")
}

// vecchiaExact runs the exact stage (vfit.Exact) from the Laplace stage's
// optimum theta (evidence lz there) on ev's final structure, with the
// exact stage's flags.
func (c *fitCmd) vecchiaExact(e *env, ev *vfit.Evidence, theta []float64, lz float64, cfg fit.FitConfig, names []string, theta0 []float64, scale *fit.DataScale, features []string) (*fit.FitResult, error) {
	cfg.Samples, cfg.Rounds, cfg.FinalSamples, cfg.Hessian = c.Samples, c.Rounds, c.FinalSamples, c.Hessian
	if c.Progress {
		e.rep.note("the exact stage: the Vecchia model's log marginal likelihood by gpc-train's estimator, %d rounds up to %d particles, from the Laplace optimum %s", max(1, c.Rounds), c.Samples, describeTheta(names, theta))
	}
	res, err := vfit.Exact(e.ctx, ev, theta, lz, cfg)
	var nc *fit.ErrNotConverged
	switch {
	case errors.As(err, &nc):
		return nil, &dataError{nc.Error()}
	case err != nil && res == nil:
		return nil, c.fitError(err, names, theta0, scale, features)
	case err != nil:
		return nil, c.fitError(err, names, res.Theta, scale, features)
	}
	return res, nil
}

// exactHyperRows are the Laplace stage's rows moved to the exact stage's
// result: each value at its optimum, the Monte Carlo gradient (with the
// prior's) and its standard error, mc_se_log with --hessian, ep_value the
// Laplace optimum's value; and the hyperparameters that ran off.
func exactHyperRows(rows []format.HyperRow, ev *vfit.Evidence, res *fit.FitResult, cfg fit.FitConfig, names []string) ([]format.HyperRow, []string) {
	kf, kl := ev.KernelAt(res.Theta), ev.KernelAt(res.EPTheta)
	var ranOff []string
	for j, h := range ev.Params {
		r := &rows[j]
		r.Value, r.EPValue, r.Grad, r.SEGrad = h.Get(kf), h.Get(kl), res.Final.Grad[j], res.Final.SE[j]
		if res.MCSE != nil {
			r.MCSELog = res.MCSE[j]
		}
		var off string
		if r.Bound, off = ranOffAt(res.Bound[j], names[j], cfg.Lower, cfg.Upper, j); off != "" {
			ranOff = append(ranOff, off)
		}
	}
	return rows, ranOff
}

// vecchiaExactMeta adds the exact stage's metadata to the Vecchia fit's.
func (c *fitCmd) vecchiaExactMeta(meta map[string]string, res *fit.FitResult) {
	meta["gpc:evidence"] = "vecchia-exact: the Vecchia model's log marginal likelihood, estimated by gpc-train's estimator (EP-twisted SMC on the sparse model) with its gradient by Fisher's identity on common random numbers, maximized from the optimum of " + meta["gpc:evidence"]
	final := c.finalSamples()
	meta[format.KeySamples] = strconv.Itoa(c.Samples)
	meta["gpc:final_samples"] = strconv.Itoa(final)
	meta["gpc:noise_norm"] = fmtFloat(res.NoiseNorm)
	meta["gpc:estimates"] = strconv.Itoa(res.Evals)
	meta["gpc:iterations"] = strconv.Itoa(res.Iterations)
	meta["gpc:exact_gain"] = fmt.Sprintf("%s (se %s); kept the Laplace optimum: %t", fmtFloat(res.Gain), fmtFloat(res.SEGain), res.KeptEP)
}
