package core_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// scoreCase is a box whose log P is known exactly as a function of its
// covariance, so that d log P / dR has an exact value (by central
// differences of the exact log P).
type scoreCase struct {
	name  string
	n     int
	cov   []float64
	lower []float64
	upper []float64
	mean  []float64
	logP  func(cov []float64) float64
}

// fdStep is the central-difference step on the exact log P; its truncation
// error is O(h^2 |d^3 log P|) ~ 1e-10 and its rounding error
// ~ 1e-16/h ~ 1e-11 for the oracles used here (exact to ~1e-13).
const fdStep = 1e-5

// exactScoreTol absorbs the central difference's error on the exact oracle.
const exactScoreTol = 1e-6

func scoreCases() []scoreCase {
	var cs []scoreCase
	for _, c := range []struct{ s1, s2, c float64 }{{1, 1, 0.3}, {2, 0.5, -0.8}, {1, 3, 1.5}} {
		cs = append(cs, scoreCase{name: fmt.Sprintf("d=2/%v", c), n: 2,
			cov: []float64{c.s1, c.c, c.c, c.s2},
			logP: func(r []float64) float64 {
				return math.Log(oracle.Orthant2(r[1] / math.Sqrt(r[0]*r[3])))
			}})
	}
	cs = append(cs, scoreCase{name: "d=3", n: 3,
		cov: []float64{1, 0.5, -0.2, 0.5, 2, 0.3, -0.2, 0.3, 1.5},
		logP: func(r []float64) float64 {
			s := func(i, j int) float64 { return r[i*3+j] / math.Sqrt(r[i*4]*r[j*4]) }
			return math.Log(oracle.Orthant3(s(0, 1), s(0, 2), s(1, 2)))
		}})
	cs = append(cs, scoreCase{name: "d=2/box+mean", n: 2,
		cov: []float64{1.5, 0.6, 0.6, 1}, lower: []float64{-0.5, 0}, upper: []float64{1, math.Inf(1)},
		mean: []float64{0.3, -0.7},
		logP: func(r []float64) float64 {
			return oracle.LogBox2([2]float64{0.3, -0.7}, r[0], r[1], r[3], [2]float64{-0.5, 0}, [2]float64{1, math.Inf(1)})
		}})
	// The one-factor oracle, N = 20: the direction moves the loadings
	// (below), as log P is known only on that family.
	return cs
}

// checkScore estimates the Score of box with method and checks 1/2 tr(A dR)
// against want for the direction dR.
func checkScore(t *testing.T, sc *core.Score, dR []float64, want float64) {
	t.Helper()
	got, se := sc.Contract(dR)
	if !(math.Abs(got-want) <= kSE*se+exactScoreTol) {
		t.Errorf("d log P: got %.6g (se %.2g), exact %.6g: off by %.1f se", got, se, want, math.Abs(got-want)/se)
	}
	if !(se > 0) {
		t.Errorf("se %v: not positive", se)
	}
}

func newScore(t *testing.T, box core.Box, method core.Method, samples int) *core.Score {
	t.Helper()
	return newScoreOrder(t, box, core.Candidate{Method: method, Order: core.OrderGiven}, samples)
}

func newScoreOrder(t *testing.T, box core.Box, cand core.Candidate, samples int) *core.Score {
	t.Helper()
	method := cand.Method
	f, err := core.Prepare(box, cand, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, core.Config{Method: method, Samples: samples, Seed: 7, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := core.NewScore(f, res.Cloud, method)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestScoreExact checks d log P / dR against the closed forms (d <= 3,
// Sheppard's and its trivariate extension; a box with a mean by
// quadrature), in every direction of a unit entry pair.
func TestScoreExact(t *testing.T) {
	for _, method := range []core.Method{core.MethodSMC, core.MethodMET, core.MethodEP} {
		for _, c := range scoreCases() {
			t.Run(method.String()+"/"+c.name, func(t *testing.T) {
				box := core.Box{N: c.n, Cov: c.cov, Lower: c.lower, Upper: c.upper, Mean: c.mean}
				sc := newScore(t, box, method, 20000)
				for i := range c.n {
					for j := i; j < c.n; j++ {
						dR := make([]float64, c.n*c.n)
						dR[i*c.n+j], dR[j*c.n+i] = 1, 1
						up := append([]float64(nil), c.cov...)
						dn := append([]float64(nil), c.cov...)
						for k, v := range dR {
							up[k] += v * fdStep / 2
							dn[k] -= v * fdStep / 2
						}
						want := (c.logP(up) - c.logP(dn)) / fdStep
						checkScore(t, sc, dR, want)
					}
				}
			})
		}
	}
}

// TestScoreOneFactor checks the gradient with respect to the loadings of a
// one-factor covariance R = d d' + diag(1 - d^2) (the paper's Experiment 1,
// N = 20): dR/dd_k has entries d_j in row and column k, zero diagonal.
func TestScoreOneFactor(t *testing.T) {
	d := uniformLoadings(20, 3)
	for _, cand := range []core.Candidate{{Method: core.MethodSMC, Order: core.OrderGreedy},
		{Method: core.MethodMET, Order: core.OrderSharp}, {Method: core.MethodEP, Order: core.OrderGreedy}} {
		t.Run(cand.String(), func(t *testing.T) { checkOneFactor(t, d, cand) })
	}
}

func checkOneFactor(t *testing.T, d []float64, cand core.Candidate) {
	n := len(d)
	sc := newScoreOrder(t, core.Box{N: n, Cov: oracle.OneFactor(d)}, cand, 20000)
	for _, k := range []int{0, 7, 19} {
		dR := make([]float64, n*n)
		for j := range n {
			if j != k {
				dR[k*n+j], dR[j*n+k] = d[j], d[j]
			}
		}
		up := append([]float64(nil), d...)
		dn := append([]float64(nil), d...)
		up[k] += fdStep / 2
		dn[k] -= fdStep / 2
		want := (oracle.OneFactorLogP(up) - oracle.OneFactorLogP(dn)) / fdStep
		checkScore(t, sc, dR, want)
	}
}

// TestScoreMethods checks that methods without weights are refused.
func TestScoreMethods(t *testing.T) {
	box := core.Box{N: 2, Cov: []float64{1, 0.3, 0.3, 1}}
	f, err := core.NewFactor(box, core.Ordering{Kind: core.OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, core.Config{Method: core.MethodPaperHard, Samples: 100, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.NewScore(f, res.Cloud, core.MethodPaperHard); !errors.Is(err, core.ErrScoreMethod) {
		t.Errorf("MethodPaperHard: got %v, want ErrScoreMethod", err)
	}
}

// TestEPEvidence checks EP's log evidence where it is exact (independent
// variables: 2^-N whatever the variances; d = 1 boxes), close to the exact
// value on a correlated case, and its gradient against central differences
// of the evidence itself.
func TestEPEvidence(t *testing.T) {
	const epTol = 1e-10
	ind := []float64{2, 0, 0, 0, 0.5, 0, 0, 0, 1}
	e, err := core.NewEPTol(core.Box{N: 3, Cov: ind}, 0, epTol)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.LogEvidence(); math.Abs(got-3*math.Log(0.5)) > 1e-12 {
		t.Errorf("independent: log Z_EP %v, want %v", got, 3*math.Log(0.5))
	}
	box := core.Box{N: 1, Cov: []float64{2}, Lower: []float64{-1}, Upper: []float64{0.5}, Mean: []float64{0.2}}
	e, err = core.NewEPTol(box, 0, epTol)
	if err != nil {
		t.Fatal(err)
	}
	s2 := math.Sqrt(2)
	if got, want := e.LogEvidence(), core.LogPhiDiff((-1-0.2)/s2, (0.5-0.2)/s2); math.Abs(got-want) > 1e-12 {
		t.Errorf("d=1 box: log Z_EP %v, want %v", got, want)
	}
	for _, c := range scoreCases() {
		box := core.Box{N: c.n, Cov: c.cov, Lower: c.lower, Upper: c.upper, Mean: c.mean}
		e, err := core.NewEPTol(box, 0, epTol)
		if err != nil {
			t.Fatal(err)
		}
		// EP is an approximation: within 0.05 nats on these small cases.
		if got, want := e.LogEvidence(), c.logP(c.cov); math.Abs(got-want) > 0.05 {
			t.Errorf("%s: log Z_EP %v, exact %v", c.name, got, want)
		}
		sc, err := e.Score()
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.n {
			for j := i; j < c.n; j++ {
				dR := make([]float64, c.n*c.n)
				dR[i*c.n+j], dR[j*c.n+i] = 1, 1
				ev := func(sign float64) float64 {
					cov := append([]float64(nil), c.cov...)
					for k, v := range dR {
						cov[k] += sign * v * fdStep / 2
					}
					b := box
					b.Cov = cov
					e, err := core.NewEPTol(b, 0, epTol)
					if err != nil {
						t.Fatal(err)
					}
					return e.LogEvidence()
				}
				want := (ev(1) - ev(-1)) / fdStep
				if got, _ := sc.Contract(dR); math.Abs(got-want) > exactScoreTol {
					t.Errorf("%s: EP gradient (%d,%d) %.8g, central difference %.8g", c.name, i, j, got, want)
				}
			}
		}
	}
}

// BenchmarkScore measures the gradient's cost on a kept cloud beside the
// estimate's: the one-factor covariance, N = 200, M = 4000.
func BenchmarkScore(b *testing.B) {
	d := uniformLoadings(200, 3)
	box := core.Box{N: len(d), Cov: oracle.OneFactor(d)}
	for _, cand := range []core.Candidate{{Method: core.MethodSMC, Order: core.OrderGreedy}, {Method: core.MethodEP, Order: core.OrderGreedy}} {
		f, err := core.Prepare(box, cand, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		res, err := core.Estimate(context.Background(), f, core.Config{Method: cand.Method, Samples: 4000, Seed: 1, Keep: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=200/particles=4000/method=%v", cand.Method), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := core.NewScore(f, res.Cloud, cand.Method); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
