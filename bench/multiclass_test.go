package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// gibbsMulticlass is an independent reference for the multinomial probit
// GP's class probabilities: a data-augmentation Gibbs sampler in the style
// of Albert and Chib (1993), with the latent functions integrated out. The
// utilities u_c = f_c + e_c of the training points are, a priori,
// N(0, K_c + I), independent between classes; the labels restrict them to
// u_{i,y_i} >= u_{i,k}. Each sweep draws every u_ic from its conditional
// given the others (normal, with the precision Q_c = (K_c + I)^-1),
// truncated by the constraints of point i. Given u, a test point's
// utilities are independent normals, u*_c ~ N(k_c' Q_c u_c, 1 + k_c(x*,x*)
// - k_c' Q_c k_c), and P(class c | u) is the one-dimensional integral
// int phi(t) prod_{k != c} Phi((mu_c + s_c t - mu_k) / s_k) dt (40-point
// Gauss-Hermite). The class probabilities are their means over the sweeps
// after burn-in, with standard errors from batch means.
//
// References: J. H. Albert and S. Chib (1993), "Bayesian analysis of
// binary and polychotomous response data", JASA 88:669-679; M. Girolami
// and S. Rogers (2006), "Variational Bayesian multinomial probit regression
// with Gaussian process priors", Neural Computation 18:1790-1817.
func gibbsMulticlass(m *gp.Multiclass, xs [][]float64, sweeps, burn, batches int, seed uint64) (p, se [][]float64) {
	n, c := len(m.Y), m.C
	kern := func(cl int) *gp.Kernel {
		if len(m.Kernels) == 1 {
			return m.Kernels[0]
		}
		return m.Kernels[cl]
	}
	x := func(i int) []float64 { return m.X[i*m.D : i*m.D+m.D] }
	q := make([]*mat.Dense, c)
	mean := make([][][]float64, c) // mean[c][t] = Q_c k_c(X, x*_t)
	sd := make([][]float64, c)
	for cl := range c {
		k := mat.NewSymDense(n, nil)
		for i := range n {
			for j := range i + 1 {
				k.SetSym(i, j, kern(cl).Eval(x(i), x(j)))
			}
			k.SetSym(i, i, k.At(i, i)+1)
		}
		var ch mat.Cholesky
		if !ch.Factorize(k) {
			panic("bench: K + I not positive definite")
		}
		q[cl] = mat.NewDense(n, n, nil)
		var inv mat.SymDense
		if err := ch.InverseTo(&inv); err != nil {
			panic(err)
		}
		q[cl].Copy(&inv)
		for _, xt := range xs {
			kx := make([]float64, n)
			for i := range n {
				kx[i] = kern(cl).Eval(x(i), xt)
			}
			w := make([]float64, n)
			mat.NewVecDense(n, w).MulVec(q[cl], mat.NewVecDense(n, kx))
			v := 1 + kern(cl).Eval(xt, xt)
			for i := range n {
				v -= kx[i] * w[i]
			}
			mean[cl] = append(mean[cl], w)
			sd[cl] = append(sd[cl], math.Sqrt(v))
		}
	}
	const gh = 40
	node, weight := make([]float64, gh), make([]float64, gh)
	quad.Hermite{}.FixedLocations(node, weight, math.Inf(-1), math.Inf(1))
	rng := rand.New(rand.NewPCG(seed, 99))
	// Start from a point inside the constraints.
	u := make([][]float64, c)
	for cl := range c {
		u[cl] = make([]float64, n)
		for i := range n {
			if m.Y[i] == cl {
				u[cl][i] = 1
			}
		}
	}
	t := len(xs)
	batchSum := make([][][]float64, batches)
	per := (sweeps - burn) / batches
	mu, prob := make([]float64, c), make([]float64, c)
	for s := range sweeps {
		for i := range n {
			for cl := range c {
				// u_ic given the other utilities of class cl.
				qi := q[cl].RawRowView(i)
				cm := 0.0
				for j, v := range u[cl] {
					if j != i {
						cm -= qi[j] * v
					}
				}
				cm /= qi[i]
				cs := 1 / math.Sqrt(qi[i])
				lo, hi := math.Inf(-1), math.Inf(1)
				if cl == m.Y[i] {
					for k := range c {
						if k != cl {
							lo = math.Max(lo, u[k][i])
						}
					}
				} else {
					hi = u[m.Y[i]][i]
				}
				z := core.TruncNormQuantile((lo-cm)/cs, (hi-cm)/cs, rng.Float64())
				u[cl][i] = cm + cs*z
			}
		}
		if s < burn {
			continue
		}
		b := min(batches-1, (s-burn)/per)
		if batchSum[b] == nil {
			batchSum[b] = make([][]float64, t)
			for j := range t {
				batchSum[b][j] = make([]float64, c+1) // c probabilities and the count
			}
		}
		for j := range t {
			for cl := range c {
				mu[cl] = 0
				for i, w := range mean[cl][j] {
					mu[cl] += w * u[cl][i]
				}
			}
			for cl := range c {
				sum := 0.0
				for h, xh := range node {
					tt := math.Sqrt2 * xh
					v := 1.0
					for k := range c {
						if k != cl {
							v *= core.Phi((mu[cl] + sd[cl][j]*tt - mu[k]) / sd[k][j])
						}
					}
					sum += weight[h] * v
				}
				prob[cl] = sum / math.SqrtPi
			}
			for cl := range c {
				batchSum[b][j][cl] += prob[cl]
			}
			batchSum[b][j][c]++
		}
	}
	p, se = make([][]float64, t), make([][]float64, t)
	for j := range t {
		p[j], se[j] = make([]float64, c), make([]float64, c)
		for cl := range c {
			var s, s2 float64
			for b := range batches {
				v := batchSum[b][j][cl] / batchSum[b][j][c]
				s += v
				s2 += v * v
			}
			bm := s / float64(batches)
			p[j][cl] = bm
			se[j][cl] = math.Sqrt(math.Max(0, s2/float64(batches)-bm*bm) / float64(batches-1))
		}
	}
	return p, se
}

// TestMulticlassGibbs checks gpc's exact multinomial probit posteriors
// against the Gibbs reference on three small problems (three and four
// classes, a shared kernel and one per class): every class probability of
// every test point within 3 combined standard errors. About 100 CPU
// seconds (200000 Gibbs sweeps per problem), so it runs only when asked:
//
//	GPC_MULTICLASS_GIBBS=1 go test ./bench -run MulticlassGibbs -v
func TestMulticlassGibbs(t *testing.T) {
	if testing.Short() || os.Getenv("GPC_MULTICLASS_GIBBS") == "" {
		t.Skip("long accuracy study: set GPC_MULTICLASS_GIBBS=1 to run it")
	}
	rbf := func(a, b float64) *gp.Kernel { return &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{a}, Beta: b} }
	problems := []struct {
		name string
		m    *gp.Multiclass
		xs   [][]float64
	}{
		{"C=3 N=6 shared kernel", &gp.Multiclass{X: []float64{-1, -0.7, 0, 0.2, 1, 1.4}, D: 1, Y: []int{0, 0, 1, 1, 2, 2}, C: 3, Kernels: []*gp.Kernel{rbf(1, 2)}},
			[][]float64{{-0.8}, {0.5}, {2}}},
		{"C=3 N=7 a kernel per class", &gp.Multiclass{X: []float64{-1, -0.5, 0, 0.3, 0.6, 1, 1.5}, D: 1, Y: []int{0, 1, 0, 1, 2, 2, 1}, C: 3,
			Kernels: []*gp.Kernel{rbf(0.8, 1), rbf(1.5, 4), rbf(0.5, 2)}}, [][]float64{{-0.2}, {0.8}}},
		{"C=4 N=8 two features", &gp.Multiclass{X: []float64{0, 0, 0.2, 0.1, 1, 0, 1.1, 0.3, 0, 1, 0.2, 1.2, 1, 1, 0.9, 1.1}, D: 2, Y: []int{0, 0, 1, 1, 2, 2, 3, 3}, C: 4,
			Kernels: []*gp.Kernel{rbf(1, 3)}}, [][]float64{{0.5, 0.5}, {0.1, 0.9}}},
	}
	for k, pr := range problems {
		box := pr.m.Box()
		f, err := core.NewFactor(box, core.Ordering{Kind: core.OrderGiven}, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := core.Estimate(context.Background(), f, core.Config{Samples: 100000, Groups: 20, Seed: uint64(k + 1), Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		c, nv := pr.m.C, pr.m.Vars()
		rows, vars := make([]float64, len(pr.xs)*c*nv), make([]float64, len(pr.xs)*c)
		for j, xt := range pr.xs {
			pr.m.TestRows(rows[j*c*nv:(j+1)*c*nv], vars[j*c:(j+1)*c], xt)
		}
		post := make([]core.Posterior, len(vars))
		if err := core.PredictClasses(post, f, res.Cloud, c, rows, vars, core.PredictOptions{ClassDraws: 64, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		gibbs, gse := gibbsMulticlass(pr.m, pr.xs, 200000, 2000, 50, uint64(k+1))
		for j := range pr.xs {
			line := fmt.Sprintf("%s, x* = %v:", pr.name, pr.xs[j])
			for cl := range c {
				q := post[j*c+cl]
				comb := math.Hypot(q.SE, gse[j][cl])
				line += fmt.Sprintf("  %.4f+-%.4f vs Gibbs %.4f+-%.4f", q.P, q.SE, gibbs[j][cl], gse[j][cl])
				if math.Abs(q.P-gibbs[j][cl]) > 3*comb {
					t.Errorf("%s, x* = %v, class %d: gpc %.5f +- %.5f, Gibbs %.5f +- %.5f: %.1f combined SE apart", pr.name, pr.xs[j], cl, q.P, q.SE, gibbs[j][cl], gse[j][cl], math.Abs(q.P-gibbs[j][cl])/comb)
				}
			}
			t.Log(line)
		}
	}
}
