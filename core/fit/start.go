package fit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core/gp"
)

// DataScale is what a kernel's starting point and the box of its
// hyperparameters (Bounds) take from the training features.
type DataScale struct {
	// Median is the median distance between two training points (over the
	// pairs of distinct points), Min the smallest nonzero distance and Max
	// the largest; over at most MaxScalePoints points.
	Median, Min, Max float64
	// FeatureMin and FeatureMax are, per feature, the smallest nonzero and
	// the largest difference between two training points (0 and 0 for a
	// constant feature).
	FeatureMin, FeatureMax []float64
	// MeanSquare is the mean of x_i'x_i, the linear kernel's k(x_i, x_i)
	// per unit beta.
	MeanSquare float64
}

// MaxScalePoints bounds the points whose pairwise distances NewDataScale
// takes: at most 1000, evenly spaced in the file (5 10^5 pairs), so that
// it costs little beside the fit at any N; a median over that many pairs
// is within a few percent of the whole set's.
const MaxScalePoints = 1000

// ErrIdentical is returned by NewDataScale when no two training points
// differ: no kernel can tell them apart.
var ErrIdentical = errors.New("fit: every training point is the same: no length scale can be fitted")

// NewDataScale measures the training features x (n rows of d, row-major).
// It returns ErrIdentical if no two rows differ.
func NewDataScale(x []float64, d int) (*DataScale, error) {
	n := len(x) / d
	sc := &DataScale{FeatureMin: make([]float64, d), FeatureMax: make([]float64, d)}
	col := make([]float64, n)
	for j := range d {
		for i := range n {
			col[i] = x[i*d+j]
		}
		slices.Sort(col)
		sc.FeatureMax[j] = col[n-1] - col[0]
		for i := 1; i < n; i++ {
			if g := col[i] - col[i-1]; g > 0 && (sc.FeatureMin[j] == 0 || g < sc.FeatureMin[j]) {
				sc.FeatureMin[j] = g
			}
		}
	}
	for i := range n * d {
		sc.MeanSquare += x[i] * x[i]
	}
	sc.MeanSquare /= float64(n)
	m := min(n, MaxScalePoints)
	idx := make([]int, m)
	for p := range idx {
		idx[p] = p * n / m
	}
	dist := make([]float64, 0, m*(m-1)/2)
	for p, i := range idx {
		xi := x[i*d : i*d+d]
		for _, j := range idx[:p] {
			s := 0.0
			for q, v := range x[j*d : j*d+d] {
				t := xi[q] - v
				s += t * t
			}
			if s > 0 {
				dist = append(dist, math.Sqrt(s))
			}
		}
	}
	if len(dist) == 0 {
		if slices.Max(sc.FeatureMax) == 0 {
			return nil, ErrIdentical
		}
		// Distinct points, but not among those sampled: fall back on the
		// features' ranges.
		for j := range d {
			sc.Max += sc.FeatureMax[j] * sc.FeatureMax[j]
		}
		sc.Max = math.Sqrt(sc.Max)
		sc.Median, sc.Min = sc.Max, slices.Min(nonzero(sc.FeatureMin))
		return sc, nil
	}
	slices.Sort(dist)
	sc.Min, sc.Max = dist[0], dist[len(dist)-1]
	if h := len(dist) / 2; len(dist)%2 == 1 {
		sc.Median = dist[h]
	} else {
		sc.Median = (dist[h-1] + dist[h]) / 2
	}
	return sc, nil
}

func nonzero(v []float64) []float64 {
	var out []float64
	for _, x := range v {
		if x > 0 {
			out = append(out, x)
		}
	}
	return out
}

// Start returns the kernel of kind at the data's starting point, the
// default of gpc-fit, gpc-tune, gpc-mcmc and gpc-kernel:
//
//	alpha = the median distance between two training points (every
//	        feature's, for ard: the start is the isotropic start),
//	beta  = 1 (linear: 1 / mean_i x_i'x_i),
//
// so that the median pair of training points has correlation e^-1 under
// the RBF kernel (neither a diagonal kernel, every point on its own, nor a
// constant one), and the latent function's prior variance at the training
// points is 1 (on average, for the linear kernel), the probit noise's: each
// point's prior probability of its class, Phi(f) with f ~ N(0, 1), is then
// uniform on (0, 1), neither stuck at 1/2 (a negligible latent function)
// nor at 0 and 1 (a saturated one). d is the number of features.
func (sc *DataScale) Start(kind gp.KernelKind, d int) gp.Kernel {
	k := gp.Kernel{Kind: kind, Beta: 1}
	switch kind {
	case gp.KernelLinear:
		if sc.MeanSquare > 0 {
			k.Beta = 1 / sc.MeanSquare
		}
	case gp.KernelARD:
		k.Alpha = make([]float64, d)
		for j := range k.Alpha {
			k.Alpha[j] = sc.Median
		}
	default:
		k.Alpha = []float64{sc.Median}
	}
	return k
}

// The box of the log-hyperparameters (Bounds). A length scale ranges from
// a tenth of the smallest distance between two training points, where the
// kernel is diagonal (e^-100 between the closest pair), to BoundFar times
// the largest, where the feature no longer counts (for ard, in that
// feature: a feature switched off); beta, the latent function's prior
// variance at the points, and the bias from BoundLow to BoundHigh times the
// probit noise's variance 1.
const (
	BoundNear = 0.1
	BoundFar  = 1e4
	BoundLow  = 1e-6
	BoundHigh = 1e12
)

// Bounds returns the box of the log-hyperparameters params of kernel k
// (each hyperparameter's class does not matter) for data of this scale:
// Fit keeps theta in it, and a hyperparameter whose likelihood goes on
// rising toward 0 or infinity (beta when the classes separate, the length
// scale of an irrelevant feature) stops at its edge, where moving it
// further changes the log marginal likelihood by little: on sonar's and
// ionosphere's ard kernels by the likelihood alone, EP's evidence at its
// optimum in the box is within 1e-4 nats of the optimum without it (beta
// 10^17, length scales to 10^9). A constant feature's length scale cannot
// move (both bounds at its value). The constants are BoundNear,
// BoundFar, BoundLow and BoundHigh.
func (sc *DataScale) Bounds(k *gp.Kernel, params []gp.Hyper) (lower, upper []float64) {
	lower, upper = make([]float64, len(params)), make([]float64, len(params))
	for j, h := range params {
		switch h.Kind {
		case gp.HyperAlpha:
			lo, hi := sc.Min, sc.Max
			if k.Kind == gp.KernelARD {
				lo, hi = sc.FeatureMin[h.Index], sc.FeatureMax[h.Index]
			}
			if hi == 0 {
				v := math.Log(h.Get(k))
				lower[j], upper[j] = v, v
				continue
			}
			lower[j], upper[j] = math.Log(BoundNear*lo), math.Log(BoundFar*hi)
		case gp.HyperBeta:
			v := 1.0
			if k.Kind == gp.KernelLinear && sc.MeanSquare > 0 {
				v = sc.MeanSquare
			}
			lower[j], upper[j] = math.Log(BoundLow/v), math.Log(BoundHigh/v)
		default:
			lower[j], upper[j] = math.Log(BoundLow), math.Log(BoundHigh)
		}
	}
	return lower, upper
}

// Trap names a region of hyperparameters where the marginal likelihood is
// flat, so that a gradient-based fit started or ended there stays: the
// kernel, beside the probit noise of variance 1, makes the latent function
// negligible, or its values at the training points practically
// independent (diagonal: the length scales far below the distances), or
// all equal (constant: far above them). The log marginal likelihood there
// is that of the model without the kernel's structure, and its gradient
// too small to lead out.
type Trap int

const (
	TrapNone Trap = iota
	// TrapNegligible: the latent function's prior variance k(x_i, x_i) -
	// bias is at most TrapTol at every training point.
	TrapNegligible
	// TrapDiagonal: with rho_ij = (k(x_i, x_j) - bias) / (1 + k(x_i,
	// x_i)), the correlation the kernel's length scales give the orthant's
	// variables i and j, (N - 1) times the mean of rho_ij^2 over the pairs
	// of training points, each point's squared correlation with all the
	// others on average, is at most TrapTol.
	TrapDiagonal
	// TrapConstant: the mean over the pairs of training points of
	// Var(f(x_i) - f(x_j)) / 2 = beta (1 - c_ij), c the kernel's
	// correlation, is at most TrapTol.
	TrapConstant
)

func (t Trap) String() string {
	switch t {
	case TrapNegligible:
		return "negligible"
	case TrapDiagonal:
		return "diagonal"
	case TrapConstant:
		return "constant"
	}
	return "none"
}

// TrapTol is the size, beside the probit noise's variance 1, below which
// KernelTrap calls a kernel's structure absent. Measured on sonar's ard
// kernel at the old default start, every length scale 1 on 60
// standardized features (the closest pair of training points at a squared
// distance of 4.6, the median at 106): the correlation is 0.01 for that
// pair and below 1e-9 for 99 % of them, the summed squared correlation
// (of the orthant's variables, half the kernel's at beta 1) 9.6e-7, and
// the fit stopped at once at the log marginal likelihood of independent
// points, 146 log(1/2) (-101.2; it ended at -101.16). At the data's start,
// the median distance, it is of order N e^-2 / 4. The other two
// statistics take the same tolerance: a latent variance of 1e-3 moves a
// class probability by about 0.013.
const TrapTol = 1e-3

// KernelTrap reports whether kernel k is in a Trap on the training
// features x (rows of d; at most MaxScalePoints of them, evenly spaced,
// stand for all), with the statistic that decides it (the largest latent
// variance; the summed squared correlation; the mean half-variance of the
// latent differences).
func KernelTrap(k *gp.Kernel, x []float64, d int) (Trap, float64) {
	n := len(x) / d
	m := min(n, MaxScalePoints)
	idx := make([]int, m)
	for p := range idx {
		idx[p] = p * n / m
	}
	latent := 0.0
	for _, i := range idx {
		xi := x[i*d : i*d+d]
		latent = math.Max(latent, k.Eval(xi, xi)-k.Bias)
	}
	if latent <= TrapTol {
		return TrapNegligible, latent
	}
	if k.Kind == gp.KernelLinear || m < 2 {
		return TrapNone, latent
	}
	// Stationary: k(x, x) = beta + bias.
	scale := k.Beta / (1 + k.Beta + k.Bias)
	corr2, vary := 0.0, 0.0
	pairs := 0
	for p, i := range idx {
		xi := x[i*d : i*d+d]
		for _, j := range idx[:p] {
			c, om := k.Correlation(xi, x[j*d:j*d+d])
			corr2 += scale * c * scale * c
			vary += k.Beta * om
			pairs++
		}
	}
	corr2 *= float64(n-1) / float64(pairs)
	vary /= float64(pairs)
	switch {
	case corr2 <= TrapTol:
		return TrapDiagonal, corr2
	case vary <= TrapTol:
		return TrapConstant, vary
	}
	return TrapNone, 0
}

// TrapError is returned by Fit when it would start or end where its
// kernel is in a Trap (KernelTrap): the log marginal likelihood is flat
// there, and the point is not an answer.
type TrapError struct {
	// End is set for the fit's end, else it is the start.
	End  bool
	Trap Trap
	// Stat is KernelTrap's statistic; Kernel the kernel (the class's, for
	// a model with a kernel per class: Class).
	Stat   float64
	Kernel gp.Kernel
	Class  int
}

func (e *TrapError) Error() string {
	where := "the start"
	if e.End {
		where = "the fit's end"
	}
	switch e.Trap {
	case TrapNegligible:
		return fmt.Sprintf("fit: at %s the latent function is negligible (its prior variance is at most %.2g beside the probit noise's 1): the log marginal likelihood is flat there", where, e.Stat)
	case TrapDiagonal:
		return fmt.Sprintf("fit: at %s the kernel is practically diagonal (each training point's squared correlation with all the others sums to %.2g on average): the length scales are far below the distances between the points, and the log marginal likelihood is flat there", where, e.Stat)
	}
	return fmt.Sprintf("fit: at %s the kernel is practically constant (two training points' latent values differ by a variance of %.2g on average, beside the probit noise's 1): the length scales are far above the distances between the points, and the log marginal likelihood is flat there", where, 2*e.Stat)
}

// trapAt returns a *TrapError (of the first kernel) if every kernel of the
// surface at theta is in a trap on its data, else nil: with a kernel per
// class, one class's latent function may vanish (the others carry the
// differences between the classes), and the likelihood is not flat.
func (s *Surface) trapAt(theta []float64, end bool) error {
	x, d := s.Data.Inputs()
	var first error
	for c, k := range s.kernels(theta) {
		t, v := KernelTrap(k, x, d)
		if t == TrapNone {
			return nil
		}
		if first == nil {
			first = &TrapError{End: end, Trap: t, Stat: v, Kernel: *k, Class: c}
		}
	}
	return first
}

// RestartSD is the standard deviation, in each log-hyperparameter, of the
// starting points of FitStarts' restarts around the first: a factor e
// either way, 95 % within e^2, about 7.4. The ard prior's 3 would put some
// of sonar's 60 length scales a factor 400 below the start, where the
// kernel is diagonal (TrapDiagonal) and the fit cannot move.
const RestartSD = 1

// domainRestarts is the random stream of FitStarts' starting points.
const domainRestarts uint64 = 131

// maxRedraws bounds the draws of one restart's starting point that land
// in a Trap.
const maxRedraws = 100

// Start is one starting point of FitStarts and where its fit ended.
type Start struct {
	// Theta is the starting point, Result the fit from it (nil if it
	// failed: Err says why; a fit that ended short of convergence or in a
	// trap has both).
	Theta  []float64
	Result *FitResult
	Err    error
	// Objective is the exact objective at the fit's point (the log
	// marginal likelihood and the log prior, estimated on the common
	// final seed), -Inf without a usable fit.
	Objective float64
}

// FitStarts runs Fit from theta0 and from restarts more starting points
// drawn around it, theta0 + RestartSD z with z standard normal (moved
// into the box of cfg.Lower and cfg.Upper; a draw where the kernel is in a
// Trap is drawn again), deterministic in cfg.Seed, each fit with cfg (the
// same seeds: their final estimates are on common random numbers). It
// returns the index of the best, by the exact objective of its final
// estimate among the fits that ended neither in a trap nor with an error
// (one that ran out of iterations counts), and every start. With no usable
// fit it returns the first start's error.
func (s *Surface) FitStarts(ctx context.Context, theta0 []float64, restarts int, cfg FitConfig) (int, []Start, error) {
	starts := make([]Start, 0, restarts+1)
	draw := func(r int) ([]float64, error) {
		return DrawRestart(theta0, r, cfg, func(th []float64) error { return s.trapAt(th, false) })
	}
	best := -1
	for r := range restarts + 1 {
		th := append([]float64(nil), theta0...)
		st := Start{Objective: math.Inf(-1)}
		if r > 0 {
			th, st.Err = draw(r)
		}
		st.Theta = th
		if st.Err == nil {
			st.Result, st.Err = s.Fit(ctx, th, cfg)
		}
		if ctx.Err() != nil {
			return -1, starts, ctx.Err()
		}
		var nc *ErrNotConverged
		if st.Result != nil && (st.Err == nil || errors.As(st.Err, &nc)) {
			st.Objective = st.Result.Final.Result.LogP + cfg.Prior.LogDensityOrZero(st.Result.Theta)
			if best < 0 || st.Objective > starts[best].Objective {
				best = r
			}
		}
		starts = append(starts, st)
	}
	if best < 0 {
		return -1, starts, starts[0].Err
	}
	return best, starts, nil
}
