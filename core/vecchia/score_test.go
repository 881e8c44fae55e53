package vecchia

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"

	"gonum.org/v1/gonum/mat"
)

// TestGroupScore checks a group's score moments (groupScore, on float32
// paths laid out as a runner holds them) against the same weighted
// moments of each path's prior score s (AdjointGradTo of its
// PriorAdjoint) and of s~ = -g(x)' Sigma d(A'A) x / 2 computed with dense
// matrices (A and its derivatives from the conditionals', Sigma = (A'A)^-1
// inverted), for every kernel gpc-fit fits, on points with a repeat: two
// computations of the same numbers, to rounding.
func TestGroupScore(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n, nb, m := 60, 10, 5
			x, y := gradData(n, c.d, 2)
			s := c.structure(t, x, n, nb)
			k, hs := c.kernelAt(c.theta0())
			model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			// One row two-sided, so that every kind of bound is met.
			model.Lower[5], model.Upper[5] = -0.5, 0.7
			d, err := s.ConditionalDerivs(k, hs, x, DefaultNugget, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkScore(model, d); err != nil {
				t.Fatal(err)
			}
			// The dense A over the regular rows, and its derivatives.
			var reg []int
			idx := make([]int, n)
			for i := range n {
				idx[i] = -1
				if model.Dup(i) < 0 {
					idx[i] = len(reg)
					reg = append(reg, i)
				}
			}
			nr := len(reg)
			if nr == n {
				t.Fatal("no repeated point")
			}
			a := mat.NewDense(nr, nr, nil)
			da := make([]*mat.Dense, len(hs))
			for j := range hs {
				da[j] = mat.NewDense(nr, nr, nil)
			}
			for _, i := range reg {
				v := model.CondVar[i]
				sd := math.Sqrt(v)
				a.Set(idx[i], idx[i], 1/sd)
				for j := range hs {
					dd := d.DCondVar[j][i]
					da[j].Set(idx[i], idx[i], -dd/(2*v*sd))
					for q := model.Start[i]; q < model.Start[i+1]; q++ {
						col := idx[model.Nbr[q]]
						a.Set(idx[i], col, -model.Coef[q]/sd)
						da[j].Set(idx[i], col, -d.DCoef[j][q]/sd+model.Coef[q]*dd/(2*v*sd))
					}
				}
			}
			var ata, sigma mat.Dense
			ata.Mul(a.T(), a)
			if err := sigma.Inverse(&ata); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(5, 5))
			paths := make([]float32, n*m)
			w := make([]float64, m)
			tot := 0.0
			for q := range m {
				w[q] = 0.2 + r.Float64()
				tot += w[q]
			}
			want := make([]float64, ScoreMoments*len(hs))
			for q := range m {
				w[q] /= tot
				// A draw of the prior, rounded to float32 as the runner
				// stores it; a repeat takes its point's value.
				v := make([]float64, n)
				for i := range n {
					if dp := model.Dup(i); dp >= 0 {
						v[i] = v[dp]
					} else {
						for e := model.Start[i]; e < model.Start[i+1]; e++ {
							v[i] += model.Coef[e] * v[model.Nbr[e]]
						}
						v[i] += math.Sqrt(model.CondVar[i]) * r.NormFloat64()
					}
					v[i] = float64(float32(v[i]))
					paths[i*m+q] = float32(v[i])
				}
				// s: the prior's score at v (AdjointGradTo of its
				// PriorAdjoint); s~: -g' Sigma d(A'A) x / 2, dense.
				plain := make([]float64, len(hs))
				if err := s.AdjointGradTo(plain, k, hs, x, DefaultNugget, model.PriorAdjoint(v), 2); err != nil {
					t.Fatal(err)
				}
				g, xr := mat.NewVecDense(nr, nil), mat.NewVecDense(nr, nil)
				for i := range n {
					vi := i
					if dp := model.Dup(i); dp >= 0 {
						vi = dp
					}
					g.SetVec(idx[vi], g.AtVec(idx[vi])+likGrad(v[vi], model.Lower[i], model.Upper[i], math.Sqrt(model.Noise)))
					if idx[i] >= 0 {
						xr.SetVec(idx[i], v[i])
					}
				}
				for j := range hs {
					var dm, t1, t2 mat.Dense
					t1.Mul(da[j].T(), a)
					t2.Mul(a.T(), da[j])
					dm.Add(&t1, &t2)
					var u, z mat.VecDense
					u.MulVec(&dm, xr)
					z.MulVec(&sigma, &u)
					st := -mat.Dot(g, &z) / 2
					for i, v := range []float64{plain[j], st, plain[j] * plain[j], plain[j] * st, st * st} {
						want[ScoreMoments*j+i] += w[q] * v
					}
				}
			}
			got := make([]float64, ScoreMoments*len(hs))
			groupScore(got, model, d, paths, m, w, make([]float64, n*m), make([]float64, n*m), make([]float64, m), make([]float64, 4*len(hs)*m))
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-7*(1+math.Abs(want[i])) {
					t.Errorf("hyperparameter %d, moment %d: group score %.12g, dense %.12g", i/ScoreMoments, i%ScoreMoments, got[i], want[i])
				}
			}
			// A layout that is not the model's is refused.
			bad := *d
			bad.Start = bad.Start[:n]
			if checkScore(model, &bad) == nil {
				t.Error("derivatives of the wrong layout accepted")
			}
		})
	}
}

// TestLikGrad checks the likelihood's gradient against central
// differences of its log (core.LogPhiDiff), for one- and two-sided bounds
// and far into the tails.
func TestLikGrad(t *testing.T) {
	inf := math.Inf(1)
	const s, h = 0.8, 1e-5
	for _, b := range [][2]float64{{0, inf}, {-inf, 0}, {-0.5, 0.7}, {2, 3}, {-inf, inf}} {
		for _, x := range []float64{-30, -6, -1, 0, 0.3, 1, 6, 30} {
			ll := func(x float64) float64 { return core.LogPhiDiff((b[0]-x)/s, (b[1]-x)/s) }
			fd := (ll(x+h) - ll(x-h)) / (2 * h)
			if g := likGrad(x, b[0], b[1], s); math.Abs(g-fd) > 1e-6*(1+math.Abs(fd)) {
				t.Errorf("bounds %v, x %v: gradient %.10g, central differences %.10g", b, x, g, fd)
			}
		}
	}
}

// TestGroupScores checks the regression estimate's coefficient on
// constructed moments: where c = s - s~ is s's own noise (s~ constant) beta
// is 1 and every group's estimate is s~'s mean; where s~ is the noisy one
// (s constant) beta is 0 and the estimate is s's mean.
func TestGroupScores(t *testing.T) {
	mom := func(ms, mt, vs, vt, cst float64) []float64 {
		return []float64{ms, mt, vs + ms*ms, cst + ms*mt, vt + mt*mt}
	}
	w := []float64{0.5, 0.3, 0.2}
	// s noisy around 1, s~ exactly 0.9 in every group.
	var a []float64
	for g := range w {
		a = append(a, mom(1+0.1*float64(g), 0.9, 4, 0, 0)...)
	}
	tg, beta := GroupScores(a, 1, w)
	if math.Abs(beta[0]-1) > 1e-12 || math.Abs(tg[1]-0.9) > 1e-12 {
		t.Errorf("s noisy: beta %v, estimates %v", beta, tg)
	}
	// s exactly 2 (no variance), s~ noisy.
	a = a[:0]
	for g := range w {
		a = append(a, mom(2, 2.5-0.2*float64(g), 0, 9, 0)...)
	}
	tg, beta = GroupScores(a, 1, w)
	if math.Abs(beta[0]) > 1e-12 || math.Abs(tg[2]-2) > 1e-12 {
		t.Errorf("s~ noisy: beta %v, estimates %v", beta, tg)
	}
}
