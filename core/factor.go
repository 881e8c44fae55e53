package core

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Box is the integration problem
//
//	P(Lower <= v <= Upper),   v ~ N(Mean, Cov),
//
// in N dimensions. Cov is the N x N covariance in row-major order; only its
// symmetric part is used, and it must be symmetric to within a relative
// 1e-8 (SymmetryTol). A nil Lower means all zeros, a nil Upper all +Inf and
// a nil Mean all zeros, so the zero Box bounds are the positive orthant
// P(v >= 0). Bounds may be infinite; Lower[i] == Upper[i] is an empty box
// (P = 0) and Lower[i] > Upper[i] is an error.
type Box struct {
	N     int
	Cov   []float64
	Lower []float64
	Upper []float64
	Mean  []float64
	// Labels optionally give each variable a class (its sign), which
	// OrderInterleave alternates when Ordering.Labels is nil.
	Labels []float64
}

// SymmetryTol is the largest accepted |Cov[i][j] - Cov[j][i]| relative to
// sqrt(Cov[i][i] Cov[j][j]). Matrices computed in floating point are
// symmetric to about 1e-16; anything beyond 1e-8 is a different matrix.
const SymmetryTol = 1e-8

// PivotTol is the smallest accepted conditional variance relative to the
// variable's own variance during the factorisation: below it the matrix is
// numerically singular (a variable is, to float64 precision, a linear
// function of the earlier ones) and the conditional densities the estimator
// needs do not exist.
const PivotTol = 1e-12

// InputError reports a problem that depends on the data given to core: a
// value that is not finite, an asymmetric or not positive definite
// covariance, inconsistent bounds. Index is the variable it concerns (its
// position in the input, counting from 0), or -1.
type InputError struct {
	Index int
	Msg   string
}

func (e *InputError) Error() string { return "core: " + e.Msg }

func inputErrorf(index int, format string, args ...any) *InputError {
	return &InputError{Index: index, Msg: fmt.Sprintf(format, args...)}
}

// OrderKind selects the order in which the sequential estimator visits the
// variables.
type OrderKind int

const (
	// OrderGiven keeps the input order.
	OrderGiven OrderKind = iota
	// OrderShuffle uses a random permutation drawn from the seed.
	OrderShuffle
	// OrderInterleave alternates the two classes given by the sign of
	// Ordering.Labels, in proportion to their sizes, each class shuffled
	// (the paper's advice, section 6.2).
	OrderInterleave
	// OrderGreedy is the Genz-Bretz univariate-priority order: at each step
	// the remaining variable with the smallest conditional probability of
	// its interval, its mean conditioned on the truncated means of the
	// variables already placed (Gibson, Glasbey and Elston 1994; Genz and
	// Bretz 2009, section 4.1.3).
	OrderGreedy
	// OrderVariance puts next the remaining variable that keeps the largest
	// fraction of its variance given the variables already placed: the
	// least predictable first (diagonal pivoting of the Cholesky
	// factorisation, on the correlation scale).
	OrderVariance
	// OrderSharp puts first the variables that are nearly determined by all
	// the others (their variance given all the others is below SharpRatio
	// of their own), the most determined first, and the rest as
	// OrderVariance. The sharp constraints then act while the particles are
	// fresh, rather than cutting down a cloud built over many steps.
	OrderSharp
)

// SharpRatio is OrderSharp's threshold on Var(v_i | all others) / Var(v_i).
const SharpRatio = 0.1

var orderNames = [...]string{"given", "shuffle", "interleave", "greedy", "variance", "sharp"}

func (k OrderKind) String() string {
	if k >= 0 && int(k) < len(orderNames) {
		return orderNames[k]
	}
	return fmt.Sprintf("OrderKind(%d)", int(k))
}

// ParseOrder returns the OrderKind called name.
func ParseOrder(name string) (OrderKind, bool) {
	for i, s := range orderNames {
		if s == name {
			return OrderKind(i), true
		}
	}
	return 0, false
}

// Ordering is the variable order and what it needs: the seed of the shuffle,
// for OrderInterleave one label per variable whose sign is its class, and
// for OrderGiven an optional explicit permutation (Perm[k] is the input index
// of the k-th variable), which rebuilds a Factor saved with its order.
type Ordering struct {
	Kind   OrderKind
	Seed   uint64
	Labels []float64
	Perm   []int
}

// Factor is a Box prepared for the sequential estimator: the variables
// reordered, the mean moved into the bounds, and the Cholesky factor of the
// reordered covariance,
//
//	Cov[Perm][Perm] + Jitter I = L L',
//
// so that with v = Mean + L z, z ~ N(0, I), variable k (in the new order)
// given z_1..z_{k-1} is N(sum_{j<k} L[k][j] z_j, L[k][k]^2): the paper's
// conditional mean and variance (V-MEAN, V-VAR) without any inverse.
type Factor struct {
	N int
	// L is the lower-triangular factor, row-major N x N (the upper triangle
	// is zero).
	L []float64
	// A and B are the bounds in the new order with the mean subtracted.
	A, B []float64
	// Perm[k] is the input index of the k-th variable.
	Perm []int
	// Jitter is the value added to the diagonal before factorising.
	Jitter float64
	// Order is the ordering that produced Perm.
	Order OrderKind
	// MinPivot is the smallest conditional variance ratio L[k][k]^2 /
	// Cov[k][k] met: a measure of how close to singular the matrix is.
	MinPivot float64
	// Mu holds the proposal's shifts (Tilt), nil for none: MethodMET draws
	// z_k from N(Mu[k], 1) truncated to its interval and corrects the
	// weight by exp(Mu[k]^2/2 - Mu[k] z_k). TiltStats describes the solve.
	Mu        []float64
	TiltStats TiltStats
	// EPStats describes the EP solve of a Factor for MethodEP (EP.Factor).
	EPStats EPStats
	// ep is MethodEP's twisting, nil otherwise.
	ep *epSteps
}

// NewFactor checks box, orders its variables as asked and factorises its
// covariance. jitter >= 0 is added to the diagonal first (0: none).
//
// It returns an *InputError if an entry is not finite, the covariance is not
// symmetric, a variance is not positive, a bound is NaN or a lower bound
// exceeds its upper bound, the covariance is not positive definite (or is
// singular to working precision, see PivotTol), or OrderInterleave has no
// labels. It panics if the slices do not have the lengths N and N*N.
func NewFactor(box Box, ord Ordering, jitter float64) (*Factor, error) {
	n := box.N
	if n < 1 || len(box.Cov) != n*n {
		panic("core: covariance must be N x N with N >= 1")
	}
	for _, s := range [][]float64{box.Lower, box.Upper, box.Mean} {
		if s != nil && len(s) != n {
			panic("core: bounds and mean must have length N")
		}
	}
	if !(jitter >= 0) || math.IsInf(jitter, 1) {
		return nil, inputErrorf(-1, "jitter %v is not a finite nonnegative number", jitter)
	}
	if err := checkSymmetric(box.Cov, n); err != nil {
		return nil, err
	}
	a, b, err := shiftedBounds(box)
	if err != nil {
		return nil, err
	}
	if ord.Labels == nil {
		ord.Labels = box.Labels
	}
	return newFactor(symSource{cov: box.Cov, n: n, jitter: jitter}, a, b, ord, nil)
}

// symSource is a symmetric n x n matrix as the factorisation reads it,
// without a copy: entry (i, j) is (cov[i][j] + cov[j][i])/2 (bit for bit
// what symmetrize stores), or, if lower, cov[max(i,j)][min(i,j)] (the upper
// triangle is not read), and jitter is added to the diagonal.
type symSource struct {
	cov    []float64
	n      int
	lower  bool
	jitter float64
}

// at returns entry (i, j).
func (s symSource) at(i, j int) float64 {
	n := s.n
	switch {
	case i == j:
		return s.cov[i*n+i] + s.jitter
	case s.lower:
		if i < j {
			i, j = j, i
		}
		return s.cov[i*n+j]
	default:
		return 0.5 * (s.cov[i*n+j] + s.cov[j*n+i])
	}
}

// lowerTo writes the source's lower triangle into w (row-major n x n; the
// upper triangle is left as it was), by 64 x 64 tiles.
func (s symSource) lowerTo(w []float64) {
	const tile = 64
	n, cov := s.n, s.cov
	for i0 := 0; i0 < n; i0 += tile {
		i1 := min(n, i0+tile)
		for j0 := 0; j0 <= i0; j0 += tile {
			for i := i0; i < i1; i++ {
				j1 := min(i, j0+tile)
				if s.lower {
					copy(w[i*n+j0:i*n+j1], cov[i*n+j0:i*n+j1])
					continue
				}
				for j := j0; j < j1; j++ {
					w[i*n+j] = 0.5 * (cov[i*n+j] + cov[j*n+i])
				}
			}
		}
	}
	for i := range n {
		w[i*n+i] = cov[i*n+i] + s.jitter
	}
}

// newFactor is NewFactor after its checks: cov the symmetric covariance,
// a and b the shifted bounds. A non-nil w is cov's own storage (lower,
// no jitter), factorised in place, for an order whose permutation starts
// as the identity.
func newFactor(cov symSource, a, b []float64, ord Ordering, w []float64) (*Factor, error) {
	n := cov.n
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	fixed := 0 // positions before fixed are not pivoted
	switch ord.Kind {
	case OrderGiven:
		if ord.Perm != nil {
			if err := checkPerm(ord.Perm, n); err != nil {
				return nil, err
			}
			copy(perm, ord.Perm)
		}
	case OrderGreedy, OrderVariance:
	case OrderSharp:
		perm, fixed = sharpFirst(cov)
	case OrderShuffle:
		shuffle(perm, NewStream(ord.Seed, domainShuffle, 0))
	case OrderInterleave:
		labels := ord.Labels
		if len(labels) != n {
			return nil, inputErrorf(-1, "the interleave order needs one class label per variable (have %d for %d variables)", len(labels), n)
		}
		perm = interleave(labels, ord.Seed)
	default:
		panic("core: unknown order")
	}

	f := &Factor{N: n, Jitter: cov.jitter, Order: ord.Kind}
	if err := f.cholesky(cov, a, b, perm, fixed, ord.Kind, w); err != nil {
		return nil, err
	}
	return f, nil
}

// checkPerm reports a p that is not a permutation of 0..n-1.
func checkPerm(p []int, n int) error {
	if len(p) != n {
		return inputErrorf(-1, "the order has %d entries for %d variables", len(p), n)
	}
	seen := make([]bool, n)
	for k, v := range p {
		if v < 0 || v >= n || seen[v] {
			return inputErrorf(-1, "the order is not a permutation of 0..%d (entry %d is %d)", n-1, k, v)
		}
		seen[v] = true
	}
	return nil
}

// checkSymmetric checks that cov is finite and symmetric (SymmetryTol)
// with a positive diagonal.
func checkSymmetric(cov []float64, n int) error {
	for i := range n {
		d := cov[i*n+i]
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return inputErrorf(i, "covariance entry (%d, %d) is %v", i, i, d)
		}
		if d <= 0 {
			return inputErrorf(i, "variance of variable %d is %v, not positive: the covariance is not positive definite", i, d)
		}
	}
	if symmetricTiled(cov, n) {
		return nil
	}
	for i := range n {
		for j := range i {
			x, y := cov[i*n+j], cov[j*n+i]
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return inputErrorf(i, "covariance entry (%d, %d) is %v", i, j, x)
			}
			if math.IsNaN(y) || math.IsInf(y, 0) {
				return inputErrorf(j, "covariance entry (%d, %d) is %v", j, i, y)
			}
			scale := math.Sqrt(cov[i*n+i] * cov[j*n+j])
			if math.Abs(x-y) > SymmetryTol*scale {
				return inputErrorf(i, "covariance is not symmetric: entry (%d, %d) = %v but (%d, %d) = %v", i, j, x, j, i, y)
			}
		}
	}
	return nil
}

// symmetricTiled is checkSymmetric's pass by 64 x 64 tiles (each tile's
// transpose read from the cache rather than a cache line per entry); it
// returns false, leaving the messages to checkSymmetric's row-major scan,
// if any entry is not finite or asymmetric.
func symmetricTiled(cov []float64, n int) bool {
	const tile = 64
	for i0 := 0; i0 < n; i0 += tile {
		i1 := min(n, i0+tile)
		for j0 := 0; j0 <= i0; j0 += tile {
			for i := i0; i < i1; i++ {
				for j := j0; j < min(i, j0+tile); j++ {
					x, y := cov[i*n+j], cov[j*n+i]
					if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) ||
						math.Abs(x-y) > SymmetryTol*math.Sqrt(cov[i*n+i]*cov[j*n+j]) {
						return false
					}
				}
			}
		}
	}
	return true
}

// symmetrize checks cov as checkSymmetric and returns (cov + cov')/2 +
// jitter I.
func symmetrize(cov []float64, n int, jitter float64) ([]float64, error) {
	if err := checkSymmetric(cov, n); err != nil {
		return nil, err
	}
	out := make([]float64, n*n)
	symSource{cov: cov, n: n, jitter: jitter}.lowerTo(out)
	mirror(out, n)
	return out, nil
}

// mirror copies the lower triangle of the n x n matrix w onto its upper
// triangle, by 64 x 64 tiles.
func mirror(w []float64, n int) {
	const tile = 64
	for i0 := 0; i0 < n; i0 += tile {
		i1 := min(n, i0+tile)
		for j0 := 0; j0 <= i0; j0 += tile {
			for i := i0; i < i1; i++ {
				for j := j0; j < min(i, j0+tile); j++ {
					w[j*n+i] = w[i*n+j]
				}
			}
		}
	}
}

// shiftedBounds returns Lower - Mean and Upper - Mean with the defaults
// filled in, after checking them.
func shiftedBounds(box Box) (a, b []float64, err error) {
	n := box.N
	a, b = make([]float64, n), make([]float64, n)
	for i := range n {
		lo, hi, mu := 0.0, math.Inf(1), 0.0
		if box.Lower != nil {
			lo = box.Lower[i]
		}
		if box.Upper != nil {
			hi = box.Upper[i]
		}
		if box.Mean != nil {
			mu = box.Mean[i]
		}
		switch {
		case math.IsNaN(lo) || math.IsNaN(hi):
			return nil, nil, inputErrorf(i, "bound of variable %d is NaN", i)
		case math.IsNaN(mu) || math.IsInf(mu, 0):
			return nil, nil, inputErrorf(i, "mean of variable %d is %v", i, mu)
		case lo > hi:
			return nil, nil, inputErrorf(i, "lower bound %v of variable %d exceeds its upper bound %v", lo, i, hi)
		}
		a[i], b[i] = lo-mu, hi-mu
	}
	return a, b, nil
}

// cholesky computes f.L, f.A, f.B and f.Perm, visiting the variables in the
// order perm, or, if greedy, choosing at each step the remaining variable
// with the smallest conditional interval probability (OrderVariance and
// OrderSharp: the largest remaining variance ratio), after position fixed.
// The factorisation is the blocked one of cholesky (chol.go), its pivots
// chosen column by column; cov is not modified.
func (f *Factor) cholesky(cov symSource, a, b []float64, perm []int, fixed int, kind OrderKind, w []float64) error {
	greedy := kind == OrderGreedy
	pivot := greedy || kind == OrderVariance || kind == OrderSharp
	n := f.N
	identity := true
	for p, v := range perm {
		identity = identity && p == v
	}
	diag := make([]float64, n) // the variances in the input order
	for v := range diag {
		diag[v] = cov.at(v, v)
	}
	switch {
	case w != nil:
		// In place: w is cov's storage, its lower triangle the matrix.
		if !identity || !cov.lower || cov.jitter != 0 || &w[0] != &cov.cov[0] {
			panic("core: factorisation in place of a matrix it would reorder")
		}
	case identity:
		w = make([]float64, n*n) // row p, columns <= p: the variables at positions p and c
		cov.lowerTo(w)
	default:
		w = make([]float64, n*n)
		for p, i := range perm {
			row := w[p*n : p*n+p+1]
			for c, j := range perm[:p+1] {
				row[c] = cov.at(i, j)
			}
		}
	}
	mu := make([]float64, n) // greedy: conditional mean at position p given the truncated means so far
	vr := make([]float64, n) // pivoting: remaining conditional variance at position p
	for p := range n {
		vr[p] = diag[perm[p]]
	}
	// score returns the pivoting criterion of the variable at position p:
	// lower is placed first.
	score := func(p int) float64 {
		v := perm[p]
		if !greedy {
			return -vr[p] / diag[v]
		}
		s := math.Sqrt(math.Max(vr[p], 0))
		return LogPhiDiff((a[v]-mu[p])/s, (b[v]-mu[p])/s)
	}
	f.MinPivot = 1
	workers := cholWorkers()
	var yi float64 // greedy: the truncated mean of z at the last position placed
	var bad error
	pv := &cholPivot{
		pick: func(i int) int {
			if !pivot || i < fixed {
				return i
			}
			if !greedy || n-i < 2*pickChunk || workers == 1 {
				best, _ := pickScan(score, perm, i, n, i, math.Inf(1))
				return best
			}
			// Greedy's scores (a log Phi each) in fixed chunks over the
			// workers: the least (score, input index) is the same
			// whichever chunks find it.
			nc := (n - i + pickChunk - 1) / pickChunk
			bests, scores := make([]int, nc), make([]float64, nc)
			var wg sync.WaitGroup
			var next atomic.Int64
			for range min(workers, nc) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for c := int(next.Add(1)) - 1; c < nc; c = int(next.Add(1)) - 1 {
						p0 := i + c*pickChunk
						bests[c], scores[c] = pickScan(score, perm, p0, min(n, p0+pickChunk), -1, 0)
					}
				}()
			}
			wg.Wait()
			best, bestScore := i, math.Inf(1)
			for c, b := range bests {
				if b >= 0 && (scores[c] < bestScore || scores[c] == bestScore && perm[b] < perm[best]) {
					best, bestScore = b, scores[c]
				}
			}
			return best
		},
		swap: func(i, j int) {
			perm[i], perm[j] = perm[j], perm[i]
			mu[i], mu[j] = mu[j], mu[i]
			vr[i], vr[j] = vr[j], vr[i]
		},
		check: func(i int, d float64) bool {
			vi := perm[i]
			ratio := d / diag[vi]
			if !(ratio > PivotTol) {
				if d <= 0 {
					bad = inputErrorf(vi, "covariance is not positive definite (variable %d has conditional variance %.3g given the %d variables before it); --jitter adds to the diagonal", vi, d, i)
				} else {
					bad = inputErrorf(vi, "covariance is singular to working precision (variable %d keeps a fraction %.3g of its variance given the %d variables before it); --jitter adds to the diagonal", vi, ratio, i)
				}
				return false
			}
			f.MinPivot = math.Min(f.MinPivot, ratio)
			return true
		},
		done: func(i int, lii float64) {
			if greedy {
				vi := perm[i]
				yi = truncatedMean((a[vi]-mu[i])/lii, (b[vi]-mu[i])/lii)
			}
		},
		column: func(i, p int, lpi float64) {
			if pivot {
				vr[p] -= lpi * lpi
			}
			if greedy {
				mu[p] += lpi * yi
			}
		},
	}
	if cholesky(w, n, pv, workers) >= 0 {
		return bad
	}
	f.L = w
	f.Perm = perm
	f.A, f.B = make([]float64, n), make([]float64, n)
	for k, v := range perm {
		f.A[k], f.B[k] = a[v], b[v]
	}
	return nil
}

// pickChunk is the number of positions whose greedy scores one goroutine
// computes at a time when a pivot is picked.
const pickChunk = 1024

// pickScan returns, of best (bestScore) and the positions p in [p0, p1)
// whose score is not NaN, the one with the least (score(p), perm[p]), and
// its score; best < 0 stands for none. The least of a set is the least of
// its parts' least, so the result does not depend on how the positions
// are split.
func pickScan(score func(int) float64, perm []int, p0, p1, best int, bestScore float64) (int, float64) {
	for p := p0; p < p1; p++ {
		sc := score(p)
		if math.IsNaN(sc) {
			continue
		}
		if best < 0 || sc < bestScore || (sc == bestScore && perm[p] < perm[best]) {
			best, bestScore = p, sc
		}
	}
	return best, bestScore
}

// sharpFirst returns OrderSharp's initial permutation and the length of its
// fixed prefix: the variables whose leave-one-out variance ratio
//
//	Var(v_i | v_-i) / Var(v_i) = 1 / (cov[i][i] (cov^-1)[i][i])
//
// is below SharpRatio, in increasing ratio, then the others in input order.
// If cov is not positive definite it returns the identity (the
// factorisation that follows reports the error).
func sharpFirst(cov symSource) ([]int, int) {
	n := cov.n
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	inv, ok := invDiag(cov)
	if !ok {
		return perm, 0
	}
	ratio := make([]float64, n)
	var sharp []int
	for i := range n {
		ratio[i] = 1 / (cov.at(i, i) * inv[i])
		if ratio[i] < SharpRatio {
			sharp = append(sharp, i)
		}
	}
	slices.SortStableFunc(sharp, func(x, y int) int { return cmp.Compare(ratio[x], ratio[y]) })
	in := make([]bool, n)
	for _, i := range sharp {
		in[i] = true
	}
	perm = append(perm[:0], sharp...)
	for i := range n {
		if !in[i] {
			perm = append(perm, i)
		}
	}
	return perm, len(sharp)
}

// truncatedMean returns E[Z | a <= Z <= b] for standard normal Z,
//
//	(phi(a) - phi(b)) / (Phi(b) - Phi(a)),
//
// computed in log space; for an interval of probability zero it returns the
// nearer bound.
func truncatedMean(a, b float64) float64 {
	lp := LogPhiDiff(a, b)
	if math.IsInf(lp, -1) || math.IsNaN(lp) {
		if math.IsInf(a, 0) {
			return b
		}
		return a
	}
	m := 0.0
	if !math.IsInf(a, 0) {
		m += math.Exp(LogPhiDensity(a) - lp)
	}
	if !math.IsInf(b, 0) {
		m -= math.Exp(LogPhiDensity(b) - lp)
	}
	return math.Max(a, math.Min(b, m))
}

// shuffle permutes p uniformly at random (Fisher-Yates).
func shuffle(p []int, r interface{ IntN(int) int }) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}

// interleave returns a permutation that alternates the variables with
// positive and non-positive labels, each class shuffled, spreading the
// smaller class evenly: at each position the class furthest behind its share
// goes next.
func interleave(labels []float64, seed uint64) []int {
	var pos, neg []int
	for i, y := range labels {
		if y > 0 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	r := NewStream(seed, domainShuffle, 0)
	shuffle(pos, r)
	shuffle(neg, r)
	out := make([]int, 0, len(labels))
	ip, in := 0, 0
	for len(out) < len(labels) {
		// Compare (ip+1/2)/len(pos) with (in+1/2)/len(neg) without dividing.
		takePos := in == len(neg) || (ip < len(pos) && (2*ip+1)*len(neg) <= (2*in+1)*len(pos))
		if takePos {
			out = append(out, pos[ip])
			ip++
		} else {
			out = append(out, neg[in])
			in++
		}
	}
	return out
}
