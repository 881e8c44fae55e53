package vecchia

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
)

// Fisher's identity on the Vecchia estimator. The model's probability
// P(theta) = integral of N(x; 0, (A'A)^-1) prod_k l_k(x_k) dx, the rows'
// likelihoods l_k(x) = P(Lower_k <= x + sqrt(Noise) eps <= Upper_k) not
// depending on the kernel's hyperparameters theta, has
//
//	d log P / d theta_j = E[s_j(x) | y],   s_j(x) = d log N(x; 0, (A'A)^-1) / d theta_j
//	                                              = d log det A - x' d(A'A) x / 2,
//
// the expectation under the model's posterior pi, which a group's final
// weighted paths estimate. That estimate is poor where the prior is nearly
// singular (the default nugget, 1e-4, is the latent values' only noise):
// x' d(A'A) x / 2 then fluctuates over the posterior by about one nat per
// row, the rows' innovations (x_k - B_k x_c(k)) / D_k^1/2 varying by their
// prior's spread whatever the labels say. Stein's identity removes that
// part exactly: for any matrix S, E_pi[grad log pi(x)' S x + tr S] = 0
// (the divergence of pi(x) S x integrates to 0), and with S = Sigma
// d(A'A) / 2, Sigma = (A'A)^-1, and grad log pi(x) = -A'A x + g(x), g the
// likelihoods' gradient (g_k = d log l_k / d x_k, summed over the rows that
// observe variable k), subtracting it from s_j leaves
//
//	s~_j(x) = -g(x)' Sigma d(A'A) x / 2,
//
// with the same posterior mean (tr S = d log det A cancels the first
// term) and a variance set by the labels' pull g, not by the prior's
// spread: at N = 40 with every earlier point a neighbour and 2 x 10^4
// particles the standard errors of the rbf gradient fall from 0.16 and
// 0.027 to 0.016 and 0.0077, where the dense path's (on w = x + noise,
// whose prior is not singular) are 0.0045 and 0.0035
// (vfit.TestSamplerDense; docs/vecchia-fit.md, the exact stage). With e = A x, h =
// A^-T g and A r = h (two triangular solves with the factor A itself),
// and A's derivatives written by the conditionals' (ConditionalDerivs),
//
//	s~_j(x) = sum_k [ dD_k / (2 D_k) e_k h_k + (e_k dB_k r_c(k) + h_k dB_k x_c(k)) / (2 D_k^1/2) ].
//
// Where the prior's spread is not what makes the noise (long length
// scales among thousands of points: the solves' terms, of the size of
// D_k^-1/2, then dominate s~), s is the better; so a group keeps both,
// particle by particle, and the estimate is the regression one, s_j -
// beta_j (s_j - s~_j) with beta_j from the groups' moments (GroupScores),
// never worse than either but for beta's own noise. A group computes
// them for all its particles at once, row by row (the solves' rows are
// the particles' values, as the steps read them); the groups combine as
// core.Score's do, by their estimates of P (core.GroupWeights). A repeated point's row
// adds its likelihood's gradient to its point's variable and is
// otherwise ignored (its value is its point's).

// checkScore returns an error if d is not the derivatives of a model of
// md's layout (its conditionals' CSR entries).
func checkScore(md *Model, d *CondDerivs) error {
	if len(d.Start) != md.N+1 || len(d.Nbr) != len(md.Nbr) || len(d.DCoef) != len(d.Hypers) || len(d.DCondVar) != len(d.Hypers) {
		return fmt.Errorf("vecchia: the score's derivatives (%d rows, %d entries) are not of the model's layout (%d rows, %d entries)", len(d.Start)-1, len(d.Nbr), md.N, len(md.Nbr))
	}
	for j := range d.Hypers {
		if len(d.DCoef[j]) != len(md.Nbr) || len(d.DCondVar[j]) != md.N {
			return fmt.Errorf("vecchia: the score's derivatives in hyperparameter %d are not of the model's layout", j)
		}
	}
	for k := range md.N {
		if d.Start[k+1] != md.Start[k+1] {
			return fmt.Errorf("vecchia: the score's derivatives and the model differ in row %d's neighbours", k)
		}
	}
	return nil
}

// scoreBytes is the scratch of a group's score per particle on a model of
// n rows: h and r, n float64 values each.
func scoreBytes(n int) int64 { return 2 * 8 * int64(n) }

// likGrad returns d log l(x) / dx for the likelihood l(x) = P(lo <= x +
// s eps <= hi), eps standard normal, accurately in either tail.
func likGrad(x, lo, hi, s float64) float64 {
	a, b := (lo-x)/s, (hi-x)/s
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return 0
	case math.IsInf(hi, 1):
		return invMills(-a) / s
	case math.IsInf(lo, -1):
		return -invMills(b) / s
	}
	ld := core.LogPhiDiff(a, b)
	return (math.Exp(core.LogPhiDensity(a)-ld) - math.Exp(core.LogPhiDensity(b)-ld)) / s
}

// ScoreMoments is the number of values a group's score (core.CloudGroup.Score)
// holds per hyperparameter j, at ScoreMoments j: the weighted means over
// its final paths of s_j, of s~_j, of s_j^2, of s_j s~_j and of s~_j^2
// (above), from which GroupScores makes each group's estimate.
const ScoreMoments = 5

// invMills returns phi(z) / Phi(z) (classes_lik.go's millsRatio, faster): directly above z = -30, where
// Phi(z) is above 1e-198 (one exp and one erfc), and in logs below.
func invMills(z float64) float64 {
	if z > -30 {
		return math.Exp(-z*z/2) / (math.Sqrt(2*math.Pi) * 0.5 * math.Erfc(-z/math.Sqrt2))
	}
	return math.Exp(core.LogPhiDensity(z) - core.LogPhi(z))
}

// groupScore sets dst (ScoreMoments values per hyperparameter of d) to the
// weighted moments, over the m paths x (md.N rows of m float32 values, by
// variable, as a runner holds them) with normalized weights w, of s_j and
// s~_j (above). h and r hold md.N m values of scratch each, e m, and acc
// 4 m len(d.Hypers). Every sum runs in a fixed order, so the result's bits
// depend on nothing but its arguments.
func groupScore(dst []float64, md *Model, d *CondDerivs, x []float32, m int, w, h, r, e, acc []float64) {
	n, p := md.N, len(d.Hypers)
	h, r, e, w = h[:n*m], r[:n*m], e[:m], w[:m]
	// Per hyperparameter j and particle i: the running s_j and s~_j
	// (sa, ta), and a row's dB_kj x_c(k) and dB_kj r_c(k) (bx, br).
	acc = acc[:4*p*m]
	clear(acc)
	sa, ta, bx, br := acc[:p*m], acc[p*m:2*p*m], acc[2*p*m:3*p*m], acc[3*p*m:]
	// g, summed into h: each row's likelihood at its variable's value.
	clear(h)
	s := math.Sqrt(md.Noise)
	for k := range n {
		v := k
		if dp := md.Dup(k); dp >= 0 {
			v = dp
		}
		lo, hi := md.Lower[k], md.Upper[k]
		row, xv := h[v*m:v*m+m], x[v*m:v*m+m]
		for i := range row {
			row[i] += likGrad(float64(xv[i]), lo, hi, s)
		}
	}
	// h = A^-T g, from the last row back: h_k = acc_k / A_kk, then each
	// neighbour's acc loses A_kq h_k.
	for k := n - 1; k >= 0; k-- {
		cv := md.CondVar[k]
		if cv == 0 {
			continue
		}
		sd := math.Sqrt(cv)
		hk := h[k*m : k*m+m]
		for i := range hk {
			hk[i] *= sd // 1 / A_kk
		}
		for q := md.Start[k]; q < md.Start[k+1]; q++ {
			nb := int(md.Nbr[q])
			core.Axpy(h[nb*m:nb*m+m], md.Coef[q]/sd, hk) // -A_kq h_k
		}
	}
	// A r = h, forward: r_k = D_k^1/2 h_k + B_k r_c(k).
	var off []int64
	offsets := func(k int) []int64 {
		off = off[:0]
		for _, j := range md.Nbr[md.Start[k]:md.Start[k+1]] {
			off = append(off, int64(j)*int64(m))
		}
		return off
	}
	for k := range n {
		cv := md.CondVar[k]
		rk := r[k*m : k*m+m]
		if cv == 0 {
			clear(rk)
			continue
		}
		sd := math.Sqrt(cv)
		for i, v := range h[k*m : k*m+m] {
			rk[i] = sd * v
		}
		core.Combine(rk, r, offsets(k), md.Coef[md.Start[k]:md.Start[k+1]])
	}
	// The rows' terms, particle by particle: e_k = (x_k - B_k x_c) / D_k^1/2,
	// and dB_kj x_c, dB_kj r_c two hyperparameters at a time, each on the
	// vector kernels that read the rows side by side.
	for k := range n {
		cv := md.CondVar[k]
		if cv == 0 {
			continue
		}
		lo, hi := md.Start[k], md.Start[k+1]
		off := offsets(k)
		clear(e)
		core.CombineF32(e, x, off, md.Coef[lo:hi])
		clear(bx)
		clear(br)
		for j := 0; j < p; j += 2 {
			bxj, brj := bx[j*m:j*m+m], br[j*m:j*m+m]
			if j+1 < p {
				core.Combine2F32(bxj, bx[(j+1)*m:(j+2)*m], x, off, d.DCoef[j][lo:hi], d.DCoef[j+1][lo:hi])
				core.Combine2(brj, br[(j+1)*m:(j+2)*m], r, off, d.DCoef[j][lo:hi], d.DCoef[j+1][lo:hi])
			} else {
				core.CombineF32(bxj, x, off, d.DCoef[j][lo:hi])
				core.Combine(brj, r, off, d.DCoef[j][lo:hi])
			}
		}
		sd := math.Sqrt(cv)
		for i, xv := range x[k*m : k*m+m] {
			e[i] = (float64(xv) - e[i]) / sd
		}
		hk := h[k*m : k*m+m]
		for j, dd := range d.DCondVar {
			a := dd[k] / (2 * cv)
			saj, taj, bxj, brj := sa[j*m:j*m+m], ta[j*m:j*m+m], bx[j*m:j*m+m], br[j*m:j*m+m]
			for i, ei := range e {
				saj[i] += -a*(1-ei*ei) + ei*bxj[i]/sd
				taj[i] += a*ei*hk[i] + (ei*brj[i]+hk[i]*bxj[i])/(2*sd)
			}
		}
	}
	for j := range p {
		var m1, m2, m11, m12, m22 float64
		for i, wi := range w {
			a, b := sa[j*m+i], ta[j*m+i]
			m1 += wi * a
			m2 += wi * b
			m11 += wi * a * a
			m12 += wi * a * b
			m22 += wi * b * b
		}
		copy(dst[ScoreMoments*j:], []float64{m1, m2, m11, m12, m22})
	}
}

// GroupScores returns each group's estimate of the gradient (len(w) rows
// of p values) from the groups' moments (ScoreMoments per hyperparameter,
// p of them per group, as the groups' Score holds them) and their weights
// w (core.GroupWeights): s_j less beta_j times the control variate c_j =
// s_j - s~_j, whose posterior mean is 0, with the coefficient that
// minimizes the variance, beta_j = Cov(s_j, c_j) / Var(c_j), from the
// groups' within-group moments pooled by w (Stein's identity's
// zero-variance estimate is beta = 1, the plain score's 0: the first
// wins where the prior's spread makes the noise, at small N, the second
// where long length scales make the solves' terms large). A beta that is
// not finite (no variance in c) is 0. It returns the betas too.
func GroupScores(moments []float64, p int, w []float64) (tg, beta []float64) {
	if len(moments) != ScoreMoments*p*len(w) {
		panic("vecchia: GroupScores: the moments are not ScoreMoments per hyperparameter and group")
	}
	beta = make([]float64, p)
	for j := range p {
		var cov, vr float64
		for g, wg := range w {
			mo := moments[ScoreMoments*(g*p+j):]
			ms, mt, mss, mst, mtt := mo[0], mo[1], mo[2], mo[3], mo[4]
			mc := ms - mt
			cov += wg * ((mss - mst) - ms*mc)
			vr += wg * ((mss - 2*mst + mtt) - mc*mc)
		}
		if b := cov / vr; vr > 0 && !math.IsNaN(b) && !math.IsInf(b, 0) {
			beta[j] = b
		}
	}
	tg = make([]float64, len(w)*p)
	for g := range w {
		for j := range p {
			mo := moments[ScoreMoments*(g*p+j):]
			tg[g*p+j] = mo[0] - beta[j]*(mo[0]-mo[1])
		}
	}
	return tg, beta
}

// scoreWork is a runner's scratch for its groups' scores.
type scoreWork struct {
	h, r, acc []float64
}

// score returns the group's score (Prepared.Score) from its final paths
// and normalized weights w.
func (r *runner) score(d *CondDerivs, w []float64) []float64 {
	m, n := r.m, r.p.m.N
	if r.sw == nil {
		r.sw = &scoreWork{}
	}
	r.sw.h = slices.Grow(r.sw.h[:0], n*m)[:n*m]
	r.sw.r = slices.Grow(r.sw.r[:0], n*m)[:n*m]
	r.sw.acc = slices.Grow(r.sw.acc[:0], 4*len(d.Hypers)*m)
	out := make([]float64, ScoreMoments*len(d.Hypers))
	groupScore(out, r.p.m, d, r.x, m, w, r.sw.h, r.sw.r, r.tmp, r.sw.acc[:4*len(d.Hypers)*m])
	return out
}
