package vecchia

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/gpc-mc/gpc/core/gp"
)

// Selection says how the conditioning sets are chosen, beyond the M
// nearest earlier points of NewStructure: the kernel's own conditional
// variances choose them among a pool of nearest points, and the coarsest
// points get wider sets.
//
// The Vecchia approximation's Kullback-Leibler divergence from the exact
// latent prior is half the sum over rows of log D_k(c(k)) / D_k(all
// earlier), D_k the conditional variance of row k's latent value given
// its set (Schaefer, Katzfuss and Owhadi 2021, section 3), so a row's set
// should make its own conditional variance small: the points that do so
// are not always the nearest (several near points in one direction
// explain less than fewer spread around the row), and greedy selection
// by the fall of the conditional variance, among a pool of Pool x M
// nearest earlier points, finds sets about as good as nearest sets half
// again to twice as large (docs/vecchia.md). And in a maxmin order the
// first points are far apart beside the length scale, their nearest
// earlier points few and far: on the two-class tables 80 to 95 % of the
// information the sets lose is lost in the first 1000 positions, which
// Block wider sets (BlockM) all but remove at a cost independent of N.
type Selection struct {
	// M is the set size of the rows after the block.
	M int
	// Pool is the candidates of a row's set, as a multiple of M: its
	// Pool x M nearest earlier points (0 or 1: the M nearest, no
	// selection).
	Pool int
	// Block is the number of leading distinct positions whose sets are
	// their BlockM nearest earlier points (every earlier point up to
	// BlockM: exact there).
	Block, BlockM int
	// TestM and TestPool are the test points' sets, chosen as the rows'
	// among their TestPool x TestM nearest training points (TestPool 0 or
	// 1: the TestM nearest).
	TestM, TestPool int
}

// The selections that gpc-kernel --vecchia auto tries (AutoSelection):
// wide sets for the first AutoBlock positions, AutoBlockM points each
// (below 255, the proposal's cached patterns' limit, see pairCache), the
// later rows' M nearest or M of their AutoPool x M nearest, and test sets
// of AutoTestM x M from pools of AutoPool times that, measured on the
// two-class tables and the real data sets of docs/vecchia.md.
const (
	AutoBlock  = 1000
	AutoBlockM = 254
	AutoPool   = 3
	AutoTestM  = 2
)

// AutoSelection is a selection of gpc-kernel --vecchia auto: m neighbours
// per later row, chosen among the pool x m nearest (pool 1: the m
// nearest).
func AutoSelection(m, pool int) Selection {
	return Selection{M: m, Pool: pool, Block: AutoBlock, BlockM: AutoBlockM, TestM: AutoTestM * m, TestPool: AutoPool}
}

// regular returns the positions of the structure's distinct points.
func (s *Structure) regular() []int32 {
	var reg []int32
	for i, dp := range s.Dup {
		if dp < 0 {
			reg = append(reg, int32(i))
		}
	}
	return reg
}

// Select returns a copy of s whose regular rows' conditioning sets are
// chosen as sel says, the kernel k (plus the nugget) on the features
// feat (by input row, n x d) giving the conditional variances; the order
// and the repeats are s's.
func (s *Structure) Select(k *gp.Kernel, feat []float64, nugget float64, sel Selection, threads int) *Structure {
	reg := s.regular()
	order := toInts(reg)
	pool := EarlierNeighbours(s.x, s.D, order, max(sel.M, sel.M*sel.Pool), threads)
	out := &Structure{N: s.N, D: s.D, Perm: s.Perm, Nbr: make([][]int32, s.N), Dup: s.Dup, x: s.x}
	for i, dp := range s.Dup {
		if dp >= 0 {
			out.Nbr[i] = s.Nbr[i]
		}
	}
	parallelRange(0, len(reg), threads, func(a, b int) {
		var w selectWork
		for q := a; q < b; q++ {
			out.Nbr[reg[q]] = s.rowSet(&w, k, feat, nugget, sel, reg, q, pool[q])
		}
	})
	return out
}

// rowSet returns the conditioning set of the q-th distinct position
// reg[q] under sel, given its nearest earlier distinct points pool (as
// indices into reg, increasing, at least sel.M x sel.Pool of them where
// there are that many).
func (s *Structure) rowSet(w *selectWork, k *gp.Kernel, feat []float64, nugget float64, sel Selection, reg []int32, q int, pool []int32) []int32 {
	if q < sel.Block {
		c := bruteNearest(s.x, s.D, toInts(reg[:q+1]), q, sel.BlockM)
		for j, v := range c {
			c[j] = reg[v]
		}
		return c
	}
	c := make([]int32, 0, sel.M)
	if sel.Pool <= 1 || len(pool) <= sel.M {
		for _, v := range pool[:min(len(pool), sel.M)] {
			c = append(c, reg[v])
		}
		return c
	}
	xs := w.points(len(pool))
	for j, v := range pool {
		xs[j] = s.feature(feat, reg[v])
	}
	taken := w.greedySelect(k, xs, s.feature(feat, reg[q]), nugget, sel.M)
	for _, t := range taken {
		c = append(c, reg[pool[t]])
	}
	slices.Sort(c)
	return c
}

// feature returns the kernel's features of position i.
func (s *Structure) feature(feat []float64, i int32) []float64 {
	r := s.Perm[i]
	return feat[r*s.D : r*s.D+s.D]
}

// TestSets returns the test points' conditioning sets under sel: each
// test point's sel.TestM of its sel.TestPool x sel.TestM nearest distinct
// training points that explain most of its latent value's variance (the
// nearest, for TestPool 0 or 1), as increasing positions. q holds the
// test points in the structure's metric and tf in the kernel's (t x d),
// feat the training points' kernel features by input row.
func (s *Structure) TestSets(k *gp.Kernel, feat, tf, q []float64, t int, nugget float64, sel Selection, threads int) [][]int32 {
	if sel.TestPool <= 1 {
		return s.TestNeighbours(q, t, sel.TestM, threads)
	}
	pool := s.TestNeighbours(q, t, sel.TestM*sel.TestPool, threads)
	if len(pool) == 0 || len(pool[0]) <= sel.TestM {
		return s.TestNeighbours(q, t, sel.TestM, threads)
	}
	out := make([][]int32, t)
	d := s.D
	parallelRange(0, t, threads, func(a, b int) {
		var w selectWork
		for i := a; i < b; i++ {
			xs := w.points(len(pool[i]))
			for j, p := range pool[i] {
				xs[j] = s.feature(feat, p)
			}
			taken := w.greedySelect(k, xs, tf[i*d:i*d+d], nugget, sel.TestM)
			c := make([]int32, len(taken))
			for j, v := range taken {
				c[j] = pool[i][v]
			}
			slices.Sort(c)
			out[i] = c
		}
	})
	return out
}

// selectWork is a worker's scratch for greedySelect.
type selectWork struct {
	c, v, l []float64
	lk      []float64
	used    []bool
	out     []int
	xs      [][]float64
}

// points returns a slice of q feature rows to fill.
func (w *selectWork) points(q int) [][]float64 {
	w.xs = slices.Grow(w.xs[:0], q)[:q]
	return w.xs
}

// greedySelect chooses, among the candidate points xs, at most m that
// explain most of the variance of the latent value at x0 (kernel k plus
// nugget), one at a time: each step takes the candidate whose value,
// given those taken, has the largest squared covariance with x0's over
// its variance, the largest fall of x0's conditional variance. The
// partial Cholesky factor of the candidates' covariance is built column
// by column as they are taken: O(len(xs) m) kernel evaluations and
// O(len(xs) m^2 / 2) arithmetic. It returns the taken candidates' indices
// in the order taken; it stops early where no candidate lowers the
// variance by more than a millionth of the nugget. Ties go to the earlier
// candidate, so the result is deterministic.
func (w *selectWork) greedySelect(k *gp.Kernel, xs [][]float64, x0 []float64, nugget float64, m int) []int {
	p := len(xs)
	m = min(m, p)
	w.c = slices.Grow(w.c[:0], p)[:p]
	w.v = slices.Grow(w.v[:0], p)[:p]
	w.l = slices.Grow(w.l[:0], p*m)[:p*m]
	w.used = slices.Grow(w.used[:0], p)[:p]
	w.lk = slices.Grow(w.lk[:0], m)[:m]
	clear(w.used)
	c, v, l, lk := w.c, w.v, w.l, w.lk
	for i, x := range xs {
		v[i] = k.Eval(x, x) + nugget
		c[i] = k.Eval(x, x0)
	}
	out := w.out[:0]
	for t := range m {
		best, gain := -1, nugget*1e-6
		for i := range p {
			if w.used[i] || !(v[i] > nugget/2) {
				continue
			}
			if g := c[i] * c[i] / v[i]; g > gain {
				best, gain = i, g
			}
		}
		if best < 0 {
			break
		}
		j := best
		w.used[j] = true
		out = append(out, j)
		piv := math.Sqrt(v[j])
		lj := l[j*m : j*m+t]
		lk[t] = c[j] / piv
		for i := range p {
			if w.used[i] {
				continue
			}
			s := (k.Eval(xs[i], xs[j]) - floats.Dot(l[i*m:i*m+t], lj)) / piv
			l[i*m+t] = s
			c[i] -= s * lk[t]
			v[i] -= s * s
		}
	}
	w.out = out
	return out
}

// exactCondVars returns the conditional variances of the latent values
// (kernel k plus the nugget) at the distinct positions reg, each given
// every one before it: the squared diagonal of the Cholesky factor of
// their covariance (len(reg)^3 / 3 work), or an error if it is not
// numerically positive definite.
func (s *Structure) exactCondVars(k *gp.Kernel, feat []float64, nugget float64, reg []int32) ([]float64, error) {
	q := len(reg)
	l := make([]float64, q*q)
	for i := range q {
		xi := s.feature(feat, reg[i])
		for j := 0; j <= i; j++ {
			l[i*q+j] = k.Eval(xi, s.feature(feat, reg[j]))
		}
		l[i*q+i] += nugget
	}
	out := make([]float64, q)
	// Cholesky, lower, row by row (the dot products on gonum's kernels).
	for i := range q {
		ri := l[i*q : i*q+i+1]
		for j := range i {
			rj := l[j*q : j*q+j]
			ri[j] = (ri[j] - floats.Dot(ri[:j], rj)) / l[j*q+j]
		}
		dd := ri[i] - floats.Dot(ri[:i], ri[:i])
		if !(dd > 0) {
			return nil, fmt.Errorf("vecchia: the covariance of the first %d points is not positive definite with nugget %g", q, nugget)
		}
		ri[i] = math.Sqrt(dd)
		out[i] = max(dd, nugget)
	}
	return out, nil
}

func toInts(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// AutoOptions are Auto's settings; the zero value of each field selects
// its default.
type AutoOptions struct {
	// Ms are the set sizes tried, increasing (default DefaultLadder).
	Ms []int
	// Target is the label loss (Check) within which Auto stops, in nats
	// (default DefaultTarget).
	Target float64
	// Check are the checks' settings.
	Check CheckOptions
	// Threads bounds the goroutines (0: GOMAXPROCS); the result does not
	// depend on it.
	Threads int
}

// DefaultLadder is the set sizes gpc-kernel --vecchia auto tries, and
// DefaultTarget the label loss it accepts: 0.5 nats, whose calibrated
// error scale (CheckResult.ErrorScale) is 2.1 nats of log marginal
// likelihood.
var DefaultLadder = []int{30, 50, 100, 200}

const DefaultTarget = 0.5

// AutoResult says what Auto chose and why.
type AutoResult struct {
	// Selection is the selection chosen.
	Selection Selection
	// Tried are the selections checked, in order, and Checks their
	// checks; the last are the chosen one's.
	Tried  []Selection
	Checks []CheckResult
	// Met reports whether the chosen one's loss, plus twice its standard
	// error, is within the target (otherwise the ladder ran out).
	Met bool
}

// Auto chooses the conditioning sets from the data: for each set size m
// of the ladder in turn, it checks (Check, on the sampled rows only) the
// sets of AutoSelection(m, 1), the m nearest, then those of
// AutoSelection(m, AutoPool), chosen by the conditional variance, and
// stops at the first whose label loss plus twice its standard error is
// within the target, or at the ladder's end. Nearest sets come first
// where they do: they cost less to find, and the proposal's incomplete
// factorisation in their local pattern drops less (at N = 10^5 on the
// two-class problem, m = 30, the estimate's standard error is 0.12 with
// nearest sets after the wide block and 0.45 with chosen ones, whose
// loss is the smaller, 0.03 nats against 0.09). It returns the structure
// with the chosen sets (Select) and what it found. A ladder's m at least
// the number of distinct points less one is the exact model, and ends it.
func (s *Structure) Auto(k *gp.Kernel, feat []float64, nugget float64, opt AutoOptions) (*Structure, AutoResult, error) {
	ms := opt.Ms
	if len(ms) == 0 {
		ms = DefaultLadder
	}
	target := opt.Target
	if target <= 0 {
		target = DefaultTarget
	}
	copt := opt.Check
	copt.Threads = opt.Threads
	nr := len(s.regular())
	var res AutoResult
ladder:
	for _, m := range ms {
		m = min(m, max(nr-1, 1))
		for _, pool := range []int{1, AutoPool} {
			sel := AutoSelection(m, pool)
			cr, err := s.checkSelection(k, feat, nugget, sel, copt)
			if err != nil {
				return nil, res, err
			}
			res.Selection = sel
			res.Tried = append(res.Tried, sel)
			res.Checks = append(res.Checks, cr)
			if cr.Loss+2*cr.SE <= target {
				res.Met = true
				break ladder
			}
		}
		if m >= nr-1 {
			break
		}
	}
	return s.Select(k, feat, nugget, res.Selection, opt.Threads), res, nil
}
