package gp

import (
	"runtime"
	"sync"
	"sync/atomic"

	"gpc/core"
)

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
// v ~ N(0, R). The lower triangle is computed in covTile x covTile tiles,
// each mirrored into the upper one, tile rows shared among GOMAXPROCS
// goroutines; every entry is computed alone, so R does not depend on their
// number. It panics if the shapes disagree.
func ClassifierCov(k *Kernel, x []float64, d int, y []float64) []float64 {
	n := len(y)
	if len(x) != n*d {
		panic("gp: features and labels disagree in length")
	}
	r := make([]float64, n*n)
	tiles := (n + covTile - 1) / covTile
	var next atomic.Int64 // the next tile row to compute
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), tiles) {
		wg.Go(func() {
			for {
				// Tile rows from the bottom: the longest first.
				t := tiles - 1 - int(next.Add(1)-1)
				if t < 0 {
					return
				}
				classifierTileRow(r, k, x, d, y, t*covTile, min(n, t*covTile+covTile))
			}
		})
	}
	wg.Wait()
	return r
}

// covTile is the side of ClassifierCov's tiles: a tile and its mirror,
// 2 x 32 KiB, stay in the L2 cache while the mirror is written.
const covTile = 64

// classifierTileRow computes rows i0..i1 of R left of the diagonal, and the
// diagonal, and mirrors them into columns i0..i1 above it.
func classifierTileRow(r []float64, k *Kernel, x []float64, d int, y []float64, i0, i1 int) {
	n := len(y)
	for j0 := 0; j0 < i1; j0 += covTile {
		j1 := min(j0+covTile, i1)
		for i := i0; i < i1; i++ {
			e := min(j1, i+1)
			if e <= j0 {
				continue
			}
			row := r[i*n+j0 : i*n+e]
			k.evalRowTo(row, x[i*d:i*d+d], x[j0*d:e*d], d)
			for j := range row {
				row[j] *= y[i] * y[j0+j]
			}
			if e == i+1 {
				row[i-j0]++
			}
		}
		for j := j0; j < j1; j++ {
			col := r[j*n : j*n+n]
			for i := max(i0, j+1); i < i1; i++ {
				col[i] = r[i*n+j]
			}
		}
	}
}

// ClassifierTestRow fills dst (length n) with the covariance of a test
// pattern's variable v* = f* + noise with the training variables,
// dst[j] = y_j k(x_j, xs), and returns its variance 1 + k(xs, xs).
func ClassifierTestRow(dst []float64, k *Kernel, x []float64, d int, y []float64, xs []float64) float64 {
	// k(xs, x_j) is k(x_j, xs) bit for bit: the differences only change
	// sign.
	k.evalRowTo(dst[:len(y)], xs, x[:len(y)*d], d)
	for j := range y {
		dst[j] *= y[j]
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
