package vecchia

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// TestLabelEntropy checks labelEntropy against a brute-force sum over a
// fine grid of z.
func TestLabelEntropy(t *testing.T) {
	for _, rho := range []float64{1e-6, 1e-3, 0.1, 1, 3, 30, 1e3, 1e6} {
		const h = 1e-4
		s := 0.0
		for z := -12.0; z <= 12; z += h {
			u := math.Sqrt(rho) * z
			lp, lq := core.LogPhi(u), core.LogPhi(-u)
			s += -(math.Exp(lp)*lp + math.Exp(lq)*lq) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) * h
		}
		if got := labelEntropy(rho); math.Abs(got-s) > 1e-6*s+1e-12 {
			t.Errorf("rho %v: %v, want %v", rho, got, s)
		}
	}
}

// TestLabelLoss checks LabelLoss against its definition, the expected
// Kullback-Leibler divergence of the label's probability given the larger
// set from that given the smaller, integrated directly over the two
// conditional means (mu_c ~ N(0, v0 - dc), mu_C = mu_c + r, r ~ N(0, dc -
// dC)) on a fine grid: the entropies' difference LabelLoss computes is an
// identity, which this checks.
func TestLabelLoss(t *testing.T) {
	for _, c := range []struct{ v0, dc, dC, s float64 }{
		{4, 1, 0.3, 1},
		{10.0001, 3, 0.01, 0.9999},
		{100, 5, 0.5, 1},
		{1, 0.9, 0.8, 1},
	} {
		sc, sr := math.Sqrt(c.v0-c.dc), math.Sqrt(c.dc-c.dC)
		kl := func(lpC, lqC, lpc, lqc float64) float64 {
			return math.Exp(lpC)*(lpC-lpc) + math.Exp(lqC)*(lqC-lqc)
		}
		const h = 0.01
		want := 0.0
		for a := -9.0; a <= 9; a += h {
			mc := sc * a
			zc := mc / math.Sqrt(c.dc+c.s)
			lpc, lqc := core.LogPhi(zc), core.LogPhi(-zc)
			wa := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi) * h
			for b := -9.0; b <= 9; b += h {
				zC := (mc + sr*b) / math.Sqrt(c.dC+c.s)
				want += wa * math.Exp(-b*b/2) / math.Sqrt(2*math.Pi) * h * kl(core.LogPhi(zC), core.LogPhi(-zC), lpc, lqc)
			}
		}
		if got := LabelLoss(c.v0, c.dc, c.dC, c.s); math.Abs(got-want) > 1e-6+1e-4*want {
			t.Errorf("%+v: %v, want %v", c, got, want)
		}
	}
	if got := LabelLoss(2, 0.5, 0.5, 1); got != 0 {
		t.Errorf("equal sets: %v, want 0", got)
	}
}

// denseCondVars returns every point's conditional variance given all
// before it in the structure's order, by brute force: the Cholesky factor
// of the distinct points' covariance (K + nugget I), on gonum.
func denseCondVars(t *testing.T, s *Structure, k *gp.Kernel, feat []float64, nugget float64) map[int]float64 {
	reg := s.regular()
	n := len(reg)
	a := mat.NewSymDense(n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := k.Eval(s.feature(feat, reg[i]), s.feature(feat, reg[j]))
			if i == j {
				v += nugget
			}
			a.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		t.Fatal("the covariance is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	out := map[int]float64{}
	for i, p := range reg {
		out[int(p)] = l.At(i, i) * l.At(i, i)
	}
	return out
}

// checkProblem is a small problem for the check's tests: n points in d
// dimensions, a few of them repeated, and an RBF kernel of length scale
// alpha.
func checkProblem(n, d int, alpha float64) ([]float64, *gp.Kernel) {
	x := randomPoints(n, d, 11)
	for _, p := range [][2]int{{5, 17}, {40, 17}, {n - 1, 3}} {
		copy(x[p[0]*d:p[0]*d+d], x[p[1]*d:p[1]*d+d])
	}
	return x, &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{alpha}, Beta: 9}
}

// TestCheckBruteForce checks Check against a brute-force computation of
// its sum on every row: the model's conditional variances (Conditionals)
// and every earlier point's (a dense Cholesky factorisation), through
// LabelLoss and the w's half log ratio; measured exactly (the first
// Exact positions) and through larger sets that hold every earlier point
// (Big).
func TestCheckBruteForce(t *testing.T) {
	for _, c := range []struct {
		d     int
		alpha float64
	}{{2, 0.8}, {8, 6}} {
		const n, nugget = 300, 1e-4
		x, k := checkProblem(n, c.d, c.alpha)
		s, err := NewStructure(x, n, c.d, Options{M: 4})
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, cv, err := s.Conditionals(k, x, nugget, 2)
		if err != nil {
			t.Fatal(err)
		}
		ex := denseCondVars(t, s, k, x, nugget)
		var want, wantResp float64
		for i, v := range ex {
			want += LabelLoss(k.Eval(x[s.Perm[i]*c.d:s.Perm[i]*c.d+c.d], x[s.Perm[i]*c.d:s.Perm[i]*c.d+c.d])+nugget, cv[i], min(v, cv[i]), 1-nugget)
			wantResp += 0.5 * math.Log((cv[i]+1-nugget)/(min(v, cv[i])+1-nugget))
		}
		if !(want > 1e-3) {
			t.Fatalf("d = %d: the loss %v is too small for a test", c.d, want)
		}
		for _, opt := range []CheckOptions{{Rows: n, Exact: n}, {Rows: n, Exact: 1, Big: n}} {
			got, err := s.Check(k, x, nugget, opt)
			if err != nil {
				t.Fatal(err)
			}
			if nr := len(ex); got.Rows != nr {
				t.Errorf("d = %d, %+v: %d rows, want %d", c.d, opt, got.Rows, nr)
			}
			if math.Abs(got.Loss-want) > 1e-6*want || math.Abs(got.RespLoss-wantResp) > 1e-6*wantResp {
				t.Errorf("d = %d, %+v: loss %v and %v, want %v and %v", c.d, opt, got.Loss, got.RespLoss, want, wantResp)
			}
		}
		// A sample: the mean of its rows, scaled, within a few standard
		// errors of the whole.
		got, err := s.Check(k, x, nugget, CheckOptions{Rows: 60, Exact: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows != 60 || math.Abs(got.Loss-want) > 4*got.SE {
			t.Errorf("d = %d: a sample of %d rows: %v (se %v), want %v", c.d, got.Rows, got.Loss, got.SE, want)
		}
	}
}

// TestGreedySelect checks each step of the greedy selection against brute
// force: the candidate taken makes the conditional variance of the target,
// given those taken and it, the least of all candidates'.
func TestGreedySelect(t *testing.T) {
	const p, d, m, nugget = 40, 3, 8, 1e-4
	x := randomPoints(p+1, d, 5)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1.3}, Beta: 2}
	xs := make([][]float64, p)
	for i := range xs {
		xs[i] = x[i*d : i*d+d]
	}
	x0 := x[p*d:]
	var w selectWork
	taken := slices.Clone(w.greedySelect(k, xs, x0, nugget, m))
	if len(taken) != m {
		t.Fatalf("%d taken, want %d", len(taken), m)
	}
	var cw condWork
	condVar := func(set []int) float64 {
		ps := cw.points(len(set))
		for i, j := range set {
			ps[i] = xs[j]
		}
		v, ok := cw.solve(k, ps, x0, nugget, make([]float64, len(set)))
		if !ok {
			t.Fatal("not positive definite")
		}
		return v
	}
	for step := range m {
		best, bv := -1, math.Inf(1)
		for j := range p {
			if slices.Contains(taken[:step], j) {
				continue
			}
			if v := condVar(append(slices.Clone(taken[:step]), j)); v < bv-1e-12 {
				best, bv = j, v
			}
		}
		if taken[step] != best {
			t.Errorf("step %d took %d, want %d (variance %v against %v)", step, taken[step], best, condVar(append(slices.Clone(taken[:step]), taken[step])), bv)
		}
	}
}

// TestSelect checks Select: with no pool and no block it chooses
// NewStructure's nearest sets; with both, the block's rows take their
// nearest earlier points up to BlockM and the later rows m of their pool;
// and the check of a selection, which chooses the sampled rows' sets
// itself (checkSelection), agrees with the check of the structure Select
// makes.
func TestSelect(t *testing.T) {
	const n, d, nugget = 400, 3, 1e-4
	x, k := checkProblem(n, d, 1.5)
	base, err := NewStructure(x, n, d, Options{M: 1})
	if err != nil {
		t.Fatal(err)
	}
	near, err := NewStructure(x, n, d, Options{M: 6})
	if err != nil {
		t.Fatal(err)
	}
	got := base.Select(k, x, nugget, Selection{M: 6}, 2)
	for i := range n {
		if !slices.Equal(got.Nbr[i], near.Nbr[i]) {
			t.Fatalf("position %d: %v, want the nearest %v", i, got.Nbr[i], near.Nbr[i])
		}
	}
	sel := Selection{M: 5, Pool: 3, Block: 60, BlockM: 20}
	s := base.Select(k, x, nugget, sel, 2)
	wide, err := NewStructure(x, n, d, Options{M: 20})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewStructure(x, n, d, Options{M: 15})
	if err != nil {
		t.Fatal(err)
	}
	reg := s.regular()
	for q, i := range reg {
		switch {
		case q < sel.Block:
			if !slices.Equal(s.Nbr[i], wide.Nbr[i]) {
				t.Errorf("block position %d: %v, want %v", i, s.Nbr[i], wide.Nbr[i])
			}
		case len(s.Nbr[i]) != sel.M:
			t.Errorf("position %d: %d neighbours, want %d", i, len(s.Nbr[i]), sel.M)
		default:
			for _, j := range s.Nbr[i] {
				if !slices.Contains(pool.Nbr[i], j) {
					t.Errorf("position %d: neighbour %d is not among its %d nearest", i, j, 15)
				}
			}
		}
	}
	for _, opt := range []CheckOptions{{Rows: 50, Exact: 10}, {Rows: 397, Exact: 1}} {
		a, err := s.Check(k, x, nugget, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := base.checkSelection(k, x, nugget, sel, opt)
		if err != nil {
			t.Fatal(err)
		}
		if a.Loss != b.Loss || a.SE != b.SE || a.RespLoss != b.RespLoss {
			t.Errorf("%+v: the selection's check %+v, the structure's %+v", opt, b, a)
		}
	}
}

// TestAuto checks Auto's choice: the first set size of the ladder whose
// check (loss plus twice its standard error) is within the target, the
// checks before it not; the last of the ladder, not met, where none is;
// and the structure returned is Select's for the choice.
func TestAuto(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("the ladder to m = 32 takes 23 s under the race detector; -race -short leaves it to the plain run (TestAutoChoosesM runs Auto's threaded checks under -race)")
	}
	const n, d, nugget = 1500, 4, 1e-4
	x, k := checkProblem(n, d, 2.5)
	s, err := NewStructure(x, n, d, Options{M: 1})
	if err != nil {
		t.Fatal(err)
	}
	opt := AutoOptions{Ms: []int{1, 2, 4, 8, 16, 32}, Check: CheckOptions{Rows: 200}, Threads: 2}
	got, res, err := s.Auto(k, x, nugget, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Met {
		t.Fatalf("no set size within the target: %+v", res.Checks)
	}
	last := len(res.Checks) - 1
	if last == 0 {
		t.Fatalf("the first set size met the target: %+v; make the test harder", res.Checks)
	}
	for i, c := range res.Checks {
		within := c.Loss+2*c.SE <= DefaultTarget
		if within != (i == last) {
			t.Errorf("%+v: loss %v (se %v) against the target %v, and it is check %d of %d", res.Tried[i], c.Loss, c.SE, DefaultTarget, i+1, len(res.Checks))
		}
		// Each m's nearest sets, then its chosen ones.
		if want := AutoSelection(opt.Ms[i/2], []int{1, AutoPool}[i%2]); res.Tried[i] != want {
			t.Errorf("check %d: %+v, want %+v", i, res.Tried[i], want)
		}
	}
	if res.Selection != res.Tried[last] {
		t.Errorf("the selection %+v is not the last tried, %+v", res.Selection, res.Tried[last])
	}
	want := s.Select(k, x, nugget, res.Selection, 1)
	for i := range n {
		if !slices.Equal(got.Nbr[i], want.Nbr[i]) {
			t.Fatalf("position %d: %v, want Select's %v", i, got.Nbr[i], want.Nbr[i])
		}
	}
	opt.Target = 1e-9
	opt.Ms = []int{1, 2}
	_, res, err = s.Auto(k, x, nugget, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Met || len(res.Checks) != 4 || res.Selection != AutoSelection(2, AutoPool) {
		t.Errorf("an unreachable target: met %v, %d checks, %+v; want not met, 4, %+v", res.Met, len(res.Checks), res.Selection, AutoSelection(2, AutoPool))
	}
}

// TestCheckExactAndPoor checks the check's scale at both ends: it is
// (numerically) nothing where the sets lose nothing, every point
// conditioned on all before it (m = N - 1) or points spaced far apart
// beside the length scale (each independent of the rest, whatever its
// set), and far above gpc-kernel's warning threshold (DefaultTarget) on a
// constructed bad case: twelve features, a length scale long beside the
// points' spacing, two neighbours.
func TestCheckExactAndPoor(t *testing.T) {
	const nugget = 1e-4
	check := func(x []float64, n, d, m int, k *gp.Kernel) CheckResult {
		t.Helper()
		s, err := NewStructure(x, n, d, Options{M: m})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Check(k, x, nugget, CheckOptions{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Every earlier point: 2-D, the two-class tables' kernel.
	x, k := checkProblem(120, 2, 1)
	k.Beta = 10
	if r := check(x, 120, 2, 119, k); r.Loss > 1e-9 || r.RespLoss > 1e-9 {
		t.Errorf("m = N - 1: loss %v (w: %v), want 0", r.Loss, r.RespLoss)
	}
	// One feature, the points 10 length scales apart or more, one
	// neighbour.
	const n1 = 600
	x1 := make([]float64, n1)
	for i := range x1 {
		x1[i] = 10*float64(i) + math.Sin(float64(i))
	}
	k1 := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	if r := check(x1, n1, 1, 1, k1); r.Loss > 1e-9 || r.Worst > 1e-9 {
		t.Errorf("well separated points: loss %v (worst %v), want 0", r.Loss, r.Worst)
	}
	// Twelve features, long length scales, two neighbours.
	const n2, d2 = 1500, 12
	x2 := randomPoints(n2, d2, 9)
	k2 := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{4}, Beta: 10}
	r := check(x2, n2, d2, 2, k2)
	t.Logf("twelve features, m = 2: loss %.4g (se %.2g)", r.Loss, r.SE)
	if r.Loss-3*r.SE < 20*DefaultTarget {
		t.Errorf("twelve features, m = 2: loss %v (se %v), want far above %v", r.Loss, r.SE, DefaultTarget)
	}
	// More neighbours lose less there.
	if r30 := check(x2, n2, d2, 30, k2); !(r30.Loss < r.Loss/2) {
		t.Errorf("twelve features: m = 30 loses %v, m = 2 %v", r30.Loss, r.Loss)
	}
}

// TestAutoChoosesM checks --vecchia auto's choice of m with the default
// ladder and target: on an easy problem (the two-class tables' 2-D
// problem, RBF alpha 1, beta 10) the least m, 30, with nearest sets; on a
// harder one (three features, alpha 0.7: m = 30 loses about 1.5 nats; not
// under -race -short) a larger m, the first whose check is within the
// target. The checks sample 200 rows (500 by default) to keep the test
// short.
func TestAutoChoosesM(t *testing.T) {
	const nugget = 1e-4
	auto := func(x []float64, n, d int, k *gp.Kernel) AutoResult {
		t.Helper()
		s, err := NewStructure(x, n, d, Options{M: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, res, err := s.Auto(k, x, nugget, AutoOptions{Threads: 2, Check: CheckOptions{Rows: 200}})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range res.Checks {
			t.Logf("d = %d: %+v: loss %.4g (se %.2g)", d, res.Tried[i], c.Loss, c.SE)
		}
		return res
	}
	const n = 2000
	x := randomPoints(n, 2, 21)
	for i := range n {
		s := 0.75
		if i%2 == 1 {
			s = -0.75
		}
		x[2*i] += s
		x[2*i+1] += s
	}
	easy := auto(x, n, 2, &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10})
	if !easy.Met || easy.Selection != AutoSelection(DefaultLadder[0], 1) {
		t.Errorf("2-D: %+v (met %v), want %+v", easy.Selection, easy.Met, AutoSelection(DefaultLadder[0], 1))
	}
	if raceEnabled && testing.Short() {
		// The ladder's larger m took a minute of the race detector's
		// run; the easy problem runs the same threaded checks.
		return
	}
	hard := auto(randomPoints(n, 3, 22), n, 3, &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{0.7}, Beta: 10})
	if !hard.Met || hard.Selection.M <= DefaultLadder[0] {
		t.Errorf("three features: m = %d (met %v), want more than %d, met", hard.Selection.M, hard.Met, DefaultLadder[0])
	}
	for i, c := range hard.Checks[:len(hard.Checks)-1] {
		if c.Loss+2*c.SE <= DefaultTarget {
			t.Errorf("three features: %+v met the target (loss %v, se %v) but auto went on", hard.Tried[i], c.Loss, c.SE)
		}
	}
}
