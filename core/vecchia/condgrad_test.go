package vecchia

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core/gp"
)

// gradCase is a kernel of a derivative test: its kind, features and
// hyperparameters, on points of a structure with m neighbours.
type gradCase struct {
	name  string
	kind  gp.KernelKind
	d     int
	alpha []float64
	beta  float64
	bias  float64
}

// gradCases are the kernels gpc-fit fits (rbf, ard, the Matern kernels,
// with and without a bias, each at a short and a long length scale, and
// the linear kernel).
var gradCases = []gradCase{
	{"rbf/short", gp.KernelRBF, 2, []float64{0.4}, 2, 0},
	{"rbf/long", gp.KernelRBF, 2, []float64{3}, 30, 0},
	{"ard/3", gp.KernelARD, 3, []float64{0.7, 2, 5}, 4, 0},
	{"ard/3-long", gp.KernelARD, 3, []float64{4, 0.5, 20}, 0.5, 0},
	{"matern32", gp.KernelMatern32, 2, []float64{0.8}, 3, 0},
	{"matern32/long", gp.KernelMatern32, 2, []float64{5}, 50, 0},
	{"matern52", gp.KernelMatern52, 2, []float64{1.2}, 1, 0},
	{"matern52/bias", gp.KernelMatern52, 2, []float64{1.5}, 5, 0.7},
	{"rbf/bias", gp.KernelRBF, 2, []float64{1}, 10, 2},
	{"linear", gp.KernelLinear, 2, nil, 0.5, 0},
}

// gradData returns n points of d features (row 7 repeating row 3, so that
// the structure has a repeated point) and labels from a smooth function
// with a few flipped.
func gradData(n, d int, seed uint64) (x, y []float64) {
	r := rand.New(rand.NewPCG(seed, 37))
	x, y = make([]float64, n*d), make([]float64, n)
	for i := range n {
		s := 0.0
		for j := range d {
			v := 2 * r.NormFloat64()
			x[i*d+j] = v
			s += math.Sin(v * float64(j+1))
		}
		y[i] = 1
		if s+0.5*r.NormFloat64() < 0 {
			y[i] = -1
		}
	}
	copy(x[7*d:8*d], x[3*d:4*d])
	return x, y
}

// kernelAt returns c's kernel with its log-hyperparameters hs moved to
// theta.
func (c gradCase) kernelAt(theta []float64) (*gp.Kernel, []gp.Hyper) {
	k := &gp.Kernel{Kind: c.kind, Alpha: append([]float64(nil), c.alpha...), Beta: c.beta, Bias: c.bias}
	hs := k.Hypers()
	if theta != nil {
		for j, h := range hs {
			h.Set(k, math.Exp(theta[j]))
		}
	}
	return k, hs
}

// structure returns the structure of the n points x with m neighbours in
// the kernel's metric (ard: each feature over its length scale).
func (c gradCase) structure(t *testing.T, x []float64, n, m int) *Structure {
	xs := append([]float64(nil), x...)
	if c.kind == gp.KernelARD {
		for i := range xs {
			xs[i] /= c.alpha[i%c.d]
		}
	}
	s, err := NewStructure(xs, n, c.d, Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (c gradCase) theta0() []float64 {
	k, hs := c.kernelAt(nil)
	th := make([]float64, len(hs))
	for j, h := range hs {
		th[j] = math.Log(h.Get(k))
	}
	return th
}

// fdStep is the central differences' step in a log-hyperparameter: their
// truncation error, h^2 / 6 times the third derivative, is about 1e-9 relative, their rounding
// error eps |f| / h about 1e-11 relative.
const fdStep = 1e-4

// TestConditionalDerivs checks each conditional's derivatives in every
// log-hyperparameter against central differences of the conditionals.
func TestConditionalDerivs(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n, m := 60, 8
			x, _ := gradData(n, c.d, 1)
			s := c.structure(t, x, n, m)
			th := c.theta0()
			k, hs := c.kernelAt(th)
			cd, err := s.ConditionalDerivs(k, hs, x, DefaultNugget, 3)
			if err != nil {
				t.Fatal(err)
			}
			// The same bits from any thread count.
			cd1, err := s.ConditionalDerivs(k, hs, x, DefaultNugget, 1)
			if err != nil {
				t.Fatal(err)
			}
			for j := range hs {
				for q, v := range cd.DCoef[j] {
					if v != cd1.DCoef[j][q] {
						t.Fatalf("DCoef differs between 3 threads and 1")
					}
				}
			}
			for j := range hs {
				tp, tm := append([]float64(nil), th...), append([]float64(nil), th...)
				tp[j] += fdStep
				tm[j] -= fdStep
				kp, _ := c.kernelAt(tp)
				km, _ := c.kernelAt(tm)
				_, _, cp, vp, err := s.Conditionals(kp, x, DefaultNugget, 1)
				if err != nil {
					t.Fatal(err)
				}
				_, _, cm, vm, err := s.Conditionals(km, x, DefaultNugget, 1)
				if err != nil {
					t.Fatal(err)
				}
				// Each error relative to the derivative and, for a derivative
				// far smaller than the value it moves, to the rounding of
				// the differences (S's condition number, up to beta /
				// nugget = 5 10^5 here, times eps / fdStep: 1e-6 of the
				// value).
				worst := 0.0
				for q := range cp {
					fd := (cp[q] - cm[q]) / (2 * fdStep)
					worst = max(worst, math.Abs(fd-cd.DCoef[j][q])/(math.Abs(fd)+fdRound*(1+math.Abs(cp[q]))))
				}
				for i := range vp {
					fd := (vp[i] - vm[i]) / (2 * fdStep)
					worst = max(worst, math.Abs(fd-cd.DCondVar[j][i])/(math.Abs(fd)+fdRound*vp[i]))
				}
				if worst > derivTol {
					t.Errorf("hyperparameter %d: largest relative error %.3g against central differences", j, worst)
				}
			}
		})
	}
}

// derivTol is the relative error allowed between an analytic derivative
// and central differences (fdStep): well above their truncation and
// rounding errors (1e-8 and below), far below a wrong term's.
const derivTol = 1e-5

// fdRound is the scale, relative to the value differenced, below which a
// central difference of the conditionals is rounding (TestConditionalDerivs).
const fdRound = 1e-4

// TestPriorGrad checks the gradient of the Vecchia prior's log density of
// a path (Model.PriorAdjoint through Structure.AdjointGradTo) against
// central differences of Model.LogPrior, and AdjointGradTo against the
// contraction of ConditionalDerivs' explicit derivatives for an arbitrary
// adjoint, for several paths; and the weighted moments' gradient against
// the weighted mean of the paths' gradients.
func TestPriorGrad(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n, m := 80, 10
			x, y := gradData(n, c.d, 2)
			s := c.structure(t, x, n, m)
			th := c.theta0()
			k, hs := c.kernelAt(th)
			model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 3))
			path := func() []float64 {
				// A draw of the prior: x_k = B_k x_c + sqrt(D_k) e.
				v := make([]float64, n)
				for i := range n {
					for q := model.Start[i]; q < model.Start[i+1]; q++ {
						v[i] += model.Coef[q] * v[model.Nbr[q]]
					}
					v[i] += math.Sqrt(model.CondVar[i]) * r.NormFloat64()
				}
				return v
			}
			modelAt := func(th []float64) *Model {
				k, _ := c.kernelAt(th)
				mm, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
				if err != nil {
					t.Fatal(err)
				}
				return mm
			}
			mom := NewInnovationMoments(model)
			mean := make([]float64, len(hs))
			for p := range 3 {
				v := path()
				g := make([]float64, len(hs))
				if err := s.AdjointGradTo(g, k, hs, x, DefaultNugget, model.PriorAdjoint(v), 2); err != nil {
					t.Fatal(err)
				}
				for j := range hs {
					tp, tm := append([]float64(nil), th...), append([]float64(nil), th...)
					tp[j] += fdStep
					tm[j] -= fdStep
					fd := (modelAt(tp).LogPrior(v) - modelAt(tm).LogPrior(v)) / (2 * fdStep)
					if math.Abs(fd-g[j]) > derivTol*(1+math.Abs(fd)) {
						t.Errorf("path %d, hyperparameter %d: gradient %.10g, central differences %.10g", p, j, g[j], fd)
					}
				}
				wt := float64(p + 1)
				mom.Add(model, v, wt)
				for j := range hs {
					mean[j] += wt * g[j] / 6
				}
			}
			g := make([]float64, len(hs))
			if err := s.AdjointGradTo(g, k, hs, x, DefaultNugget, mom.PriorAdjoint(model), 2); err != nil {
				t.Fatal(err)
			}
			for j := range hs {
				if math.Abs(g[j]-mean[j]) > 1e-9*(1+math.Abs(mean[j])) {
					t.Errorf("moments' gradient %d: %.12g, the paths' weighted mean %.12g", j, g[j], mean[j])
				}
			}
			// An arbitrary adjoint against the explicit derivatives.
			adj := NewFactorAdjoint(model)
			for i := range adj.Diag {
				adj.Diag[i] = r.NormFloat64()
			}
			for q := range adj.Off {
				adj.Off[q] = r.NormFloat64()
			}
			cd, err := s.ConditionalDerivs(k, hs, x, DefaultNugget, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.AdjointGradTo(g, k, hs, x, DefaultNugget, adj, 3); err != nil {
				t.Fatal(err)
			}
			for j := range hs {
				want := 0.0
				for i := range n {
					v := model.CondVar[i]
					if v == 0 {
						continue
					}
					sd := math.Sqrt(v)
					dd := cd.DCondVar[j][i]
					want += adj.Diag[i] * (-dd / (2 * v * sd))
					for q := model.Start[i]; q < model.Start[i+1]; q++ {
						want += adj.Off[q] * (-cd.DCoef[j][q]/sd + model.Coef[q]*dd/(2*v*sd))
					}
				}
				if math.Abs(g[j]-want) > 1e-9*(1+math.Abs(want)) {
					t.Errorf("hyperparameter %d: AdjointGradTo %.12g, explicit %.12g", j, g[j], want)
				}
			}
		})
	}
}

// TestAdjointGradThreads checks that AdjointGradTo gives the same bits on
// 1, 2 and 5 threads, over several chunks of rows.
func TestAdjointGradThreads(t *testing.T) {
	c := gradCases[2]
	n := 3*gradChunk + 17
	x, y := gradData(n, c.d, 4)
	s, err := NewStructure(x, n, c.d, Options{M: 6})
	if err != nil {
		t.Fatal(err)
	}
	k, hs := c.kernelAt(nil)
	model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(i))
	}
	adj := model.PriorAdjoint(v)
	var ref []float64
	for _, th := range []int{1, 2, 5} {
		g := make([]float64, len(hs))
		if err := s.AdjointGradTo(g, k, hs, x, DefaultNugget, adj, th); err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = g
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(ref) {
			t.Errorf("%d threads: %v, 1 thread: %v", th, g, ref)
		}
	}
}
