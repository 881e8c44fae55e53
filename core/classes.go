package core

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// DefaultClassDraws is PredictClasses' default number of draws of the
// test utilities per particle for more than three classes.
const DefaultClassDraws = 16

// classTile is the number of particles whose test means are computed by
// one matrix product in PredictClasses.
const classTile = 256

// PredictClasses computes the class probabilities of T test points of the
// multinomial probit model (package gp's Multiclass), each given by its C
// test utilities u*_1..u*_C: their covariances r (T C x N, row-major,
// point t's class c at row t C + c, columns in the box's input order) with
// the box variables w, and their variances vars (T C), the utilities being
// independent a priori. Given w, the utilities are Gaussian,
//
//	u* | w ~ N(m(w), V),   m_c(w) = r_c' R^-1 w,
//	V = diag(vars) - (r_a' R^-1 r_b)_ab,
//
// (m_c = a_c' z with a_c = L^-1 r_c for a Factor of R; MethodEP's Factor
// adds an offset, as Predict describes),
// and class c's probability is
//
//	P(y* = c | w >= 0) = E[ P(u*_c = max_k u*_k | m(w), V) | w >= 0 ],
//
// the weighted mean over the particles of c. The inner probability is
// computed exactly for C = 2 (Phi) and C = 3 (two bivariate normal
// orthants per class, BivariateUpper), and for C > 3 as the fraction of
// opt.ClassDraws antithetic draws of u* (DefaultClassDraws if 0) in which
// class c is the largest: unbiased, its error part of the standard error.
// Per particle the probabilities sum to one (to rounding for C = 3), so
// the class probabilities do too. Groups combine as in Predict, and the
// standard error comes from the independent groups (NaN for one group),
// scaled by StudentScale(G). The draws come from a stream per (opt.Seed, group, opt.First + t), so
// the result does not depend on the thread count.
//
// dst has length T C. It returns an *InputError if a utility's conditional
// variance is not positive, or if every group estimated P = 0. It panics if the shapes
// disagree.
func PredictClasses(dst []Posterior, f *Factor, cl *Cloud, classes int, r, vars []float64, opt PredictOptions) error {
	n, tc := f.N, len(vars)
	if classes < 2 || tc%classes != 0 || len(dst) != tc || len(r) != tc*n || cl.N != n {
		panic("core: PredictClasses shapes disagree")
	}
	if tc == 0 {
		return nil
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	draws := opt.ClassDraws
	if draws <= 0 {
		draws = DefaultClassDraws
	}
	draws += draws % 2 // antithetic pairs
	t := tc / classes
	w, offset, _, _, err := f.testBasis(r, vars, tc, opt.Threads)
	if err != nil {
		if ie, ok := err.(*InputError); ok && ie.Index >= 0 {
			ie.Index /= classes
		}
		return err
	}
	var ws gemm.Workspace
	// y_a' y_b = r_a' R^-1 r_b: for a Factor of R, y = w; for MethodEP's
	// Factor of its Gaussian, y = rl^-1 r from R's own Cholesky factor.
	y := w
	if f.ep != nil {
		y = slices.Clone(r[:tc*n])
		solveRowsTo(y, tc, f.ep.rchol, n, &ws, opt.Threads)
	}
	// Each point's conditional covariance V and what its class
	// probabilities need.
	pts := make([]classPoint, t)
	for j := range pts {
		pts[j] = newClassPoint(y[j*classes*n:(j+1)*classes*n], vars[j*classes:(j+1)*classes], n, classes)
	}
	g := len(cl.Groups)
	sizes, logZ := make([]int, g), make([]float64, g)
	for k := range cl.Groups {
		sizes[k], logZ[k] = cl.Groups[k].Len(), cl.Groups[k].LogZ
	}
	pg := make([]float64, g*tc)
	means := make([]float64, classTile*tc)
	workers := min(opt.Threads, t)
	for k := range cl.Groups {
		grp := &cl.Groups[k]
		rngs := make([]*rand.Rand, t)
		if classes > 3 {
			for j := range rngs {
				rngs[j] = NewStream(opt.Seed, domainClasses, uint64(opt.First+j)<<20|uint64(k))
			}
		}
		acc := pg[k*tc : (k+1)*tc]
		for p0 := 0; p0 < sizes[k]; p0 += classTile {
			p1 := min(sizes[k], p0+classTile)
			mt := means[:(p1-p0)*tc]
			ws.NT(p1-p0, tc, n, grp.Z[p0*n:], n, w, n, mt, tc, false, opt.Threads)
			if offset != nil {
				for p := range p1 - p0 {
					row := mt[p*tc : (p+1)*tc]
					for i, o := range offset {
						row[i] += o
					}
				}
			}
			var wg sync.WaitGroup
			for wk := range workers {
				wg.Add(1)
				go func(j0, j1 int) {
					defer wg.Done()
					prob := make([]float64, classes)
					scratch := make([]float64, 2*classes)
					for j := j0; j < j1; j++ {
						pt := &pts[j]
						a := acc[j*classes : (j+1)*classes]
						for p := p0; p < p1; p++ {
							m := mt[(p-p0)*tc+j*classes : (p-p0)*tc+(j+1)*classes]
							pt.probs(prob, m, rngs[j], draws, scratch)
							wp := math.Exp(grp.LogW[p])
							for c, v := range prob {
								a[c] += wp * v
							}
						}
					}
				}(wk*t/workers, (wk+1)*t/workers)
			}
			wg.Wait()
		}
	}
	return combineClassGroups(dst, pg, sizes, logZ)
}

// combineClassGroups combines each group's weighted means pg (groups x
// len(dst)) with weights a_g = n_g I_g into dst, as Predict does.
func combineClassGroups(dst []Posterior, pg []float64, sizes []int, logZ []float64) error {
	tc, g := len(dst), len(sizes)
	maxLogZ := math.Inf(-1)
	for _, v := range logZ {
		maxLogZ = math.Max(maxLogZ, v)
	}
	if math.IsInf(maxLogZ, -1) {
		return errNoPosterior()
	}
	a := make([]float64, g)
	sa := 0.0
	for k, m := range sizes {
		a[k] = float64(m) * math.Exp(logZ[k]-maxLogZ)
		sa += a[k]
	}
	for j := range tc {
		sap := 0.0
		for k := range g {
			sap += a[k] * pg[k*tc+j]
		}
		pj := sap / sa
		sa2d := 0.0
		for k := range g {
			d := pg[k*tc+j] - pj
			sa2d += a[k] * a[k] * d * d
		}
		se := math.NaN()
		if g > 1 {
			se = StudentScale(g) * math.Sqrt(float64(g)/float64(g-1)*sa2d) / sa
		}
		dst[j] = Posterior{P: pj, SE: se}
	}
	return nil
}

// classPoint is what one test point's class probabilities need given the
// utilities' conditional means: for C = 2 and 3 the differences' standard
// deviations and correlations, for C > 3 the Cholesky factor of V.
type classPoint struct {
	c int
	// sd[c][q] is the standard deviation of u*_c - u*_k for class c's q-th
	// other class k; rho[c] the correlation of its two differences (C = 3).
	sd  [][]float64
	rho []float64
	// chol is V's lower Cholesky factor (C x C), for C > 3.
	chol []float64
}

// newClassPoint computes V = diag(vars) - A A' from the point's rows of
// the test basis a (C x n) and prepares its class probabilities.
func newClassPoint(a, vars []float64, n, c int) classPoint {
	v := make([]float64, c*c)
	for i := range c {
		for j := range i + 1 {
			s := 0.0
			for l, x := range a[i*n : i*n+n] {
				s += x * a[j*n+l]
			}
			v[i*c+j], v[j*c+i] = -s, -s
		}
		v[i*c+i] += vars[i]
	}
	pt := classPoint{c: c}
	if c <= 3 {
		pt.sd, pt.rho = make([][]float64, c), make([]float64, c)
		for k := range c {
			var others []int
			for l := range c {
				if l != k {
					others = append(others, l)
				}
			}
			pt.sd[k] = make([]float64, len(others))
			for q, l := range others {
				pt.sd[k][q] = math.Sqrt(v[k*c+k] + v[l*c+l] - 2*v[k*c+l])
			}
			if c == 3 {
				l1, l2 := others[0], others[1]
				cov := v[k*c+k] - v[k*c+l2] - v[l1*c+k] + v[l1*c+l2]
				pt.rho[k] = math.Max(-1, math.Min(1, cov/(pt.sd[k][0]*pt.sd[k][1])))
			}
		}
		return pt
	}
	// V >= I (the utilities' noise is independent of w): positive definite.
	l := make([]float64, c*c)
	for i := range c {
		for j := range i + 1 {
			s := v[i*c+j]
			for q := range j {
				s -= l[i*c+q] * l[j*c+q]
			}
			if i == j {
				l[i*c+i] = math.Sqrt(math.Max(s, 0))
			} else {
				l[i*c+j] = s / l[j*c+j]
			}
		}
	}
	pt.chol = l
	return pt
}

// probs writes to dst the probability of each class being the largest
// utility given their means m.
func (pt *classPoint) probs(dst, m []float64, rng *rand.Rand, draws int, scratch []float64) {
	c := pt.c
	switch c {
	case 2:
		p1 := Phi((m[1] - m[0]) / pt.sd[1][0])
		dst[0], dst[1] = 1-p1, p1
		return
	case 3:
		for k := range 3 {
			l1, l2 := (k+1)%3, (k+2)%3
			if l1 > l2 {
				l1, l2 = l2, l1
			}
			// P(u_k - u_l1 > 0, u_k - u_l2 > 0).
			dst[k] = BivariateUpper(-(m[k]-m[l1])/pt.sd[k][0], -(m[k]-m[l2])/pt.sd[k][1], pt.rho[k])
		}
		return
	}
	clear(dst)
	zeta, u := scratch[:c], scratch[c:2*c]
	inc := 1 / float64(draws)
	for range draws / 2 {
		for i := range zeta {
			zeta[i] = rng.NormFloat64()
		}
		for _, sign := range [2]float64{1, -1} {
			best, bi := math.Inf(-1), 0
			for i := range c {
				s := 0.0
				for q, z := range zeta[:i+1] {
					s += pt.chol[i*c+q] * z
				}
				u[i] = m[i] + sign*s
				if u[i] > best {
					best, bi = u[i], i
				}
			}
			dst[bi] += inc
		}
	}
}
