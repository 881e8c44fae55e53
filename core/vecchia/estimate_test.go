package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// kSE is how many of its own standard errors an estimate may be from the
// exact value: with the fixed seeds below a correct estimator passes, and
// an error of a few standard errors (a wrong weight, a bias) fails.
const kSE = 4

// oneFactorModel is a Vecchia model whose rows all condition on row 0
// alone, x_k = b_k x_0 + sqrt(D_k) e_k, observed with noise s: its
// variables w = x + noise have a one-factor correlation, so that its box
// P(w_k >= 0 for label +1, <= 0 for -1) is an exact one-dimensional
// integral (oracle.OneFactorLogP). The rows listed in reps repeat row 0
// (repeated points: variance 0, coefficient 1). It returns the model and
// the one-factor loadings d of its variables.
func oneFactorModel(n int, seed uint64, reps []int) (*Model, []float64) {
	return oneFactorModelSmall(n, seed, reps, n)
}

// oneFactorModelSmall is oneFactorModel with the rows from small on
// nearly determined by row 0 (conditional variances 1e-6 to 1e-5), as a
// dense sample's finest points are: they fall after the proposal's dense
// block, in its incomplete factor.
func oneFactorModelSmall(n int, seed uint64, reps []int, small int) (*Model, []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	m := &Model{N: n, Start: []int{0}, Noise: 0.8, Lower: make([]float64, n), Upper: make([]float64, n)}
	d0 := 2.0 // Var(x_0)
	d := make([]float64, n)
	b := make([]float64, n)
	cv := make([]float64, n)
	for k := range n {
		y := 1.0
		if r.IntN(2) == 0 {
			y = -1
		}
		if y > 0 {
			m.Lower[k], m.Upper[k] = 0, math.Inf(1)
		} else {
			m.Lower[k], m.Upper[k] = math.Inf(-1), 0
		}
		switch {
		case k == 0:
			b[k], cv[k] = 1, d0
			m.CondVar = append(m.CondVar, d0)
		case slices.Contains(reps, k):
			b[k] = 1
			m.Nbr = append(m.Nbr, 0)
			m.Coef = append(m.Coef, 1)
			m.CondVar = append(m.CondVar, 0)
		default:
			b[k], cv[k] = 0.3+r.Float64(), 0.2+r.Float64()
			if k >= small {
				cv[k] = 1e-6 + 9e-6*r.Float64()
			}
			m.Nbr = append(m.Nbr, 0)
			m.Coef = append(m.Coef, b[k])
			m.CondVar = append(m.CondVar, cv[k])
		}
		m.Start = append(m.Start, len(m.Nbr))
		// Var(w_k): the factor's part, the row's own (not a repeat's:
		// its latent value is row 0's) and the noise.
		v := b[k]*b[k]*d0 + m.Noise
		if k > 0 && m.CondVar[k] > 0 {
			v += cv[k]
		}
		d[k] = y * b[k] * math.Sqrt(d0) / math.Sqrt(v)
	}
	return m, d
}

func TestEstimateOneFactor(t *testing.T) {
	for _, c := range []struct {
		name         string
		n, small     int
		reps         []int
		wantLateRows bool
		correct      bool // the block's marginal corrected (correctMin 0)
	}{{"n=3", 3, 3, nil, false, false}, {"n=40", 40, 40, nil, false, false}, {"n=300", 300, 300, nil, false, false},
		{"repeats", 60, 60, []int{1, 2}, false, false}, {"late rows", 400, 50, []int{60, 300}, true, false},
		{"late rows, block corrected", 400, 50, []int{60, 300}, true, true}} {
		t.Run(c.name, func(t *testing.T) {
			defer func(v float64) { correctMin = v }(correctMin)
			if c.correct {
				correctMin = 0
			}
			m, d := oneFactorModelSmall(c.n, 1, c.reps, c.small)
			exact := oracle.OneFactorLogP(d)
			p, err := Prepare(context.Background(), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if late := p.Block < m.N; late != c.wantLateRows || p.BlockCorrected != c.correct {
				t.Fatalf("the dense block holds %d of %d rows, corrected %v", p.Block, m.N, p.BlockCorrected)
			}
			res, err := Estimate(context.Background(), p, core.Config{Samples: 4000, Seed: 3}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e := res.LogP - exact; !(math.Abs(e) <= kSE*res.SE) {
				t.Errorf("log P %.8g, exact %.8g: error %.3g is %.1f standard errors (SE %.3g)", res.LogP, exact, e, e/res.SE, res.SE)
			}
		})
	}
}

// TestEstimateBox3 checks two-sided and one-sided bounds on a chain of
// three variables against the trivariate normal's quadrature.
func TestEstimateBox3(t *testing.T) {
	m := &Model{N: 3, Start: []int{0, 0, 1, 3}, Nbr: []int32{0, 0, 1}, Coef: []float64{0.8, -0.4, 0.9},
		CondVar: []float64{1.5, 0.7, 0.5}, Noise: 0.6,
		Lower: []float64{-0.5, 0.2, math.Inf(-1)}, Upper: []float64{1, math.Inf(1), 0.3}}
	// Cov(x) from x = L e: rows of L.
	l := [3][3]float64{{math.Sqrt(1.5)}, {0.8 * math.Sqrt(1.5), math.Sqrt(0.7)}}
	for c := range 2 {
		l[2][c] = -0.4*l[0][c] + 0.9*l[1][c]
	}
	l[2][2] = math.Sqrt(0.5)
	var s [9]float64
	for i := range 3 {
		for j := range 3 {
			for c := range 3 {
				s[i*3+j] += l[i][c] * l[j][c]
			}
		}
		s[i*3+i] += m.Noise
	}
	exact := oracle.LogBox3([3]float64{}, s, [3]float64{-0.5, 0.2, math.Inf(-1)}, [3]float64{1, math.Inf(1), 0.3})
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Estimate(context.Background(), p, core.Config{Samples: 4000, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.LogP - exact; !(math.Abs(e) <= kSE*res.SE) {
		t.Errorf("log P %.8g, exact %.8g: error %.3g is %.1f standard errors", res.LogP, exact, e, e/res.SE)
	}
}

// TestPosteriorsOneFactor checks the test posteriors of a one-factor
// model, P(w* >= 0 | box) for test rows conditioned on row 0, against the
// ratio of two exact orthant probabilities.
func TestPosteriorsOneFactor(t *testing.T) {
	m, d := oneFactorModel(80, 2, nil)
	tb := []float64{0.2, -1.1, 2.5}
	tv := []float64{0.3, 1.2, 0.05}
	m.T, m.TStart = len(tb), []int{0}
	for j := range tb {
		m.TNbr = append(m.TNbr, 0)
		m.TCoef = append(m.TCoef, tb[j])
		m.TCondVar = append(m.TCondVar, tv[j])
		m.TStart = append(m.TStart, len(m.TNbr))
	}
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var logZ, pg []float64
	cfg := core.Config{Samples: 4000, Seed: 5}
	res, err := Estimate(context.Background(), p, cfg, func(g int, out core.GroupResult, q []float64) error {
		logZ = append(logZ, out.LogZ)
		pg = append(pg, q...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sizes = core.GroupSizes(res.Samples, res.Groups)
	post := make([]core.Posterior, m.T)
	if err := core.CombinePosteriors(post, sizes, logZ, pg); err != nil {
		t.Fatal(err)
	}
	logP := oracle.OneFactorLogP(d)
	for j := range tb {
		dj := tb[j] * math.Sqrt(2) / math.Sqrt(tb[j]*tb[j]*2+tv[j]+m.Noise)
		exact := math.Exp(oracle.OneFactorLogP(append(slices.Clone(d), dj)) - logP)
		if e := post[j].P - exact; !(math.Abs(e) <= kSE*post[j].SE+1e-12) {
			t.Errorf("test row %d: p %.6g, exact %.6g: error %.3g is %.1f standard errors", j, post[j].P, exact, e, e/post[j].SE)
		}
	}
}

// classifier2D is the Vecchia classifier of the large-N issue's problem
// (two 2-D Gaussian classes, RBF alpha 1, beta 10), n points.
func classifier2D(t testing.TB, n, neighbours int) *Model {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 0x1a26e))
	x, y := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		s := 1.0
		if i%2 == 1 {
			s = -1
		}
		x[2*i], x[2*i+1], y[i] = s*0.75+r.NormFloat64(), s*0.75+r.NormFloat64(), s
	}
	s, err := NewStructure(x, n, 2, Options{M: neighbours})
	if err != nil {
		t.Fatal(err)
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	m, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestThreadsAndShards checks that the estimate does not depend on the
// thread count, and that groups run in ranges (shards) give what the whole
// run gives, bit for bit.
func TestThreadsAndShards(t *testing.T) {
	m := classifier2D(t, 300, 10)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Samples: 800, Seed: 9, Threads: 1}
	one, err := Estimate(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Threads = 3
	three, err := Estimate(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(one.LogP) != math.Float64bits(three.LogP) || math.Float64bits(one.SE) != math.Float64bits(three.SE) {
		t.Errorf("threads 1: %v (%v), threads 3: %v (%v)", one.LogP, one.SE, three.LogP, three.SE)
	}
	var outs []core.GroupResult
	for _, r := range [][2]int{{0, 3}, {3, 4}, {4, -1}} {
		_, o, err := core.EstimateGroups(context.Background(), p, cfg, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o...)
	}
	merged := core.Summarize(one.Samples, outs)
	if math.Float64bits(merged.LogP) != math.Float64bits(one.LogP) {
		t.Errorf("groups in three ranges: %v, in one run: %v", merged.LogP, one.LogP)
	}
}

// TestAgainstImplied checks the classifier's estimate against a long run
// of core's dense estimator on the covariance the Vecchia model implies,
// within both estimates' standard errors (neither is exact: this checks
// the sparse estimator's structure, the one-factor tests its arithmetic).
func TestAgainstImplied(t *testing.T) {
	if testing.Short() {
		t.Skip("a dense estimate of 10^5 particles")
	}
	m := classifier2D(t, 200, 10)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Estimate(context.Background(), p, core.Config{Samples: 10000, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cov, _, _ := m.Implied()
	box := core.Box{N: m.N, Cov: cov, Lower: m.Lower, Upper: m.Upper}
	cfg := core.Config{Samples: 100000, Seed: 2}
	f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Method = cand.Method
	dense, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Hypot(res.SE, dense.SE)
	if e := res.LogP - dense.LogP; !(math.Abs(e) <= kSE*se) {
		t.Errorf("Vecchia estimator %.6g (SE %.2g), dense on the implied covariance %.6g (SE %.2g): %.1f combined standard errors apart", res.LogP, res.SE, dense.LogP, dense.SE, e/se)
	}
}
