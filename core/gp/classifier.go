package gp

import "gpc/core"

// Classifier is a GP-classification training set: features X (rows of D
// values, row-major) and labels Y in {-1, +1}.
type Classifier struct {
	X []float64
	D int
	Y []float64
}

// Box returns the classifier's orthant problem under kernel k: R =
// C (I + K) C (ClassifierCov), whose orthant probability is the marginal
// likelihood.
func (c *Classifier) Box(k *Kernel) core.Box {
	return core.Box{N: len(c.Y), Cov: ClassifierCov(k, c.X, c.D, c.Y), Labels: c.Y}
}

// ClassifierCov returns the covariance of the GP classifier's orthant
// problem (the paper's eq. MARG-LIK-FIN2 and R-NEW): for training features
// x (n rows of d, row-major) with labels y in {-1, +1},
//
//	R = C (I + K) C,   C = diag(y),   K[i][j] = k(x_i, x_j),
//
// row-major n x n, so that the marginal likelihood is P(v >= 0),
// v ~ N(0, R). It panics if the shapes disagree.
func ClassifierCov(k *Kernel, x []float64, d int, y []float64) []float64 {
	n := len(y)
	if len(x) != n*d {
		panic("gp: features and labels disagree in length")
	}
	r := make([]float64, n*n)
	for i := range n {
		xi := x[i*d : i*d+d]
		for j := range i + 1 {
			v := y[i] * y[j] * k.Eval(xi, x[j*d:j*d+d])
			r[i*n+j], r[j*n+i] = v, v
		}
		r[i*n+i]++
	}
	return r
}

// ClassifierTestRow fills dst (length n) with the covariance of a test
// pattern's variable v* = f* + noise with the training variables,
// dst[j] = y_j k(x_j, xs), and returns its variance 1 + k(xs, xs).
func ClassifierTestRow(dst []float64, k *Kernel, x []float64, d int, y []float64, xs []float64) float64 {
	for j := range y {
		dst[j] = y[j] * k.Eval(x[j*d:j*d+d], xs)
	}
	return 1 + k.Eval(xs, xs)
}
