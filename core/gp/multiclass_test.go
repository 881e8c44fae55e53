package gp

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// seK is how many standard errors a Monte Carlo estimate may be from its
// exact value: fixed seeds make the tests deterministic, and 4 SE leaves
// them far from the edge.
const seK = 4

// estimate runs the default estimator on box, keeping the cloud.
func estimate(t *testing.T, box core.Box, samples int, seed uint64) (*core.Factor, core.Result) {
	return estimateWith(t, core.MethodSMC, box, samples, seed)
}

// estimateWith runs method (MethodSMC or MethodEP) on box, keeping the
// cloud.
func estimateWith(t *testing.T, method core.Method, box core.Box, samples int, seed uint64) (*core.Factor, core.Result) {
	t.Helper()
	ord := core.Ordering{Kind: core.OrderGiven}
	f, err := core.NewFactor(box, ord, 0)
	if method == core.MethodEP {
		f, err = core.PrepareEP(box, ord, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, core.Config{Method: method, Samples: samples, Groups: 8, Seed: seed, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

// randomMulticlass returns n points of d features in c classes, each class
// present, with one shared RBF kernel.
func randomMulticlass(n, d, c int, seed uint64) *Multiclass {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := &Multiclass{X: make([]float64, n*d), D: d, Y: make([]int, n), C: c,
		Kernels: []*Kernel{{Kind: KernelRBF, Alpha: []float64{1.5}, Beta: 2}}}
	for i := range n {
		m.Y[i] = i % c
		for j := range d {
			m.X[i*d+j] = rng.NormFloat64() + float64(m.Y[i])
		}
	}
	return m
}

// With two classes the differences are the binary classifier's variables
// times sqrt(2): the covariance is exactly twice ClassifierCov's (labels +1
// for class 1, -1 for class 0), and the class probabilities are the binary
// posteriors.
func TestMulticlassTwoClasses(t *testing.T) {
	t.Parallel()
	m := randomMulticlass(7, 2, 2, 1)
	y := make([]float64, len(m.Y))
	for i, c := range m.Y {
		y[i] = float64(2*c - 1)
	}
	r := ClassifierCov(m.Kernels[0], m.X, m.D, y)
	got := m.Cov()
	for i, v := range r {
		if got[i] != 2*v {
			t.Fatalf("Cov[%d] = %v, want 2 x %v", i, got[i], v)
		}
	}
	xs := []float64{0.3, 0.9}
	rows, vars := make([]float64, 2*m.Vars()), make([]float64, 2)
	m.TestRows(rows, vars, xs)
	bin := make([]float64, m.Vars())
	s := ClassifierTestRow(bin, m.Kernels[0], m.X, m.D, y, xs)
	for j := range bin {
		if d := rows[m.Vars()+j] - rows[j]; d != 2*bin[j] {
			t.Fatalf("test row difference %d = %v, want 2 x %v", j, d, bin[j])
		}
	}
	if vars[0]+vars[1] != 2*s {
		t.Fatalf("variances %v, want two of %v", vars, s)
	}
	f, res := estimate(t, m.Box(), 4000, 2)
	post := make([]core.Posterior, 2)
	if err := core.PredictClasses(post, f, res.Cloud, 2, rows, vars, core.PredictOptions{}); err != nil {
		t.Fatal(err)
	}
	// The binary posterior of u*_1 - u*_0 on the same cloud: the same
	// quantities, computed in another order.
	diff := make([]float64, m.Vars())
	for j := range diff {
		diff[j] = rows[m.Vars()+j] - rows[j]
	}
	want := make([]core.Posterior, 1)
	if err := core.Predict(want, f, res.Cloud, diff, []float64{vars[0] + vars[1]}); err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12 // rounding of two orders of the same sums
	if math.Abs(post[1].P-want[0].P) > tol || math.Abs(post[0].P-(1-want[0].P)) > tol {
		t.Fatalf("class probabilities %v, binary posterior %v", post, want[0])
	}
}

// One training point: its C - 1 differences have covariance
// s_y + [k = l] s_k (s_c = 1 + k_c(x, x)), whose orthant probability has a
// closed form for C = 3 and 4.
func TestMulticlassOnePoint(t *testing.T) {
	t.Parallel()
	x := []float64{0.5}
	ks := []*Kernel{
		{Kind: KernelRBF, Alpha: []float64{1}, Beta: 3},
		{Kind: KernelRBF, Alpha: []float64{1}, Beta: 0.5},
		{Kind: KernelRBF, Alpha: []float64{1}, Beta: 8},
		{Kind: KernelRBF, Alpha: []float64{1}, Beta: 1.5},
	}
	for _, c := range []int{3, 4} {
		m := &Multiclass{X: x, D: 1, Y: []int{1}, C: c, Kernels: ks[:c]}
		s := func(cl int) float64 { return 1 + ks[cl].Beta }
		cov := m.Cov()
		q := c - 1
		for a := range q {
			for b := range q {
				want := s(1)
				if a == b {
					want += s(m.Other(0, a))
				}
				if cov[a*q+b] != want {
					t.Fatalf("C = %d: Cov[%d][%d] = %v, want %v", c, a, b, cov[a*q+b], want)
				}
			}
		}
		rho := func(a, b int) float64 { return cov[a*q+b] / math.Sqrt(cov[a*q+a]*cov[b*q+b]) }
		var exact float64
		if c == 3 {
			exact = 0.25 + math.Asin(rho(0, 1))/(2*math.Pi)
		} else {
			exact = 0.125 + (math.Asin(rho(0, 1))+math.Asin(rho(0, 2))+math.Asin(rho(1, 2)))/(4*math.Pi)
		}
		_, res := estimate(t, m.Box(), 8000, 3)
		if d := math.Exp(res.LogP) - exact; math.Abs(d) > seK*res.SE*exact {
			t.Errorf("C = %d: P = %v +- %v, exact %v", c, math.Exp(res.LogP), res.SE*exact, exact)
		}
	}
}

// classProbsOracle returns the exact class probabilities of a test point
// for a model of one training point and three classes, by quadrature over
// the two training differences w = L z (Simpson's rule in z over the
// orthant, 8 standard deviations out) of BivariateUpper's conditional
// class probabilities.
func classProbsOracle(m *Multiclass, rows, vars []float64) [3]float64 {
	cov := m.Cov()
	l11 := math.Sqrt(cov[0])
	l21 := cov[2] / l11
	l22 := math.Sqrt(cov[3] - l21*l21)
	// m_c(w) = r_c' R^-1 w = a_c' z with a_c = L^-1 r_c.
	var a [3][2]float64
	for c := range 3 {
		a[c][0] = rows[2*c] / l11
		a[c][1] = (rows[2*c+1] - l21*a[c][0]) / l22
	}
	var v [3][3]float64
	for i := range 3 {
		for j := range 3 {
			v[i][j] = -(a[i][0]*a[j][0] + a[i][1]*a[j][1])
		}
		v[i][i] += vars[i]
	}
	probs := func(mu [3]float64) [3]float64 {
		var p [3]float64
		for k := range 3 {
			l1, l2 := (k+1)%3, (k+2)%3
			s1 := math.Sqrt(v[k][k] + v[l1][l1] - 2*v[k][l1])
			s2 := math.Sqrt(v[k][k] + v[l2][l2] - 2*v[k][l2])
			rho := (v[k][k] - v[k][l2] - v[l1][k] + v[l1][l2]) / (s1 * s2)
			p[k] = core.BivariateUpper(-(mu[k]-mu[l1])/s1, -(mu[k]-mu[l2])/s2, rho)
		}
		return p
	}
	const steps, width = 400, 8.0
	simpson := func(i int) float64 {
		switch {
		case i == 0 || i == steps:
			return 1
		case i%2 == 1:
			return 4
		}
		return 2
	}
	phi := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	var num [3]float64
	den := 0.0
	h1 := width / steps
	for i := 0; i <= steps; i++ {
		z1 := float64(i) * h1
		lo := math.Max(-l21*z1/l22, -width) // w2 = l21 z1 + l22 z2 >= 0
		h2 := (width - lo) / steps
		for j := 0; j <= steps; j++ {
			z2 := lo + float64(j)*h2
			wt := simpson(i) * simpson(j) * h1 * h2 / 9 * phi(z1) * phi(z2)
			var mu [3]float64
			for c := range 3 {
				mu[c] = a[c][0]*z1 + a[c][1]*z2
			}
			p := probs(mu)
			for c := range 3 {
				num[c] += wt * p[c]
			}
			den += wt
		}
	}
	for c := range 3 {
		num[c] /= den
	}
	return num
}

// A test point's class probabilities for one training point and three
// classes, against quadrature.
func TestPredictClassesOnePoint(t *testing.T) {
	t.Parallel()
	ks := []*Kernel{
		{Kind: KernelRBF, Alpha: []float64{1}, Beta: 3},
		{Kind: KernelRBF, Alpha: []float64{2}, Beta: 1},
		{Kind: KernelRBF, Alpha: []float64{0.7}, Beta: 6},
	}
	m := &Multiclass{X: []float64{0.2}, D: 1, Y: []int{2}, C: 3, Kernels: ks}
	for _, tc := range []struct {
		method core.Method
		xs     float64
	}{{core.MethodSMC, 0.4}, {core.MethodSMC, -1}, {core.MethodEP, 0.4}} {
		f, res := estimateWith(t, tc.method, m.Box(), 16000, 4)
		xs := tc.xs
		rows, vars := make([]float64, 3*m.Vars()), make([]float64, 3)
		m.TestRows(rows, vars, []float64{xs})
		post := make([]core.Posterior, 3)
		if err := core.PredictClasses(post, f, res.Cloud, 3, rows, vars, core.PredictOptions{}); err != nil {
			t.Fatal(err)
		}
		want := classProbsOracle(m, rows, vars)
		t.Logf("%v, x* = %v: %v, exact %v", tc.method, xs, post, want)
		sum := 0.0
		for c, p := range post {
			sum += p.P
			if math.Abs(p.P-want[c]) > seK*p.SE {
				t.Errorf("x* = %v: class %d: %v +- %v, exact %v", xs, c, p.P, p.SE, want[c])
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("x* = %v: the class probabilities sum to %v", xs, sum)
		}
	}
}

// A test point far from every training point (its kernel row is zero, to
// the precision of exp) has the prior's class probabilities, 1/C with one
// shared kernel; for C > 3 they are counted over draws, which must not
// depend on the thread count.
func TestPredictClassesFarPoint(t *testing.T) {
	t.Parallel()
	for _, c := range []int{3, 5} {
		m := randomMulticlass(2*c, 2, c, uint64(c))
		f, res := estimate(t, m.Box(), 4000, 5)
		rows, vars := make([]float64, c*m.Vars()), make([]float64, c)
		m.TestRows(rows, vars, []float64{100, -100})
		post := make([]core.Posterior, c)
		if err := core.PredictClasses(post, f, res.Cloud, c, rows, vars, core.PredictOptions{Threads: 1, Seed: 7}); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for cl, p := range post {
			sum += p.P
			tol := seK * p.SE
			if c == 3 {
				tol = 1e-12 // exact: every particle gives 1/3
			}
			if math.Abs(p.P-1/float64(c)) > tol {
				t.Errorf("C = %d: class %d: %v +- %v, want 1/%d", c, cl, p.P, p.SE, c)
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("C = %d: the class probabilities sum to %v", c, sum)
		}
		again := make([]core.Posterior, c)
		if err := core.PredictClasses(again, f, res.Cloud, c, rows, vars, core.PredictOptions{Threads: 4, Seed: 7}); err != nil {
			t.Fatal(err)
		}
		for cl := range post {
			if post[cl] != again[cl] {
				t.Errorf("C = %d: class %d: %v with 1 thread, %v with 4", c, cl, post[cl], again[cl])
			}
		}
	}
}

func TestMulticlassValidate(t *testing.T) {
	t.Parallel()
	k := []*Kernel{{Kind: KernelLinear, Beta: 1}}
	for _, tc := range []struct {
		m    Multiclass
		want string
	}{
		{Multiclass{X: []float64{1, 2}, D: 1, Y: []int{0, 0}, C: 1, Kernels: k}, "needs at least 2"},
		{Multiclass{X: []float64{1, 2}, D: 1, Y: []int{0, 1}, C: 2, Kernels: append(k, k[0], k[0])}, "3 kernels for 2 classes"},
		{Multiclass{X: []float64{1, 2}, D: 1, Y: []int{0, 3}, C: 3, Kernels: k}, "not in 0..2"},
		{Multiclass{X: []float64{1}, D: 1, Y: []int{0, 1}, C: 2, Kernels: k}, "feature values"},
		{Multiclass{X: []float64{1, 2}, D: 1, Y: []int{0, 1}, C: MaxClasses + 1, Kernels: k}, "at most"},
	} {
		err := tc.m.Validate()
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.m, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestMulticlassKernelGrad checks Multiclass.KernelGradTo against the
// contraction 1/2 tr(A dR) with dR by central differences of Cov in each
// log-hyperparameter, for random symmetric A: one kernel shared by the
// classes (RBF with a bias; ARD) and one per class, C = 3 and 4.
func TestMulticlassKernelGrad(t *testing.T) {
	t.Parallel()
	const h = 1e-5
	for _, tc := range []struct {
		name    string
		c       int
		kernels func(c int) []*Kernel
	}{
		{"shared rbf+bias", 3, func(int) []*Kernel { return []*Kernel{{Kind: KernelRBF, Alpha: []float64{1.5}, Beta: 2, Bias: 0.3}} }},
		{"shared ard", 4, func(int) []*Kernel { return []*Kernel{{Kind: KernelARD, Alpha: []float64{1, 2}, Beta: 3}} }},
		{"per class", 3, func(c int) []*Kernel {
			ks := make([]*Kernel, c)
			for cl := range ks {
				ks[cl] = &Kernel{Kind: KernelMatern52, Alpha: []float64{1 + float64(cl)}, Beta: 1 + 0.5*float64(cl)}
			}
			return ks
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := randomMulticlass(7, 2, tc.c, 3)
			m.Kernels = tc.kernels(tc.c)
			var hs []Hyper
			for cl, k := range m.Kernels {
				for _, hp := range k.Hypers() {
					hp.Class = cl
					hs = append(hs, hp)
				}
			}
			nv := m.Vars()
			rng := rand.New(rand.NewPCG(4, 4))
			a := make([][]float64, 2)
			for g := range a {
				a[g] = make([]float64, nv*nv)
				for i := range nv {
					for j := range i + 1 {
						v := rng.NormFloat64()
						a[g][i*nv+j], a[g][j*nv+i] = v, v
					}
				}
			}
			got := make([]float64, len(a)*len(hs))
			m.KernelGradTo(got, m.Kernels, hs, a)
			for p, hp := range hs {
				cov := func(step float64) []float64 {
					mk := *m
					mk.Kernels = make([]*Kernel, len(m.Kernels))
					for cl, k := range m.Kernels {
						kc := *k
						kc.Alpha = append([]float64(nil), k.Alpha...)
						mk.Kernels[cl] = &kc
					}
					k := mk.Kernels[hp.Class]
					hp.Set(k, hp.Get(k)*math.Exp(step))
					return mk.Cov()
				}
				up, down := cov(h), cov(-h)
				for g, ag := range a {
					want := 0.0
					for i := range ag {
						want += ag[i] * (up[i] - down[i]) / (2 * h) / 2
					}
					if v := got[g*len(hs)+p]; math.Abs(v-want) > 1e-6*(1+math.Abs(want)) {
						t.Errorf("hyperparameter %d (%+v), group %d: %v, central differences %v", p, hp, g, v, want)
					}
				}
			}
		})
	}
}
