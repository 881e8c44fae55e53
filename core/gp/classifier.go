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

// LogGradTo fills dst (one value per element of hs, per group of score)
// with the classifier's d log p(y | X) / d log h for each hyperparameter h
// of hs, from a covariance score A_g of R = C (I + K) C (core.Score: one
// A_g per particle group): with dR = C dK C,
//
//	d log p / d log h = 1/2 sum_ij A_ij y_i y_j dK_ij / d log h,
//
// each group's value at dst[g*len(hs)+h]. It panics if the shapes disagree.
func (c *Classifier) LogGradTo(dst []float64, k *Kernel, hs []Hyper, a [][]float64) {
	n, h := len(c.Y), len(hs)
	if len(dst) != len(a)*h {
		panic("gp: LogGradTo: dst must hold one value per group and hyperparameter")
	}
	for i := range dst {
		dst[i] = 0
	}
	dk := make([]float64, h)
	d := c.D
	for i := range n {
		xi := c.X[i*d : i*d+d]
		for j := range i + 1 {
			k.LogDerivTo(dk, hs, xi, c.X[j*d:j*d+d])
			yy := c.Y[i] * c.Y[j]
			if i != j {
				yy *= 2 // A and dK are symmetric: the pair (j, i) too
			}
			for g, ag := range a {
				v := ag[i*n+j] * yy / 2
				row := dst[g*h : g*h+h]
				for q, x := range dk {
					row[q] += v * x
				}
			}
		}
	}
}
