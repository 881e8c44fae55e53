package vecchia

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// labelEntropy returns E H(Phi(sqrt(rho) Z)), Z standard normal and H the
// entropy in nats of a label that is +1 with probability p: the expected
// entropy of a probit label whose latent value has a conditional mean of
// variance rho times its conditional variance (latent's plus the noise's).
// It falls from log 2 at rho = 0 (the label is a coin) to 0 as rho grows
// (about 1.13 / sqrt(rho) for large rho).
func labelEntropy(rho float64) float64 {
	if !(rho > 0) {
		return math.Ln2
	}
	// E H(Phi(sqrt(rho) Z)) = 2 int_0^inf H(Phi(u)) phi(u / sqrt(rho)) / sqrt(rho) du:
	// H(Phi(u)) is below e^-40 past u = 9, phi(u / sqrt(rho)) past 9 sqrt(rho).
	sr := math.Sqrt(rho)
	hi := min(9, 9*sr)
	glOnce.Do(func() {
		glX, glW = make([]float64, glNodes), make([]float64, glNodes)
		quad.Legendre{}.FixedLocations(glX, glW, 0, 1)
	})
	s := 0.0
	for i, x := range glX {
		u := hi * x
		lp, lq := core.LogPhi(u), core.LogPhi(-u)
		h := -(math.Exp(lp)*lp + math.Exp(lq)*lq)
		z := u / sr
		s += glW[i] * h * math.Exp(-z*z/2)
	}
	return 2 * hi * s / (sr * math.Sqrt(2*math.Pi))
}

const glNodes = 64

var (
	glOnce   sync.Once
	glX, glW []float64
)

// LabelLoss is the information about row k's label that a conditioning
// set c loses beside a larger set C that holds it, in nats, expected under
// the prior: for the probit label y of w = x + eps (noise variance s), x
// of prior variance v0 and conditional variances dc given x_c and dC
// given x_C (dC <= dc),
//
//	H(y | x_c) - H(y | x_C) = E KL(p(y | x_C) || p(y | x_c)),
//
// the expected divergence of the label's predictive probability given c
// from that given C. Its two terms are labelEntropy's: given a set with
// conditional variance D, the conditional mean of x has variance v0 - D
// and the label is Phi(mean / sqrt(D + s)), so that H(y | x_c) =
// labelEntropy((v0 - D) / (D + s)); the mean given C averages to the mean
// given c, which makes the expected divergence the entropies' difference.
// Unlike the divergence of w itself, 1/2 log((dc + s) / (dC + s)), it
// discounts errors where the labels are nearly certain either way (the
// latent mean far from 0 beside its spread) as well as fine-scale errors
// beside the noise.
func LabelLoss(v0, dc, dC, s float64) float64 {
	if dc <= dC {
		return 0
	}
	return max(0, labelEntropy((v0-dc)/(dc+s))-labelEntropy((v0-dC)/(dC+s)))
}

// CheckOptions are Check's settings; the zero value of each field selects
// its default.
type CheckOptions struct {
	// Rows is the number of training rows sampled (default
	// DefaultCheckRows, fewer where the sets are large: at most about
	// 10^10 multiply-adds in all, and at least 100 rows; all of them if
	// there are fewer).
	Rows int
	// Big is the number of nearest earlier points in each sampled row's
	// larger set, besides its own set and the first Coarse positions
	// (default 4 times the later rows' set size M, from 100 to 400).
	Big int
	// Coarse is the number of leading (coarsest) distinct positions in
	// every larger set (default M, at most 100): the large-scale part of
	// the function that nearest points miss where the features are many.
	Coarse int
	// Exact is the number of leading distinct positions whose loss is
	// measured against every earlier point, from one factorisation of
	// their covariance (default DefaultCheckExact).
	Exact int
	// Threads bounds the goroutines (0: GOMAXPROCS); the result does not
	// depend on it.
	Threads int
}

// DefaultCheckRows is the number of training rows Check samples, and
// DefaultCheckExact the leading positions it measures exactly.
const (
	DefaultCheckRows  = 500
	DefaultCheckExact = 1000
	checkWork         = 1e10
)

// CheckResult is Check's measure of a Vecchia model's approximation.
type CheckResult struct {
	// M is the later rows' set size; Rows the number of rows sampled,
	// Exact how many of them were measured against every earlier point.
	M, Rows, Exact int
	// Big and Coarse are the larger sets' nearest and coarsest points.
	Big, Coarse int
	// Loss estimates the information about the labels that the
	// conditioning sets lose beside the larger sets, in nats, summed over
	// the distinct training points (LabelLoss's sum, from the sample),
	// with its standard error SE; RespLoss and
	// RespSE are the same for the noisy w (half the log ratio of w's
	// conditional variances).
	Loss, SE         float64
	RespLoss, RespSE float64
	// Worst is the largest sampled row's LabelLoss.
	Worst float64
}

// ErrorScale is a rough scale of the log marginal likelihood's error for
// a label loss: 3 sqrt(Loss) nats (docs/vecchia.md, "The check before the
// run": on the real data sets' tables, of 17 runs that did not fall back,
// the measured error of the Vecchia estimate from the dense one was
// within it in 13, 4 to 7 sqrt(Loss) in three and 38 sqrt(Loss) in one).
// It is not a bound.
func (r CheckResult) ErrorScale() float64 { return 3 * math.Sqrt(max(r.Loss, 0)) }

// Check measures how much the structure s's conditioning sets lose
// beside larger ones, on a sample of the training rows: for a row k with
// set c and a larger set C that holds c (c, the Big nearest earlier
// points and the first Coarse positions; every earlier point in the
// first Exact positions), it computes the conditional variances of the
// latent value given each (the kernel k on the features feat by input
// row, n x d, plus the nugget) and the information about row k's label
// that c loses, LabelLoss, for the probit's noise variance 1 - nugget.
// The sample has two strata, each systematic (evenly spaced positions,
// from the middle of the first stride): the first Exact distinct
// positions, the coarse rows of a maxmin order where the loss
// concentrates, take two fifths of it (or all of them, if the rest of the
// sample covers the other positions), and the later ones the rest; the
// loss is the sum of each stratum's mean times its size, with the
// standard error of a stratified random sample (a little larger than the
// systematic sample's; none for a stratum sampled whole).
// It is a lower bound of the loss beside every earlier point (exact for
// the first Exact positions); docs/vecchia.md calibrates it against the
// log marginal likelihood's measured errors (CheckResult.ErrorScale).
func (s *Structure) Check(k *gp.Kernel, feat []float64, nugget float64, opt CheckOptions) (CheckResult, error) {
	reg := s.regular()
	// The later rows' set size: the most common (the rows of a wider
	// block, and the first rows, which have fewer earlier points, are
	// few).
	count := map[int]int{}
	mx := 0
	for _, i := range reg {
		c := len(s.Nbr[i])
		count[c]++
		if count[c] > count[mx] || count[c] == count[mx] && c > mx {
			mx = c
		}
	}
	return s.check(k, feat, nugget, opt, mx, 0, func(_ *selectWork, q int, _ []int32) []int32 { return s.Nbr[reg[q]] })
}

// checkSelection is Check for the sets that Select would choose with sel,
// computed for the sampled rows only.
func (s *Structure) checkSelection(k *gp.Kernel, feat []float64, nugget float64, sel Selection, opt CheckOptions) (CheckResult, error) {
	reg := s.regular()
	return s.check(k, feat, nugget, opt, sel.M, max(sel.M, sel.M*sel.Pool), func(w *selectWork, q int, pool []int32) []int32 {
		return s.rowSet(w, k, feat, nugget, sel, reg, q, pool)
	})
}

// check is Check with the sampled rows' sets from set (q: the row's index
// among the distinct positions; pool: its npool nearest earlier distinct
// points, as such indices, if npool > 0), m the later rows' set size.
func (s *Structure) check(k *gp.Kernel, feat []float64, nugget float64, opt CheckOptions, m, npool int, set func(w *selectWork, q int, pool []int32) []int32) (CheckResult, error) {
	reg := s.regular()
	nr := len(reg)
	big := opt.Big
	if big <= 0 {
		big = min(max(4*m, 100), 400)
	}
	coarse := opt.Coarse
	if coarse <= 0 {
		coarse = min(m, 100)
	}
	ex := opt.Exact
	if ex <= 0 {
		ex = DefaultCheckExact
	}
	ex = min(ex, nr)
	rows := opt.Rows
	if rows <= 0 {
		sz := float64(m + big + coarse)
		rows = min(DefaultCheckRows, max(100, int(checkWork/(sz*sz*sz/3))))
	}
	rows = min(rows, nr)
	res := CheckResult{M: m, Rows: rows, Big: big, Coarse: coarse}
	if rows == 0 {
		return res, nil
	}
	// Two strata: the first ex positions (the coarse ones, where the
	// loss of a maxmin order concentrates), with two fifths of the
	// sample or all of them, and the rest.
	r1 := min(ex, max(rows*2/5, rows-(nr-ex)))
	r2 := rows - r1
	sample := make([]int, rows)
	for i := range r1 {
		sample[i] = int((float64(i) + 0.5) * float64(ex) / float64(r1))
	}
	for i := range r2 {
		sample[r1+i] = ex + int((float64(i)+0.5)*float64(nr-ex)/float64(r2))
	}
	var dex []float64
	if r1 > 0 {
		var err error
		if dex, err = s.exactCondVars(k, feat, nugget, reg[:ex]); err != nil {
			return res, err
		}
	}
	d := s.D
	// The sampled rows' nearest earlier distinct points, in the
	// structure's metric: a k-d tree of the distinct points, its search
	// limited to the indices before the row's.
	tree := newKDTree(s.x, d, toInts(reg), opt.Threads)
	nearest := func(near *kdNearest, q, n int, dst []int32) []int32 {
		if q <= bruteLimit {
			return append(dst[:0], bruteNearest(s.x, d, toInts(reg[:q+1]), q, n)...)
		}
		i := reg[q]
		return near.find(tree, s.x[int(i)*d:int(i)*d+d], n, int32(q), dst)
	}
	noise := 1 - nugget
	loss, resp := make([]float64, rows), make([]float64, rows)
	exact := make([]bool, rows)
	errs := make([]error, rows)
	parallelRange(0, rows, opt.Threads, func(a, b int) {
		var w selectWork
		var cw condWork
		var near kdNearest
		var pool, nb, cset []int32
		var coef []float64
		for j := a; j < b; j++ {
			q := sample[j]
			if npool > 0 {
				pool = nearest(&near, q, npool, pool)
			}
			own := set(&w, q, pool)
			x0 := s.feature(feat, reg[q])
			xs := cw.points(len(own))
			for i, p := range own {
				xs[i] = s.feature(feat, p)
			}
			coef = slices.Grow(coef[:0], len(own))[:len(own)]
			dc, ok := cw.solve(k, xs, x0, nugget, coef)
			var dC float64
			if q < ex {
				dC, exact[j] = dex[q], true
			} else {
				nb = nearest(&near, q, big, nb)
				cset = append(cset[:0], own...)
				for _, v := range nb {
					cset = append(cset, reg[v])
				}
				cset = append(cset, reg[:min(coarse, q)]...)
				slices.Sort(cset)
				cset = slices.Compact(cset)
				xs = cw.points(len(cset))
				for i, p := range cset {
					xs[i] = s.feature(feat, p)
				}
				coef = slices.Grow(coef[:0], len(cset))[:len(cset)]
				var ok2 bool
				dC, ok2 = cw.solve(k, xs, x0, nugget, coef)
				ok = ok && ok2
			}
			if !ok {
				errs[j] = fmt.Errorf("vecchia: the covariance of point %d's neighbours is not positive definite with nugget %g", s.Perm[reg[q]], nugget)
				continue
			}
			dC = min(dC, dc) // rounding: C holds c
			loss[j] = LabelLoss(k.Eval(x0, x0)+nugget, dc, dC, noise)
			resp[j] = 0.5 * math.Log((dc+noise)/(dC+noise))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for j := range rows {
		if exact[j] {
			res.Exact++
		}
		res.Worst = max(res.Worst, loss[j])
	}
	res.Loss, res.SE = stratifiedSum(loss, r1, ex, nr-ex)
	res.RespLoss, res.RespSE = stratifiedSum(resp, r1, ex, nr-ex)
	return res, nil
}

// stratifiedSum returns the estimate of a population total from a sample
// v of two strata, its first r1 values from a stratum of n1 and the rest
// from one of n2, and its standard error (each stratum's sample variance,
// with the finite population correction: a stratum sampled whole adds
// none).
func stratifiedSum(v []float64, r1, n1, n2 int) (sum, se float64) {
	var v2 float64
	for _, st := range []struct {
		v []float64
		n int
	}{{v[:r1], n1}, {v[r1:], n2}} {
		r := float64(len(st.v))
		if r == 0 {
			continue
		}
		mean := 0.0
		for _, x := range st.v {
			mean += x
		}
		mean /= r
		n := float64(st.n)
		sum += n * mean
		if r < 2 {
			continue
		}
		ss := 0.0
		for _, x := range st.v {
			ss += (x - mean) * (x - mean)
		}
		v2 += n * n * (1 - r/n) * ss / (r - 1) / r
	}
	return sum, math.Sqrt(max(v2, 0))
}
