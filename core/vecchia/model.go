package vecchia

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// Model is a box probability of a Gaussian latent process observed with
// noise, under a Vecchia approximation of the latent process: in the
// estimator's order k = 0, ..., N-1,
//
//	x_k = sum_{j in c(k)} B_kj x_j + sqrt(D_k) e_k,   c(k) a subset of {0, ..., k-1},
//	w_k = x_k + sqrt(Noise) eps_k,
//	P = P(Lower_k <= w_k <= Upper_k for every k),
//
// with e and eps independent standard normals. Its latent covariance is
// (A'A)^-1 with A = D^-1/2 (I - B), lower-triangular with at most M + 1
// entries per row (its sparse inverse Cholesky factor); with every c(k) =
// {0, ..., k-1} it is exact. For the probit classifier, x is the latent
// function f (plus the nugget moved into it, see NewClassifier), Noise is
// 1 less the nugget, and row k's bounds are [0, +Inf) for a label +1 and
// (-Inf, 0] for -1, so that P is the marginal likelihood.
//
// A row with CondVar 0 is a repeat of an earlier point (a duplicate: the
// same features): its one neighbour, with coefficient 1, is that point,
// whose latent value it shares; it has a bound of its own (its label).
//
// Test rows (T of them) follow the same form, each conditioned on training
// rows only: the test latent x*_t = sum_j TCoef_tj x_j + sqrt(TCondVar_t)
// e*_t, and a test posterior is P(w*_t >= 0 | the box), w*_t = x*_t +
// sqrt(Noise) eps*_t.
type Model struct {
	N int
	// Start holds N+1 offsets: row k's conditioning set c(k) is
	// Nbr[Start[k]:Start[k+1]] (positions below k, increasing) and its
	// coefficients B_kj are Coef[Start[k]:Start[k+1]].
	Start   []int
	Nbr     []int32
	Coef    []float64
	CondVar []float64
	Noise   float64
	// Lower and Upper bound w_k (Lower[k] <= Upper[k], either infinite).
	Lower, Upper []float64

	T        int
	TStart   []int
	TNbr     []int32
	TCoef    []float64
	TCondVar []float64
}

// M returns the largest conditioning set.
func (m *Model) M() int {
	mx := 0
	for k := range m.N {
		mx = max(mx, m.Start[k+1]-m.Start[k])
	}
	return mx
}

// Dup returns the position of the point that row k repeats, or -1.
func (m *Model) Dup(k int) int {
	if m.CondVar[k] != 0 {
		return -1
	}
	return int(m.Nbr[m.Start[k]])
}

// Validate checks the model's shapes and values: the offsets, every
// neighbour before its row (a test row's among the training rows), finite
// coefficients, positive finite conditional variances (or a duplicate
// row: variance 0, one neighbour that is not itself a duplicate,
// coefficient 1), a positive finite noise variance and bounds with Lower <=
// Upper. It returns a *core.InputError naming the first row that is
// wrong (a test row's index counts from N).
func (m *Model) Validate() error {
	if m.N < 1 {
		return &core.InputError{Index: -1, Msg: fmt.Sprintf("a Vecchia model of %d training rows", m.N)}
	}
	if !(m.Noise > 0) || math.IsInf(m.Noise, 1) {
		return &core.InputError{Index: -1, Msg: fmt.Sprintf("noise variance %v: must be positive and finite (the estimator integrates each row's noise)", m.Noise)}
	}
	if len(m.Start) != m.N+1 || len(m.CondVar) != m.N || len(m.Lower) != m.N || len(m.Upper) != m.N || m.Start[0] != 0 || m.Start[m.N] != len(m.Nbr) || len(m.Coef) != len(m.Nbr) {
		return &core.InputError{Index: -1, Msg: "the model's arrays have inconsistent lengths"}
	}
	if err := checkRows(m.N, 0, m.Start, m.Nbr, m.Coef, m.CondVar, func(k int) int { return k }, m); err != nil {
		return err
	}
	for k := range m.N {
		a, b := m.Lower[k], m.Upper[k]
		if math.IsNaN(a) || math.IsNaN(b) || a > b || math.IsInf(a, 1) || math.IsInf(b, -1) {
			return &core.InputError{Index: k, Msg: fmt.Sprintf("row %d: bounds [%v, %v] are not an interval", k, a, b)}
		}
	}
	if m.T == 0 {
		return nil
	}
	if len(m.TStart) != m.T+1 || len(m.TCondVar) != m.T || m.TStart[0] != 0 || m.TStart[m.T] != len(m.TNbr) || len(m.TCoef) != len(m.TNbr) {
		return &core.InputError{Index: -1, Msg: "the model's test arrays have inconsistent lengths"}
	}
	return checkRows(m.T, m.N, m.TStart, m.TNbr, m.TCoef, m.TCondVar, func(int) int { return m.N }, nil)
}

// checkRows checks rows [0, count) of a CSR conditional structure whose
// neighbours must be below limit(row), reporting rows from base on; dups
// is the model whose duplicate rows may have variance 0 (nil: none may).
func checkRows(count, base int, start []int, nbr []int32, coef, condVar []float64, limit func(int) int, dups *Model) error {
	for k := range count {
		s, e := start[k], start[k+1]
		if e < s || e > len(nbr) {
			return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: its neighbours' offsets are not increasing", base+k)}
		}
		prev := int32(-1)
		for q := s; q < e; q++ {
			j := nbr[q]
			if j <= prev || int(j) >= limit(k) {
				return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: neighbour %d is not an increasing position below %d", base+k, j, limit(k))}
			}
			prev = j
			if c := coef[q]; math.IsNaN(c) || math.IsInf(c, 0) {
				return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: coefficient %v is not finite", base+k, c)}
			}
		}
		v := condVar[k]
		if v == 0 && dups != nil {
			if e-s != 1 || coef[s] != 1 || dups.CondVar[nbr[s]] == 0 {
				return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: conditional variance 0 is only allowed for a repeated point (one neighbour, not itself a repeat, coefficient 1)", base+k)}
			}
			continue
		}
		if !(v > 0) || math.IsInf(v, 1) {
			return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: conditional variance %v is not positive and finite", base+k, v)}
		}
		if dups != nil {
			for _, j := range nbr[s:e] {
				if dups.CondVar[j] == 0 {
					return &core.InputError{Index: base + k, Msg: fmt.Sprintf("row %d: neighbour %d is a repeated point (condition on the point it repeats)", base+k, j)}
				}
			}
		}
	}
	return nil
}

// OrderKind names how NewStructure orders the training points.
type OrderKind int

const (
	// OrderMaxMin is the maxmin ordering (MaxMin).
	OrderMaxMin OrderKind = iota
	// OrderGiven keeps the input's order.
	OrderGiven
)

var orderNames = [...]string{"maxmin", "given"}

func (o OrderKind) String() string {
	if o >= 0 && int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("OrderKind(%d)", int(o))
}

// ParseOrder returns the OrderKind called name.
func ParseOrder(name string) (OrderKind, bool) {
	i := slices.Index(orderNames[:], name)
	return OrderKind(i), i >= 0
}

// DefaultM is a fixed count of neighbours per point, within 1 nat of the
// dense model's log marginal likelihood and 0.003 of its test posteriors
// on the two-class tables at N = 1000, 5000 and 10^4 (docs/vecchia.md),
// at 1.4-1.6 times the time of 30 (N = 10^4, 10^5); the Vecchia fit's
// studies take it. gpc-kernel --vecchia auto took it until it chose the
// sets from the data (Structure.Auto).
const DefaultM = 50

// MaxM is the most neighbours per point that NewStructure takes: the
// preparation's cache of each row's entry pairs (pairCache) indexes a
// row's entries in a byte. Measured at N = 3000 (two-class, 2-D, one
// thread): M = 254 with the cache, 3.6 s of CPU and 786 MB for gpc-train;
// M = 255 without, 5.1 s and 91 MB. Past about N = 8000 the cache of so
// many neighbours outgrows its bound (maxPairCache) anyway, and
// docs/vecchia.md measured nothing past M = 100.
const MaxM = pairDiag - 1

// DefaultNugget is the part of the probit's noise variance (1) that
// gpc-kernel --vecchia moves into the latent process by default
// (--vecchia-nugget; NewClassifier's nugget).
const DefaultNugget = 1e-4

// Options are NewStructure's settings; the zero value of each field but M
// selects its default.
type Options struct {
	// M is the largest conditioning set: each point's M nearest earlier
	// points.
	M int
	// Order is the order of the training points.
	Order OrderKind
	// Threads bounds the goroutines (0: GOMAXPROCS); the result does not
	// depend on it.
	Threads int
}

// Structure is the part of a Vecchia model that depends on the training
// points' positions only: their order, each point's conditioning set and
// the repeated points.
type Structure struct {
	N, D int
	// Perm[k] is the input row of position k.
	Perm []int
	// Nbr[k] is position k's conditioning set (increasing positions; for a
	// repeated point, the position of the point it repeats).
	Nbr [][]int32
	// Dup[k] is the position of the point that position k repeats, or -1.
	Dup []int32
	// x holds the features in the metric of the neighbour search, by
	// position (N x D).
	x []float64
}

// ErrNoPoints is returned by NewStructure for an empty training set.
var ErrNoPoints = errors.New("vecchia: no training points")

// NewStructure orders the n training points x (n x d, row-major; scale
// each feature by its length scale first: the nearest neighbours are
// Euclidean) as opt.Order asks and finds each one's opt.M nearest earlier
// points. Repeated points (identical features) are taken out of the
// ordering and each placed right after the first of its copies, which it
// conditions on alone; the others condition on distinct points only. x is
// not modified.
func NewStructure(x []float64, n, d int, opt Options) (*Structure, error) {
	if n == 0 {
		return nil, ErrNoPoints
	}
	if opt.M < 1 || opt.M > MaxM {
		return nil, fmt.Errorf("vecchia: %d neighbours: 1 to %d are taken (MaxM)", opt.M, MaxM)
	}
	for i, v := range x[:n*d] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, &core.InputError{Index: i / d, Msg: fmt.Sprintf("row %d, feature %d: %v is not finite", i/d, i%d, v)}
		}
	}
	// The distinct points, each with its copies (rows in input order).
	byRow := make([]int, n)
	for i := range byRow {
		byRow[i] = i
	}
	slices.SortStableFunc(byRow, func(a, b int) int { return slices.Compare(x[a*d:a*d+d], x[b*d:b*d+d]) })
	primary := make([]int, n) // primary[i]: the first input row with row i's features
	var uniq []int
	for k, r := range byRow {
		if k > 0 && slices.Equal(x[r*d:r*d+d], x[byRow[k-1]*d:byRow[k-1]*d+d]) {
			primary[r] = primary[byRow[k-1]]
			continue
		}
		primary[r] = r
		uniq = append(uniq, r)
	}
	slices.Sort(uniq)
	copies := map[int][]int{}
	for r := range n {
		if primary[r] != r {
			copies[primary[r]] = append(copies[primary[r]], r)
		}
	}
	// The distinct points' order, as positions in uniq.
	ux := make([]float64, len(uniq)*d)
	for k, r := range uniq {
		copy(ux[k*d:k*d+d], x[r*d:r*d+d])
	}
	ord := make([]int, len(uniq))
	var wait func(int)
	switch opt.Order {
	case OrderMaxMin:
		// The order on a goroutine of its own (but on one thread), the
		// neighbours of each prefix of it searched as it is done (the
		// same sets: a position's are among the positions before it).
		if opt.Threads == 1 {
			maxMinInto(ux, len(uniq), d, ord, nil)
			break
		}
		wait = orderPrefixes(func(ready func(int)) { maxMinInto(ux, len(uniq), d, ord, ready) })
	case OrderGiven:
		for i := range ord {
			ord[i] = i
		}
	default:
		return nil, fmt.Errorf("vecchia: unknown order %v", opt.Order)
	}
	unbr := earlierNeighbours(ux, d, ord, opt.M, opt.Threads, wait)
	s := &Structure{N: n, D: d, Perm: make([]int, 0, n), Nbr: make([][]int32, 0, n), Dup: make([]int32, 0, n), x: make([]float64, n*d)}
	posOf := make([]int32, len(uniq)) // a distinct point's position in the full order
	for k, u := range ord {
		r := uniq[u]
		pos := int32(len(s.Perm))
		posOf[k] = pos
		nb := make([]int32, len(unbr[k]))
		for q, j := range unbr[k] {
			nb[q] = posOf[j]
		}
		s.Perm = append(s.Perm, r)
		s.Nbr = append(s.Nbr, nb)
		s.Dup = append(s.Dup, -1)
		for _, c := range copies[r] {
			s.Perm = append(s.Perm, c)
			s.Nbr = append(s.Nbr, []int32{pos})
			s.Dup = append(s.Dup, pos)
		}
	}
	for k, r := range s.Perm {
		copy(s.x[k*d:k*d+d], x[r*d:r*d+d])
	}
	return s, nil
}

// orderPrefixes runs produce on a goroutine of its own, which tells its
// ready of each count of positions it has written, and returns the wait
// that returns once at least k are (k one of the counts told).
func orderPrefixes(produce func(ready func(int))) func(k int) {
	counts := make(chan int, 64)
	go func() {
		produce(func(k int) { counts <- k })
		close(counts)
	}()
	done := 0
	return func(k int) {
		for done < k {
			c, ok := <-counts
			if !ok {
				panic("vecchia: the order ended before its prefix")
			}
			done = c
		}
	}
}

// Duplicates returns the number of repeated points.
func (s *Structure) Duplicates() int {
	c := 0
	for _, d := range s.Dup {
		if d >= 0 {
			c++
		}
	}
	return c
}

// TestNeighbours returns, for each of the t test points q (t x d, in the
// structure's metric), its at most m nearest distinct training points, as
// increasing positions.
func (s *Structure) TestNeighbours(q []float64, t, m, threads int) [][]int32 {
	var rows []int
	for k, dp := range s.Dup {
		if dp < 0 {
			rows = append(rows, k)
		}
	}
	nb := NearestPoints(s.x, s.D, rows, q, t, m, threads)
	for _, row := range nb {
		for q, i := range row {
			row[q] = int32(rows[i])
		}
		slices.Sort(row)
	}
	return nb
}

// Conditionals computes the Vecchia conditionals of the kernel k (with the
// nugget added to its variance) on the structure: for each regular row k
// with conditioning set c, B_k = (K_cc + nugget I)^-1 k_ck and D_k =
// k(x_k, x_k) + nugget - k_kc B_k (at least the nugget), from a Cholesky
// factorisation of K_cc + nugget I. feat holds the kernel's features by
// input row (n x d). It returns the CSR offsets, coefficients and
// variances, or an error naming the row whose system could not be
// factorised.
func (s *Structure) Conditionals(k *gp.Kernel, feat []float64, nugget float64, threads int) (start []int, nbr []int32, coef, condVar []float64, err error) {
	start = make([]int, s.N+1)
	for i, c := range s.Nbr {
		start[i+1] = start[i] + len(c)
	}
	nbr = make([]int32, start[s.N])
	for i, c := range s.Nbr {
		copy(nbr[start[i]:], c)
	}
	coef, condVar = make([]float64, len(nbr)), make([]float64, s.N)
	d := s.D
	row := func(i int) []float64 { r := s.Perm[i]; return feat[r*d : r*d+d] }
	errs := make([]error, s.N)
	parallelRange(0, s.N, threads, func(a, b int) {
		var w condWork
		for i := a; i < b; i++ {
			if s.Dup[i] >= 0 {
				coef[start[i]] = 1
				continue
			}
			c := nbr[start[i]:start[i+1]]
			xs := w.points(len(c))
			for q, j := range c {
				xs[q] = row(int(j))
			}
			v, ok := w.solve(k, xs, row(i), nugget, coef[start[i]:start[i+1]])
			if !ok {
				errs[i] = fmt.Errorf("vecchia: the covariance of point %d's %d neighbours is not positive definite with nugget %g", s.Perm[i], len(c), nugget)
				continue
			}
			condVar[i] = v
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, nil, err
	}
	return start, nbr, coef, condVar, nil
}

// TestConditionals computes the conditionals of the test points with
// features q (len(nb) x d, the kernel's) on the training positions nb
// (from TestNeighbours), as Conditionals does; feat holds the training
// points' features by input row.
func (s *Structure) TestConditionals(k *gp.Kernel, feat []float64, q []float64, nb [][]int32, nugget float64, threads int) (start []int, flat []int32, coef, condVar []float64, err error) {
	t := len(nb)
	start = make([]int, t+1)
	for i, c := range nb {
		start[i+1] = start[i] + len(c)
	}
	flat = make([]int32, start[t])
	for i, c := range nb {
		copy(flat[start[i]:], c)
	}
	coef, condVar = make([]float64, len(flat)), make([]float64, t)
	d := s.D
	errs := make([]error, t)
	parallelRange(0, t, threads, func(a, b int) {
		var w condWork
		for i := a; i < b; i++ {
			c := flat[start[i]:start[i+1]]
			xs := w.points(len(c))
			for qq, j := range c {
				r := s.Perm[j]
				xs[qq] = feat[r*d : r*d+d]
			}
			v, ok := w.solve(k, xs, q[i*d:i*d+d], nugget, coef[start[i]:start[i+1]])
			if !ok {
				errs[i] = fmt.Errorf("vecchia: the covariance of test point %d's %d neighbours is not positive definite with nugget %g", i, len(c), nugget)
				continue
			}
			condVar[i] = v
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, nil, err
	}
	return start, flat, coef, condVar, nil
}

// condWork is a worker's scratch for one conditional's linear system.
type condWork struct {
	l, kc []float64
	xs    [][]float64
	flat  []float64 // the points xs one after the other (Kernel.LowerTo)
}

// points returns a slice of q feature rows to fill.
func (w *condWork) points(q int) [][]float64 {
	w.xs = slices.Grow(w.xs[:0], q)[:q]
	return w.xs
}

// solve sets b = (K_cc + nugget I)^-1 k_c for the points xs and the point
// x0, and returns k(x0, x0) + nugget - k_c'b (at least nugget), or false
// if K_cc + nugget I is not numerically positive definite.
func (w *condWork) solve(k *gp.Kernel, xs [][]float64, x0 []float64, nugget float64, b []float64) (float64, bool) {
	q := len(xs)
	w.l = slices.Grow(w.l[:0], q*q)[:q*q]
	w.kc = slices.Grow(w.kc[:0], q)[:q]
	l, kc := w.l, w.kc
	d := len(x0)
	w.flat = slices.Grow(w.flat[:0], q*d)
	for _, x := range xs {
		w.flat = append(w.flat, x...)
	}
	k.LowerTo(l, w.flat, d)
	for i := range q {
		l[i*q+i] += nugget
		kc[i] = k.Eval(xs[i], x0)
	}
	// Cholesky, in place, lower.
	for j := range q {
		s := l[j*q+j]
		for p := range j {
			s -= l[j*q+p] * l[j*q+p]
		}
		if !(s > 0) {
			return 0, false
		}
		dj := math.Sqrt(s)
		l[j*q+j] = dj
		for i := j + 1; i < q; i++ {
			t := l[i*q+j]
			for p := range j {
				t -= l[i*q+p] * l[j*q+p]
			}
			l[i*q+j] = t / dj
		}
	}
	// y = L^-1 k_c (in kc), v = k00 + nugget - |y|^2, b = L^-T y.
	v := k.Eval(x0, x0) + nugget
	for i := range q {
		t := kc[i]
		for p := range i {
			t -= l[i*q+p] * kc[p]
		}
		kc[i] = t / l[i*q+i]
		v -= kc[i] * kc[i]
	}
	for i := q - 1; i >= 0; i-- {
		t := kc[i]
		for p := i + 1; p < q; p++ {
			t -= l[p*q+i] * b[p]
		}
		b[i] = t / l[i*q+i]
	}
	return max(v, nugget), true
}

// NewClassifier returns the probit classifier's model on the structure s:
// the kernel k on the features feat (by input row, n x d, the kernel's
// own: unscaled), labels y (+1 or -1, by input row), and the test points
// with features tf (len(tnb) x d) whose conditioning sets tnb come from
// s.TestNeighbours. Rows are in the structure's order. The nugget, in
// (0, 1), is moved from the probit's noise (variance 1) into the latent
// process: the latent covariance approximated is K + nugget I and the
// noise's variance 1 - nugget, so that the exact model (every point
// conditioned on all earlier ones) is the dense one, whatever the nugget.
// It keeps the conditionals' linear systems well posed where neighbours
// nearly coincide (an RBF kernel's matrices are numerically singular
// there).
func NewClassifier(s *Structure, k *gp.Kernel, feat, y []float64, nugget float64, tf []float64, tnb [][]int32, threads int) (*Model, error) {
	if !(nugget > 0 && nugget < 1) {
		return nil, fmt.Errorf("vecchia: nugget %v is not in (0, 1)", nugget)
	}
	start, nbr, coef, cv, err := s.Conditionals(k, feat, nugget, threads)
	if err != nil {
		return nil, err
	}
	m := &Model{N: s.N, Start: start, Nbr: nbr, Coef: coef, CondVar: cv, Noise: 1 - nugget,
		Lower: make([]float64, s.N), Upper: make([]float64, s.N)}
	for pos, r := range s.Perm {
		switch y[r] {
		case 1:
			m.Lower[pos], m.Upper[pos] = 0, math.Inf(1)
		case -1:
			m.Lower[pos], m.Upper[pos] = math.Inf(-1), 0
		default:
			return nil, &core.InputError{Index: r, Msg: fmt.Sprintf("row %d: label %v is not +1 or -1", r, y[r])}
		}
	}
	if len(tnb) > 0 {
		m.T = len(tnb)
		if m.TStart, m.TNbr, m.TCoef, m.TCondVar, err = s.TestConditionals(k, feat, tf, tnb, nugget, threads); err != nil {
			return nil, err
		}
	}
	return m, m.Validate()
}
