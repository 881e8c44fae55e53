package vfit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// Problem is a training set on the Vecchia path and the Vecchia model's
// settings: two classes (the probit classifier), or three or more (the
// multinomial probit classifier with one kernel shared by the classes,
// vecchia.Multiclass).
type Problem struct {
	// X holds the n training points' features (n x D, row-major, the
	// kernel's: standardized as the tools do), Y their labels: +1 or -1
	// for two classes, the class indices 0..Classes-1 for more.
	X []float64
	D int
	Y []float64
	// Classes is the number of classes: 0 (or 2) for two, with labels
	// +1 and -1; 3 or more for the multinomial probit classifier, whose
	// evidence is vecchia.ClassLaplaceEvidence and whose gradient is
	// taken by central differences (FDStep).
	Classes int
	// M is the neighbours per point, Order the ordering.
	M     int
	Order vecchia.OrderKind
	// Nugget is moved from the probit's noise into the latent process
	// (vecchia.Options.Nugget); 0 selects vecchia.DefaultNugget.
	Nugget float64
	// Block is the number of leading rows that are dense in the evidence's
	// log-determinant factor (vecchia.LaplaceOptions.Block; at most every
	// row, and the factor exact with every row); 0 selects
	// vecchia.LaplaceBlock's rule at each structure's first point. Where
	// the factor breaks down at a structure's first point, or during a
	// search that then stops short of a stationary point (Maximize), the
	// block is doubled (from at least DefaultBlock), up to
	// vecchia.MaxBlock.
	Block int
	// Threads bounds the goroutines (0: GOMAXPROCS); no result depends
	// on it.
	Threads int
}

// DefaultBlock is the least dense block tried where the incomplete
// factor breaks down.
const DefaultBlock = 64

// multi reports whether p is a multi-class problem.
func (p *Problem) multi() bool { return p.Classes > 2 }

// latent is the latent values per point of p's model: 1, or the C - 1
// contrasts of C classes.
func (p *Problem) latent() int {
	if p.multi() {
		return p.Classes - 1
	}
	return 1
}

// maxBlock is the largest dense block of p's evidence, in training rows:
// vecchia.MaxBlock latent values, at most every row.
func (p *Problem) maxBlock() int {
	return min(len(p.Y), vecchia.MaxBlock/p.latent())
}

// labels returns a multi-class problem's labels as class indices.
func (p *Problem) labels() []int {
	y := make([]int, len(p.Y))
	for i, v := range p.Y {
		y[i] = int(v)
	}
	return y
}

func (p *Problem) nugget() float64 {
	if p.Nugget == 0 {
		return vecchia.DefaultNugget
	}
	return p.Nugget
}

// metric returns the features in the kernel's metric: ard's divided by
// their length scales, the others as they are.
func metric(p *Problem, k *gp.Kernel) []float64 {
	if k.Kind != gp.KernelARD {
		return p.X
	}
	out := make([]float64, len(p.X))
	for i, v := range p.X {
		out[i] = v / k.Alpha[i%p.D]
	}
	return out
}

// Evidence is the Vecchia classifier's Laplace evidence as a function of
// the log-hyperparameters theta (theta_j = log of Params[j], the others
// keeping Kernel's values) on one structure S, computed in the kernel's
// metric at Scales (the ard kernel's length scales; nil for the other
// kernels, whose structure no length scale changes). It keeps the last
// evaluation's mode as the next one's Newton start, and the last
// evaluation for the gradient at the same theta (a line search's
// accepted point). It is not safe for concurrent use.
type Evidence struct {
	P      *Problem
	Kernel gp.Kernel
	Params []gp.Hyper
	S      *vecchia.Structure
	Scales []float64
	// Block is the log-determinant's dense block in use.
	Block int
	// Evals and Grads count the evaluations and the gradients,
	// Breakdowns the evaluations that failed with
	// vecchia.ErrLaplaceBreakdown since the block was last set.
	Evals, Grads, Breakdowns int

	lap    *vecchia.LaplaceEvidence // two classes
	clap   *vecchia.ClassLaplace    // more
	mode   []float64                // the last mode, by input row
	last   []float64                // the theta of the last evaluation, nil if it failed
	lastLZ float64
	// lastGrad is the gradient at last, nil if not computed there.
	lastGrad []float64
}

// saved returns a copy of e's structure and evaluator, for restore.
func (e *Evidence) saved() Evidence {
	s := *e
	s.mode, s.last = slices.Clone(e.mode), slices.Clone(e.last)
	return s
}

// restore puts back the structure and evaluator of s (saved), keeping
// e's counts.
func (e *Evidence) restore(s Evidence) {
	s.Evals, s.Grads, s.Breakdowns = e.Evals, e.Grads, e.Breakdowns
	*e = s
}

// NewEvidence returns the evidence of problem p over the hyperparameters
// params of kernel k, on the structure computed in the kernel's metric at
// theta; where the log-determinant's factor breaks down at theta, the
// dense block is raised (Problem.Block). It returns an error if the
// structure or the model cannot be built, or the evidence fails at theta
// even with the largest block.
func NewEvidence(ctx context.Context, p *Problem, k gp.Kernel, params []gp.Hyper, theta []float64) (*Evidence, error) {
	e := &Evidence{P: p, Kernel: k, Params: slices.Clone(params), Block: p.Block}
	e.Kernel.Alpha = slices.Clone(k.Alpha)
	if err := e.restructure(ctx, theta); err != nil {
		return nil, err
	}
	return e, nil
}

// KernelAt returns the kernel at theta (fit.KernelFrom).
func (e *Evidence) KernelAt(theta []float64) *gp.Kernel {
	return fit.KernelFrom(e.Kernel, e.Params, theta)
}

// newStructure is vecchia.NewStructure (a variable so that a test can
// make a recomputed structure break down).
var newStructure = vecchia.NewStructure

// restructure computes the structure in the kernel's metric at theta and
// the evaluator for it (setBlock).
func (e *Evidence) restructure(ctx context.Context, theta []float64) error {
	p := e.P
	k := e.KernelAt(theta)
	s, err := newStructure(metric(p, k), len(p.Y), p.D, vecchia.Options{M: p.M, Order: p.Order, Threads: p.Threads})
	if err != nil {
		return err
	}
	e.S, e.Scales = s, nil
	if k.Kind == gp.KernelARD {
		e.Scales = slices.Clone(k.Alpha)
	}
	block := p.Block
	switch {
	case block > 0:
	case p.multi():
		m, err := vecchia.NewMulticlass(s, []*gp.Kernel{k}, p.Classes, p.X, p.labels(), p.nugget(), nil, nil, p.Threads)
		if err != nil {
			return err
		}
		block = vecchia.ClassLaplaceBlock(m)
	default:
		m, err := vecchia.NewClassifier(s, k, p.X, p.Y, p.nugget(), nil, nil, p.Threads)
		if err != nil {
			return err
		}
		block = vecchia.LaplaceBlock(m)
	}
	return e.setBlock(ctx, theta, block)
}

// setBlock makes the evaluator of the structure with the dense block
// block (at most every row), doubled (from at least DefaultBlock) while
// the evidence breaks down at theta, up to vecchia.MaxBlock latent values
// (or every row).
func (e *Evidence) setBlock(ctx context.Context, theta []float64, block int) error {
	p := e.P
	k := e.KernelAt(theta)
	e.Block, e.last = min(block, len(p.Y)), nil
	for {
		if p.multi() {
			m, err := vecchia.NewMulticlass(e.S, []*gp.Kernel{k}, p.Classes, p.X, p.labels(), p.nugget(), nil, nil, p.Threads)
			if err != nil {
				return err
			}
			e.clap = vecchia.NewClassLaplace(m, vecchia.LaplaceOptions{Block: e.Block})
		} else {
			m, err := vecchia.NewClassifier(e.S, k, p.X, p.Y, p.nugget(), nil, nil, p.Threads)
			if err != nil {
				return err
			}
			e.lap = vecchia.NewLaplaceEvidence(m, vecchia.LaplaceOptions{Block: e.Block})
		}
		_, _, err := e.At(ctx, theta, false)
		if err == nil || !errors.Is(err, vecchia.ErrLaplaceBreakdown) || e.Block >= p.maxBlock() {
			e.Breakdowns = 0
			return err
		}
		e.Block = min(max(2*e.Block, DefaultBlock), p.maxBlock())
	}
}

// raiseBlock doubles the block (setBlock) at theta, and reports false if
// it is at its largest already.
func (e *Evidence) raiseBlock(ctx context.Context, theta []float64) (bool, error) {
	if e.Block >= e.P.maxBlock() {
		return false, nil
	}
	return true, e.setBlock(ctx, theta, max(2*e.Block, DefaultBlock))
}

// MetricDrift returns how far theta's ard length scales have moved
// relative to one another from the structure's: the spread, over the
// features, of log(alpha_d / Scales_d) (0 for the other kernels).
func (e *Evidence) MetricDrift(theta []float64) float64 {
	if e.Scales == nil {
		return 0
	}
	k := e.KernelAt(theta)
	lo, hi := math.Inf(1), math.Inf(-1)
	for d, a := range k.Alpha {
		l := math.Log(a / e.Scales[d])
		lo, hi = min(lo, l), max(hi, l)
	}
	return hi - lo
}

// At returns the evidence at theta and, with grad, its gradient in theta.
// It returns vecchia.ErrLaplaceBreakdown (wrapped) where the
// log-determinant's factor breaks down, and the model's error where its
// conditionals cannot be computed.
func (e *Evidence) At(ctx context.Context, theta []float64, grad bool) (float64, []float64, error) {
	p := e.P
	if e.lap == nil && e.clap == nil {
		return 0, nil, errReleased
	}
	if e.last != nil && slices.Equal(theta, e.last) && (!grad || e.lastGrad != nil) {
		// The last evaluation's point again (a search's end, judged and
		// reported): its value, and its gradient if it was computed.
		if !grad {
			return e.lastLZ, nil, nil
		}
		return e.lastLZ, slices.Clone(e.lastGrad), nil
	}
	if p.multi() {
		return e.classAt(ctx, theta, grad)
	}
	k := e.KernelAt(theta)
	if !(grad && e.last != nil && slices.Equal(theta, e.last)) {
		e.last, e.lastGrad = nil, nil
		m, err := vecchia.NewClassifier(e.S, k, p.X, p.Y, p.nugget(), nil, nil, p.Threads)
		if err != nil {
			return 0, nil, err
		}
		var warm []float64
		if e.mode != nil {
			warm = make([]float64, len(e.mode))
			for pos, r := range e.S.Perm {
				if e.S.Dup[pos] < 0 {
					warm[pos] = e.mode[r]
				}
			}
		}
		e.Evals++
		res, err := e.lap.Eval(ctx, m, warm, false)
		if err != nil {
			if errors.Is(err, vecchia.ErrLaplaceBreakdown) {
				e.Breakdowns++
			}
			return 0, nil, err
		}
		if e.mode == nil {
			e.mode = make([]float64, len(p.Y))
		}
		for pos, r := range e.S.Perm {
			e.mode[r] = res.Mode[pos]
			if d := e.S.Dup[pos]; d >= 0 {
				e.mode[r] = res.Mode[d]
			}
		}
		e.last, e.lastLZ = slices.Clone(theta), res.LogZ
		if !grad {
			return res.LogZ, nil, nil
		}
	}
	e.Grads++
	g := make([]float64, len(e.Params))
	if err := e.S.AdjointGradTo(g, k, e.Params, p.X, p.nugget(), e.lap.Adjoint(), p.Threads); err != nil {
		return 0, nil, err
	}
	e.lastGrad = slices.Clone(g)
	return e.lastLZ, g, nil
}

// errReleased is At's error after release.
var errReleased = errors.New("vfit: the evidence's evaluator was released (Exact)")

// release frees the evaluator's factors and mode (the Laplace stage's
// memory, which the exact stage does not need); At fails after it, the
// structure, block and counts stay.
func (e *Evidence) release() {
	e.lap, e.clap, e.mode, e.last, e.lastGrad = nil, nil, nil, nil, nil
}

// FDStep is the step, in each log-hyperparameter, of the multi-class
// evidence's gradient by central differences: the evidence is smooth on
// one structure and block (its mode solved to rounding, from the same
// start at both points), so the differences' error is their truncation,
// about FDStep^2 / 6 times the third derivative, and the evidence's
// rounding over 2 FDStep.
const FDStep = 1e-4

// classAt is At for a multi-class problem: the evidence by
// vecchia.ClassLaplaceEvidence, and its gradient by central differences
// (FDStep) in each log-hyperparameter, each evaluation's Newton started
// at theta's mode; where one side of a difference breaks the factor down,
// the other side's one-sided difference.
func (e *Evidence) classAt(ctx context.Context, theta []float64, grad bool) (float64, []float64, error) {
	if !(grad && e.last != nil && slices.Equal(theta, e.last)) {
		e.last, e.lastGrad = nil, nil
		lz, mode, err := e.classEval(ctx, theta, e.mode)
		if err != nil {
			return 0, nil, err
		}
		e.mode, e.last, e.lastLZ = mode, slices.Clone(theta), lz
		if !grad {
			return lz, nil, nil
		}
	}
	e.Grads++
	g := make([]float64, len(theta))
	th := slices.Clone(theta)
	for j := range theta {
		th[j] = theta[j] + FDStep
		up, _, errUp := e.classEval(ctx, th, e.mode)
		th[j] = theta[j] - FDStep
		down, _, errDown := e.classEval(ctx, th, e.mode)
		th[j] = theta[j]
		switch {
		case errUp == nil && errDown == nil:
			g[j] = (up - down) / (2 * FDStep)
		case errUp == nil && errors.Is(errDown, vecchia.ErrLaplaceBreakdown):
			g[j] = (up - e.lastLZ) / FDStep
		case errDown == nil && errors.Is(errUp, vecchia.ErrLaplaceBreakdown):
			g[j] = (e.lastLZ - down) / FDStep
		case errUp != nil:
			return 0, nil, errUp
		default:
			return 0, nil, errDown
		}
	}
	e.lastGrad = slices.Clone(g)
	return e.lastLZ, g, nil
}

// classEval is the multi-class evidence at theta, Newton started at warm
// (by input row, L values each; nil: 0), with its mode by input row.
func (e *Evidence) classEval(ctx context.Context, theta, warm []float64) (float64, []float64, error) {
	p := e.P
	l := p.latent()
	m, err := vecchia.NewMulticlass(e.S, []*gp.Kernel{e.KernelAt(theta)}, p.Classes, p.X, p.labels(), p.nugget(), nil, nil, p.Threads)
	if err != nil {
		return 0, nil, err
	}
	var start []float64
	if warm != nil {
		start = make([]float64, len(warm))
		for pos, r := range e.S.Perm {
			if e.S.Dup[pos] < 0 {
				copy(start[pos*l:(pos+1)*l], warm[r*l:(r+1)*l])
			}
		}
	}
	e.Evals++
	res, err := e.clap.Eval(ctx, m, start)
	if err != nil {
		if errors.Is(err, vecchia.ErrLaplaceBreakdown) {
			e.Breakdowns++
		}
		return 0, nil, err
	}
	mode := make([]float64, len(p.Y)*l)
	for pos, r := range e.S.Perm {
		src := pos
		if d := e.S.Dup[pos]; d >= 0 {
			src = int(d)
		}
		copy(mode[r*l:(r+1)*l], res.Mode[src*l:(src+1)*l])
	}
	return res.LogZ, mode, nil
}

// Func returns the evidence as a fit.Evidence, for fit.MaximizeEvidence.
func (e *Evidence) Func(ctx context.Context) fit.Evidence {
	return func(theta []float64, grad bool) (float64, []float64, error) {
		return e.At(ctx, theta, grad)
	}
}

// RestructureFactor is the factor by which an ard kernel's length scales
// may move relative to one another from those of the structure before
// Maximize recomputes the ordering and the neighbours at the optimum.
const RestructureFactor = 2

// MaxRestructures bounds the recomputations of the structure in one
// Maximize.
const MaxRestructures = 4

// MaxReblocks bounds the times one Maximize raises the dense block after a
// search that met a breakdown of the factor.
const MaxReblocks = 4

// Result is the outcome of Maximize.
type Result struct {
	// Theta is the optimum, LogZ the Laplace evidence there (without the
	// prior) on the final structure.
	Theta []float64
	LogZ  float64
	// Bound is, per hyperparameter, -1 or +1 where the fit ended on the
	// lower or upper edge of the box (run off; fit.FitResult.Bound).
	Bound []int
	// Restructures counts the structures recomputed after the first,
	// Reblocks the dense blocks raised after a search met a breakdown;
	// Evidence is the last one's evidence (its structure, block and
	// counts), Evals and Grads the evaluations and gradients of all.
	Restructures, Reblocks int
	// Kept is set where the structure recomputed at the optimum broke
	// the evidence's factor down even with the largest dense block: the
	// last search's structure was kept, whose metric (Evidence.Scales)
	// is then more than RestructureFactor from the optimum's.
	Kept         bool
	Evidence     *Evidence
	Evals, Grads int
}

// Maximize maximizes the Laplace evidence of problem p (plus cfg.Prior)
// over the hyperparameters params of kernel k from theta0, by
// fit.MaximizeEvidence with cfg's box (Lower, Upper), MaxIterations,
// Prior and Progress (stage "laplace"), on the structure at theta0's
// metric, recomputed at the optimum while an ard kernel's metric has
// moved by more than RestructureFactor (see the package's doc), at most
// MaxRestructures times (a structure there that breaks the factor down
// even with the largest block is not taken: Result.Kept), and run again
// with a larger dense block where a search met breakdowns of the evidence's factor and stopped short of a
// stationary point (StationaryTol), at most MaxReblocks times. cfg's
// Samples, Rounds, FinalSamples, Seed, SkipEP and Hessian are not used.
// It returns a *fit.TrapError, without a result, if the kernel at the
// start is in a trap (fit.KernelTrap), and with the result if it is at
// the end.
func Maximize(ctx context.Context, p *Problem, k gp.Kernel, params []gp.Hyper, theta0 []float64, cfg fit.FitConfig) (*Result, error) {
	return maximize(ctx, p, k, params, theta0, cfg, "laplace")
}

// ClassGTol is the gradient norm at which a multi-class search stops
// (fit.FitConfig.GTol): its gradient by differences (FDStep) is good to
// about 1e-13 |log Z| / FDStep from the evidence's rounding, 5 x 10^-5 at
// 10^5 points of three classes, so the two-class search's 1e-5 is below
// its noise there and the search would grind on gains of 1e-8 nats; at
// a gradient of 1e-3 the gain left is about 1e-6 / (2 lambda), lambda
// the evidence's curvature along the gradient (StationaryTol's).
const ClassGTol = StationaryTol

// maximize is Maximize with the searches' stage name for cfg.Progress.
func maximize(ctx context.Context, p *Problem, k gp.Kernel, params []gp.Hyper, theta0 []float64, cfg fit.FitConfig, stage string) (*Result, error) {
	if p.multi() && cfg.GTol == 0 {
		cfg.GTol = ClassGTol
	}
	theta := cfg.Clip(theta0)
	if err := trapAt(p, fit.KernelFrom(k, params, theta), false); err != nil {
		return nil, err
	}
	ev, err := NewEvidence(ctx, p, k, params, theta)
	if err != nil {
		return nil, err
	}
	out := &Result{}
	for {
		x, lz, err := fit.MaximizeEvidence(ctx, theta, ev.Func(ctx), stage, cfg)
		out.Evals, out.Grads = out.Evals+ev.Evals, out.Grads+ev.Grads
		ev.Evals, ev.Grads = 0, 0
		if err != nil {
			return nil, fmt.Errorf("vfit: Laplace stage: %w", err)
		}
		theta, out.LogZ = x, lz
		if ev.Breakdowns > 0 && out.Reblocks < MaxReblocks && !stationary(ctx, ev, theta, cfg) {
			// The search met points where the factor broke down, and
			// stopped short of a stationary point, at their wall: a
			// larger block, and the search again from its end.
			raised, err := ev.raiseBlock(ctx, theta)
			if err != nil {
				return nil, fmt.Errorf("vfit: a larger dense block at the optimum: %w", err)
			}
			if raised {
				out.Reblocks++
				continue
			}
		}
		if ev.MetricDrift(theta) <= math.Log(RestructureFactor) || out.Restructures == MaxRestructures {
			break
		}
		prev := ev.saved()
		if err := ev.restructure(ctx, theta); err != nil {
			if !errors.Is(err, vecchia.ErrLaplaceBreakdown) {
				return nil, fmt.Errorf("vfit: the structure at the optimum: %w", err)
			}
			// The neighbours in the optimum's metric break the
			// evidence's factor down even with the largest block: the
			// search's own structure, on which theta is the optimum,
			// stays (Result.Kept).
			ev.restore(prev)
			out.Kept = true
			break
		}
		out.Restructures++
	}
	out.Evals, out.Grads = out.Evals+ev.Evals, out.Grads+ev.Grads
	ev.Evals, ev.Grads = 0, 0
	out.Theta, out.Evidence = theta, ev
	out.Bound = fit.BoundOf(theta, cfg.Lower, cfg.Upper)
	if err := trapAt(p, ev.KernelAt(theta), true); err != nil {
		return out, err
	}
	return out, nil
}

// StationaryTol is the largest norm of the objective's gradient (the
// evidence's and the log prior's, less the components that push against
// the box) at which Maximize takes the end of a search that met
// breakdowns of the factor to be an optimum (no larger block is tried):
// the search's own tolerance is 1e-5.
const StationaryTol = 1e-3

// stationary reports whether the objective's gradient at theta is within
// StationaryTol (see there).
func stationary(ctx context.Context, ev *Evidence, theta []float64, cfg fit.FitConfig) bool {
	_, g, err := ev.At(ctx, theta, true)
	if err != nil {
		return false
	}
	s := 0.0
	for j, v := range g {
		if cfg.Prior.Mu != nil {
			v -= (theta[j] - cfg.Prior.Mu[j]) / (cfg.Prior.SD[j] * cfg.Prior.SD[j])
		}
		if cfg.Lower != nil && (theta[j] <= cfg.Lower[j] && v < 0 || theta[j] >= cfg.Upper[j] && v > 0) {
			continue
		}
		s += v * v
	}
	return math.Sqrt(s) <= StationaryTol
}

// trapAt returns a *fit.TrapError if kernel k is in a trap on p's
// features (fit.KernelTrap), else nil.
func trapAt(p *Problem, k *gp.Kernel, end bool) error {
	if t, v := fit.KernelTrap(k, p.X, p.D); t != fit.TrapNone {
		return &fit.TrapError{End: end, Trap: t, Stat: v, Kernel: *k}
	}
	return nil
}

// Start is one starting point of MaximizeStarts and where its search
// ended.
type Start struct {
	// Theta is the starting point, Result the search from it (nil if it
	// failed: Err says why; one that ended in a trap has both).
	Theta  []float64
	Result *Result
	Err    error
	// Objective is the first start's final evidence (its structure and
	// dense block) plus the log prior at the search's end, -Inf without a
	// usable one.
	Objective float64
}

// MaximizeStarts runs Maximize from theta0 and from restarts more starting
// points drawn around it (fit.DrawRestart: theta0 + fit.RestartSD z,
// deterministic in cfg.Seed, redrawn where the kernel is in a trap), and
// returns the index of the best by the objective among the searches that
// ended without an error, and every start; with no usable search it
// returns the first start's error. The evidence is one function for all:
// the later starts take the first one's dense block (where p.Block is 0),
// and every end is judged by the first start's final evidence, so that an
// ard kernel's ends, whose searches ran on structures of their own
// metrics, are compared on one Vecchia model.
func MaximizeStarts(ctx context.Context, p *Problem, k gp.Kernel, params []gp.Hyper, theta0 []float64, restarts int, cfg fit.FitConfig) (int, []Start, error) {
	trapped := func(th []float64) error { return trapAt(p, fit.KernelFrom(k, params, th), false) }
	best := -1
	starts := make([]Start, 0, restarts+1)
	q := *p
	var common *Evidence
	for r := range restarts + 1 {
		st := Start{Theta: slices.Clone(theta0), Objective: math.Inf(-1)}
		if r > 0 {
			st.Theta, st.Err = fit.DrawRestart(theta0, r, cfg, trapped)
		}
		if st.Err == nil {
			st.Result, st.Err = Maximize(ctx, &q, k, params, st.Theta, cfg)
		}
		if ctx.Err() != nil {
			return -1, starts, ctx.Err()
		}
		if st.Err == nil {
			if common == nil {
				common = st.Result.Evidence
				if q.Block == 0 {
					q.Block = common.Block
				}
			}
			if lz, _, err := common.At(ctx, st.Result.Theta, false); err != nil {
				st.Err = fmt.Errorf("vfit: the first start's evidence at this start's end: %w", err)
			} else {
				st.Objective = lz + cfg.Prior.LogDensityOrZero(st.Result.Theta)
				if best < 0 || st.Objective > starts[best].Objective {
					best = r
				}
			}
		}
		starts = append(starts, st)
	}
	if best < 0 {
		return -1, starts, starts[0].Err
	}
	return best, starts, nil
}
