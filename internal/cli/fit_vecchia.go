package cli

// gpc-fit --vecchia m (docs/vecchia-fit.md): the hyperparameters fitted on
// the Vecchia path by the Vecchia model's Laplace evidence
// (vfit.MaximizeStarts), written as the dense fit's table (gpc.hyper/1)
// that gpc-kernel --hyper reads.

import (
	"errors"
	"fmt"
	"math"
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
const fitVecchiaHelp = `The Vecchia path (--vecchia m, or auto for m = 50; docs/vecchia-fit.md): for many training points (from about 10^4, where the dense fit's N x N matrices take GBs and its N^3 work minutes to hours), the hyperparameters are fitted on all the rows by maximizing the Vecchia model's Laplace evidence (the model that gpc-kernel --vecchia m writes: each point conditioned on its m nearest earlier points in the maxmin order), O(N m^3) per evaluation with its exact gradient, by the same L-BFGS steps, start, box, run-off, traps, --restarts, --prior-sd and --seed as the dense fit's ep stage. It is one stage, deterministic, and approximate twice over: the Vecchia model for m below N - 1, and Laplace's approximation of its evidence. The Monte Carlo stage of the dense fit (the exact log marginal likelihood's gradient by Fisher's identity) is not built for the Vecchia path: log_ml in the output is the Vecchia model's Laplace evidence at the optimum (se_log_ml, mc_se_log, ep_value and ep_log_z NaN), grad its gradient (with the prior's), exact, se_grad 0, and gpc:evidence in the metadata says so. Three or more classes: the multinomial probit classifier with one kernel shared by the classes (the model gpc-kernel --vecchia m writes for them), its Laplace evidence in the classes' C - 1 contrasts per point, the gradient by central differences (two evaluations per hyperparameter); --per-class is refused. The exact stage's flags (--samples, --final-samples, --rounds, --hessian, --no-ep, --method, --order, --groups, --ess, --jitter) are refused with --vecchia. The ard kernel's ordering and neighbours follow its length scales: computed at the start, and again at an optimum whose length scales have moved relative to one another by more than a factor 2 (up to 4 times). The Vecchia model's log marginal likelihood itself, which log_ml approximates, is what gpc-train estimates on gpc-kernel --vecchia m's model (its gpc:log_ml).`

// fitVecchiaFlags are gpc-fit's --vecchia and its settings; they are
// checked and resolved (auto) by gpc-kernel's rule (vecchiaFlags).
type fitVecchiaFlags struct {
	Vecchia       neighbours `placeholder:"m" default:"0" help:"Fit on the Vecchia path: maximize the Laplace evidence of the Vecchia model with m neighbours per point (the model gpc-kernel --vecchia m writes) on all the training rows, instead of the dense fit's two stages; auto: m = 50 (gpc-kernel's --vecchia auto chooses its sets from the data and the fitted kernel). At most 254; 0: the dense fit. See the Vecchia path, above."`
	VecchiaOrder  string     `enum:"maxmin,given" default:"maxmin" help:"With --vecchia: the order of the training points, as gpc-kernel's --vecchia-order (give gpc-kernel the same)."`
	VecchiaNugget float64    `default:"1e-4" help:"With --vecchia: the part of the probit's noise variance moved into the latent process, as gpc-kernel's --vecchia-nugget (give gpc-kernel the same)."`

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
		return nil
	}
	for _, x := range []struct {
		set  bool
		flag string
	}{
		{c.Samples != 2000, "--samples"}, {c.FinalSamples != 0, "--final-samples"}, {c.Rounds != 2, "--rounds"},
		{c.Hessian, "--hessian"}, {!c.EP, "--no-ep"}, {c.Method != "auto", "--method"}, {c.Order != "auto", "--order"},
		{c.Groups != 0, "--groups"}, {c.ESS != 0, "--ess"}, {c.Jitter != 0, "--jitter"},
		{c.PerClass, "--per-class"}, {c.ClassAlpha != nil, "--class-alpha"}, {c.ClassBeta != nil, "--class-beta"},
	} {
		if x.set {
			return usagef("%s with --vecchia: gpc-fit --vecchia maximizes the Vecchia model's Laplace evidence alone, and has no Monte Carlo stage and one kernel shared by the classes (docs/vecchia-fit.md): drop %s, or --vecchia for the dense fit", x.flag, x.flag)
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
	if avail, ok := availableMemory(); ok {
		// The multi-class evidence's expanded model: C - 1 latent values
		// per point, each conditioned on C - 1 per neighbour.
		l := max(len(labels.classes)-1, 1)
		if need := vecchiaFitBytes(n*l, int(v.Vecchia)*l); need > float64(avail) {
			return &dataError{fmt.Sprintf("%s: the Vecchia fit of %d training rows with m = %d neighbours needs about %s, and only %s of memory is available: give fewer neighbours (--vecchia 30: about %s) or fit on fewer rows", train.source, n, v.Vecchia, format.Bytes(need), format.Bytes(float64(avail)), format.Bytes(vecchiaFitBytes(n, 30)))}
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
	rows, ranOff, gnorm := vecchiaHyperRows(k, ev.KernelAt(res.Theta), params, grad, res, cfg, names, train.names)
	hf := format.HyperFit{Kernel: c.Kernel, Standardize: c.Standardize, LogML: lz, SELogML: math.NaN(), EPLogZ: math.NaN(),
		LogPrior: cfg.Prior.LogPDF(res.Theta)}
	meta := c.vecchiaFitMeta(dataMeta, res, order, startDesc, priorSD, gnorm, names, cfg, ranOff, starts, best)
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
		e.rep.note("Vecchia-Laplace log evidence %.6g (m = %d)%s at %s; gradient norm %.3g; %d evaluations, %d gradients, %s",
			hf.LogML, v.Vecchia, post, describeTheta(names, res.Theta), gnorm, res.Evals, res.Grads, fmtDuration(time.Since(start).Seconds()))
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
		switch res.Bound[j] {
		case -1:
			r.Bound = "lower"
			ranOff = append(ranOff, names[j]+" to its lower bound "+fmtFloat(math.Exp(cfg.Lower[j])))
		case 1:
			r.Bound = "upper"
			ranOff = append(ranOff, names[j]+" to its upper bound "+fmtFloat(math.Exp(cfg.Upper[j])))
		default:
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
	meta["gpc:evidence"] = fmt.Sprintf("vecchia-laplace: the Laplace evidence of the Vecchia model%s with m = %d neighbours per point in the %s order (nugget %s), its log-determinant's factor incomplete beyond a dense block of %d rows, %s; an approximation of the log marginal likelihood, maximized deterministically: no Monte Carlo stage (Fisher's identity) on the Vecchia path", model, v.Vecchia, order, fmtFloat(v.VecchiaNugget), ev.Block, grad)
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
