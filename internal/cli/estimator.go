package cli

import (
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

// estimatorFlags are the flags of the tools that run the estimator
// (gpc-orthant, gpc-train, gpc-tune, gpc-mcmc). The default of --samples
// is the kong variable "samples", set where the struct is embedded.
type estimatorFlags struct {
	Samples int `default:"${samples}" help:"Particles per estimate, M (split into --groups groups)."`
	seedFlags
	Method string  `enum:"auto,ep,smc,met,paper-hard,paper-soft" default:"auto" help:"Estimator: ep (particles propagated under expectation propagation's Gaussian approximation of the truncated normal and weighted step by step by the exact target over it), smc (draws from the truncated conditionals, probability weights, systematic resampling when the ESS halves), met (the same with Botev's minimax exponentially tilted proposal), paper-hard (the paper's Algorithm GPC-MC: rejection and refill, product of acceptance fractions), paper-soft (the same with the paper's soft count), or auto: chosen with the order by pilot runs (gpc-tune and gpc-mcmc choose once, at the grid's middle point or the chain's start, and keep it)."`
	Order  string  `enum:"auto,given,shuffle,interleave,greedy,variance,sharp" default:"auto" help:"Variable order: given (the input order), shuffle (random, from the seed), interleave (alternate the classes of the y column), greedy (Genz-Bretz: smallest conditional probability first), variance (least predictable variable first), sharp (variables nearly determined by all the others first, then as variance), or auto: with --method auto, ep/greedy or met/sharp, chosen by pilot runs of samples/16 particles each; with ep, greedy or variance; with smc or met, sharp or greedy; with the paper's methods, shuffle. gpc-tune and gpc-mcmc order once, at the grid's middle point or the chain's start."`
	Groups int     `default:"0" help:"Independent particle groups; the estimate is their mean and the standard error comes from their spread (0: up to 32, at least 250 particles each; for --method ep and the Vecchia path up to 64, at least 125 each, and on the Vecchia path beyond 5 x 10^5 training rows fewer and larger ones, that count divided by ceil(N / 2.5 x 10^5) but not below 16 (nor above that count): 16 groups of 625 for 10^4 particles at N = 10^6; for gpc-mcmc at least 8; 1 for the paper's methods, which then report no standard error)."`
	ESS    float64 `name:"ess" default:"0" help:"Resample when the effective sample size falls below this fraction of the particles, in (0, 1] (0: 0.5 for smc, and for ep below 1000 variables, 0.8 for ep from 1000 on, 0.001 for met; the Vecchia path: 0.8 above 500000 training rows with two classes, else 0.5)."`
	Jitter float64 `default:"0" help:"Add this to the covariance diagonal before factorising; recorded in the output metadata (gpc:jitter)."`
	// plan is the tool's --prepare-only and --plan (plan.go), nil for the
	// tools without them.
	plan *planFlags
}

func (c *estimatorFlags) validateEstimator() error {
	if err := c.validateSeed(); err != nil {
		return err
	}
	switch {
	case c.Samples < 2:
		return usagef("--samples %d: at least 2 particles are needed", c.Samples)
	case c.Groups < 0:
		return usagef("--groups %d: must be 0 (default) or more", c.Groups)
	case !(c.ESS >= 0 && c.ESS <= 1):
		return usagef("--ess %v: must be in (0, 1], or 0 for the method's default", c.ESS)
	case !(c.Jitter >= 0) || math.IsInf(c.Jitter, 1):
		return usagef("--jitter %v: must be a finite number >= 0", c.Jitter)
	}
	if g := c.Groups; g > 0 && c.Samples/g < 2 {
		return usagef("--samples %d in --groups %d leaves fewer than 2 particles per group", c.Samples, g)
	}
	return nil
}

// config returns the estimator's configuration, the particles' memory
// bounded by maxMemory (core.Config.MaxMemory); an auto method is settled
// by prepare.
func (c *estimatorFlags) config(threads int, maxMemory int64) core.Config {
	method, _ := core.ParseMethod(c.Method)
	return core.Config{
		Method: method, Samples: c.Samples, Groups: c.Groups, Seed: uint64(c.Seed),
		Threads: threads, ESSThreshold: c.ESS, MaxMemory: maxMemory, Alloc: sysmem.Floats,
	}
}

// candidates returns what --method and --order leave to choose: a single
// candidate when both are given.
func candidates(method, order string) []core.Candidate {
	var ms []core.Method
	if m, ok := core.ParseMethod(method); ok {
		ms = []core.Method{m}
	}
	var os []core.OrderKind
	if o, ok := core.ParseOrder(order); ok {
		os = []core.OrderKind{o}
	}
	switch {
	case ms == nil && os == nil:
		return core.AutoCandidates
	case ms == nil:
		ms = []core.Method{core.MethodEP, core.MethodMET}
	case os == nil && (ms[0] == core.MethodPaperHard || ms[0] == core.MethodPaperSoft):
		os = []core.OrderKind{core.OrderShuffle} // the paper's shuffled order
	case os == nil && ms[0] == core.MethodEP:
		os = []core.OrderKind{core.OrderGreedy, core.OrderVariance}
	case os == nil:
		os = []core.OrderKind{core.OrderSharp, core.OrderGreedy}
	}
	var cs []core.Candidate
	for _, m := range ms {
		for _, o := range os {
			cs = append(cs, core.Candidate{Method: m, Order: o})
		}
	}
	return cs
}

// matrixGCPercent is the garbage collector's GOGC while gpc-orthant and
// gpc-train run: the covariance, its factors and the particles hold no
// pointers, so collecting when the heap has grown by a quarter rather than
// doubled costs little and keeps the peak nearer what is live (N = 2000:
// 160 MB instead of 190-230, the same CPU time; docs/benchmarks.md, Large
// N).
const matrixGCPercent = 25

// releaseLarge returns the memory of the N x N matrices (or a Vecchia
// preparation's scratch) just let go of to the operating system at once (a
// collection, milliseconds on a heap of pointer-free matrices), from 1000
// variables on, so that the other tools of a pipeline, and the particles'
// arrays, have it. Those arrays are on Go's heap (sysmem.Floats), but each
// is one span of gigabytes, which the preparation's freed and scattered
// spans do not hold: the heap grows for them, and takes its pages from the
// system, where the release has just put the preparation's. Without it
// (gpc-train at N = 10^6, two groups of 625 particles, the 2-core AMD EPYC
// guest, 2026-12-02) the peak was 9.4 GB instead of 5.8 and the run's
// system time 24.4 s instead of 15.4: on that guest a page the process
// touches for the first time costs about 2 s a GB (docs/vecchia.md,
// Calibration: *Where the particles' time goes at 10^6, and the guest's
// first touches*).
func releaseLarge(n int) {
	if n >= 1000 {
		debug.FreeOSMemory()
	}
}

// lowerGC sets GOGC to matrixGCPercent unless the user's (the GOGC
// variable) is lower or off, and returns what restores it.
func lowerGC() (restore func()) {
	old := debug.SetGCPercent(matrixGCPercent)
	if old < matrixGCPercent {
		debug.SetGCPercent(old)
	}
	return func() { debug.SetGCPercent(old) }
}

// prepare orders, factorises (and for met tilts) the box as --method and
// --order ask, choosing by pilot runs when they leave more than one
// candidate, and sets cfg.Method. With progress it reports each phase of
// the preparation (reporter.trace).
func (c *estimatorFlags) prepare(e *env, box core.Box, name string, cfg *core.Config, progress bool) (*core.Factor, []core.Pilot, error) {
	if c.plan != nil && c.plan.Plan != "" {
		return c.readPlan(e, c.plan.Plan, box, cfg)
	}
	cands := candidates(c.Method, c.Order)
	if cands[0].Order == core.OrderInterleave && box.Labels == nil {
		return nil, nil, &dataError{fmt.Sprintf("--order interleave alternates the classes of the y column, and %s has none", name)}
	}
	e.rep.preparing(box.N, len(cands) > 1)
	tr, done := e.rep.trace(progress)
	var f *core.Factor
	var pilots []core.Pilot
	var err error
	if len(cands) > 1 {
		ccfg := *cfg
		ccfg.Trace = tr
		var cand core.Candidate
		f, cand, pilots, err = core.Choose(e.ctx, box, cands, c.Jitter, ccfg)
		cfg.Method = cand.Method
	} else {
		cfg.Method = cands[0].Method
		f, err = core.PrepareTrace(box, cands[0], cfg.Seed, c.Jitter, tr)
	}
	if err == nil {
		done()
	}
	return f, pilots, err
}

// preparing says, with --progress, that the estimator prepares n variables
// (seconds at N = 1000, more beyond, before the first particle moves), as
// a progress line at 0% that the particles' progress then replaces.
func (r *reporter) preparing(n int, pilots bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.progress {
		return
	}
	what := "the variable order and the factorisation"
	if pilots {
		what = "the candidates' orders and factorisations, and their pilot runs"
	}
	r.drawLine(fmt.Sprintf("%s:   0.0%%: preparing %d variables (%s)", r.name, n, what))
}

// prepareDense prepares the box (prepare) as the problem the tools run,
// the input's metadata inMeta passed on to the outputs.
func (c *estimatorFlags) prepareDense(e *env, box core.Box, inMeta map[string]string, name string, cfg *core.Config, progress bool) (*denseProblem, error) {
	f, pilots, err := c.prepare(e, box, name, cfg, progress)
	if err != nil {
		return nil, err
	}
	return &denseProblem{Factor: f, flags: c, box: box, pilots: pilots, inMeta: inMeta}, nil
}

// vecchiaChecks refuses the estimator flags that the Vecchia path does not
// have: it has one method and one order (the model's) and no jitter (its
// nugget is gpc-kernel's).
func (c *estimatorFlags) vecchiaChecks(name string) error {
	switch {
	case c.Method != "auto":
		return usagef("--method %s: %s is a Vecchia model (gpc.vecchia/1), which has one estimator, EP-twisted SMC on the sparse model (docs/vecchia.md): drop --method", c.Method, name)
	case c.Order != "auto":
		return usagef("--order %s: %s is a Vecchia model, whose order is gpc-kernel's (--vecchia-order): drop --order", c.Order, name)
	case c.Jitter != 0:
		return usagef("--jitter %v: %s is a Vecchia model, whose conditionals gpc-kernel computed (with --vecchia-nugget): drop --jitter", c.Jitter, name)
	}
	return nil
}

// prepareVecchia reads a Vecchia stream (after vecchiaChecks) and
// prepares its estimator as the problem the tools run: from --plan's file
// when given (readVecchiaPlan), else by vecchia.Prepare. Its particles'
// latent values go in cfg.Alloc's memory (huge pages, committed at once).
func (c *estimatorFlags) prepareVecchia(e *env, r io.Reader, name string, progress bool, mem format.Allocator) (*vecchiaProblem, error) {
	if err := c.vecchiaChecks(name); err != nil {
		return nil, err
	}
	s, err := format.ReadVecchia(r, name, mem)
	if err != nil {
		return nil, err
	}
	classes, err := s.Classes(name)
	if err != nil {
		return nil, err
	}
	if classes != nil {
		if c.plan != nil && c.plan.Plan != "" {
			return nil, usagef("--plan %s: %s is a multi-class Vecchia model, whose preparation has no plan stream yet: drop --plan", c.plan.Plan, name)
		}
		if c.plan != nil && c.plan.PrepareOnly {
			return nil, errPrepareOnlyClasses() // before the preparation, not after it
		}
		return c.prepareVecchiaClasses(e, s, name, classes, progress)
	}
	var p *vecchia.Prepared
	if c.plan != nil && c.plan.Plan != "" {
		p, err = c.readVecchiaPlan(e, c.plan.Plan, s.Model, mem)
	} else {
		// Its memory in huge pages (sysmem.AdviseHeap): at N = 10^6 it
		// faulted in its 5 GB a 4 KiB page at a time, about 18 CPU
		// seconds.
		sysmem.AdviseHeap(int64(vecchiaPrepareBytes(s.Model.N, s.Model.M())))
		tr, done := e.rep.trace(progress)
		p, err = vecchia.Prepare(e.ctx, s.Model, tr)
		done()
	}
	if err != nil {
		return nil, err
	}
	if p.Shift > 0 {
		e.rep.warnf("the proposal's incomplete factorisation needed its diagonal raised by %.3g: the estimate is exact, its variance larger", p.Shift)
	}
	if p.SiteScale < 1 {
		e.rep.warnf("the proposal keeps only %.3g of EP's sites after its dense block (their fill-in is more than the Vecchia pattern holds: length scales long beside the points' spacing, or many features): the estimate is exact, its variance larger; more neighbours, or the dense path, do better", p.SiteScale)
	}
	c.correctionCheck(e, p, progress)
	releaseLarge(s.Model.N) // the preparation's and the check's scratch, before the particles
	prep := fmt.Sprintf("laplace_steps=%d block=%d ep_rounds=%d shift=%g clipped=%d site_scale=%g", p.Laplace.Iterations, p.Block, p.EP.Sweeps, p.Shift, p.Clipped, p.SiteScale)
	if p.Complete() {
		prep += " complete=true" // the dense path's sites, the exact factor (docs/vecchia.md)
	}
	return &vecchiaProblem{Estimator: p, s: s, ep: p.EP, prep: prep, n: s.Model.N, t: s.Model.T, ess: c.ESS, seed: c.Seed}, nil
}

// correctionProbes are the probes of correctionCheck's estimate.
const correctionProbes = 16

// correctionCheck estimates, before the particles run, the variance of
// the correction that the proposal's incomplete factor leaves to the
// particles' final weights (vecchia.Prepared.CorrectionVariance: about
// 3 s at N = 10^6), notes it with --progress, and warns where it is
// beyond what a group samples: exp(r) spreads like a log-normal of
// variance v, whose effective sample size is about n exp(-v) of n
// particles, so past v = log n a group's estimate is about one
// particle's and the groups' estimates are heavy-tailed whatever n
// (docs/vecchia.md, Calibration).
func (c *estimatorFlags) correctionCheck(e *env, p *vecchia.Prepared, progress bool) {
	if p.Complete() || c.plan != nil && c.plan.PrepareOnly {
		return // exact; or no particles run here (the shards check)
	}
	groups := c.Groups
	if groups == 0 {
		groups = vecchia.DefaultGroups(p.Dim(), c.Samples)
	}
	size := max(1, c.Samples/max(1, groups))
	v, se := p.CorrectionVariance(correctionProbes)
	if progress {
		e.rep.note("the proposal's deferred correction: variance %.3g (se %.2g) under q, against log %d = %.3g for groups of %d particles", v, se, size, math.Log(float64(size)), size)
	}
	if v > math.Log(float64(size)) {
		e.rep.warnf("the proposal's incomplete factor leaves the particles' final weights a correction of variance %.3g (se %.2g), beyond the log %d = %.3g that groups of %d particles sample: expect heavy-tailed group estimates and a standard error that is not reliable (docs/vecchia.md, Calibration: what the tail at 10^6 is)", v, se, size, math.Log(float64(size)), size)
	}
}

// estimatorMeta is the metadata that says how an estimate was made.
func estimatorMeta(f *core.Factor, cfg core.Config, pilots []core.Pilot, jitter float64) map[string]string {
	perm := make([]int, len(f.Perm))
	copy(perm, f.Perm)
	meta := map[string]string{
		format.KeyVersion:   Version,
		format.KeySeed:      strconv.FormatUint(cfg.Seed, 10),
		format.KeyOrder:     format.JoinInts(perm),
		format.KeyOrderKind: f.Order.String(),
		format.KeyMethod:    cfg.Method.String(),
		format.KeyJitter:    strconv.FormatFloat(jitter, 'g', -1, 64),
	}
	if f.Mu != nil {
		meta[format.KeyTilt] = f.TiltStats.String()
	}
	if cfg.Method == core.MethodEP {
		meta[format.KeyEP] = f.EPStats.String()
	}
	if len(pilots) > 0 {
		var ps []string
		for _, p := range pilots {
			if p.Err != nil {
				ps = append(ps, fmt.Sprintf("%v failed: %v", p.Candidate, oneLine(p.Err.Error())))
				continue
			}
			ps = append(ps, fmt.Sprintf("%v log_p=%s se_log_p=%s samples=%d", p.Candidate,
				strconv.FormatFloat(p.Result.LogP, 'g', -1, 64), strconv.FormatFloat(p.Result.SE, 'g', -1, 64), p.Result.Samples))
		}
		meta[format.KeyPilots] = strings.Join(ps, "; ")
	}
	return meta
}

// boxOf is the integration problem of a covariance's train block.
func boxOf(cov *format.Covariance) core.Box {
	return core.Box{N: cov.N, Cov: cov.Cov, Lower: cov.Lower, Upper: cov.Upper, Mean: cov.Mean, Labels: cov.Y}
}
