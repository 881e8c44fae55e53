package gp

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpc-mc/gpc/core"
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
// v ~ N(0, R). It panics if the shapes disagree.
func ClassifierCov(k *Kernel, x []float64, d int, y []float64) []float64 {
	return ClassifierCovRows(k, x, d, y, nil)
}

// ClassifierCovRows is ClassifierCov that hands over R's rows as they are
// done: it calls done(r[:m*n]) with m growing to n, one call at a time,
// once rows 0..m of R are final (rows m.. are being written meanwhile), so
// that a caller can hash or write them while the rest is computed; done
// must return quickly. The upper triangle is computed in covTile x covTile
// tiles, each mirrored into the lower one, tile rows taken in order by
// GOMAXPROCS goroutines; every entry is computed alone, so R does not
// depend on their number. It panics if the shapes disagree.
func ClassifierCovRows(k *Kernel, x []float64, d int, y []float64, done func(rows []float64)) []float64 {
	n := len(y)
	if len(x) != n*d {
		panic("gp: features and labels disagree in length")
	}
	r := make([]float64, n*n)
	tiles := (n + covTile - 1) / covTile
	var (
		next     atomic.Int64 // the next tile row to compute
		mu       sync.Mutex
		finished = make([]bool, tiles)
		final    int // tile rows 0..final are finished
		wg       sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), tiles) {
		wg.Go(func() {
			for {
				// Tile rows from the top: the longest first, and a row of
				// R is final once the tile rows up to its own are (its
				// part left of the diagonal is their mirror).
				t := int(next.Add(1) - 1)
				if t >= tiles {
					return
				}
				classifierTileRow(r, k, x, d, y, t*covTile, min(n, t*covTile+covTile))
				mu.Lock()
				finished[t] = true
				m := final
				for final < tiles && finished[final] {
					final++
				}
				if final > m && done != nil {
					done(r[:min(n, final*covTile)*n])
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return r
}

// covTile is the side of ClassifierCovRows's tiles: a tile and its mirror,
// 2 x 32 KiB, stay in the L2 cache while the mirror is written.
const covTile = 64

// classifierTileRow computes rows i0..i1 of R from the diagonal to the
// right, and mirrors them into columns i0..i1 below the diagonal.
func classifierTileRow(r []float64, k *Kernel, x []float64, d int, y []float64, i0, i1 int) {
	n := len(y)
	for j0 := i0; j0 < n; j0 += covTile {
		j1 := min(j0+covTile, n)
		for i := i0; i < i1; i++ {
			b := max(j0, i)
			if b >= j1 {
				continue
			}
			row := r[i*n+b : i*n+j1]
			k.evalRowTo(row, x[i*d:i*d+d], x[b*d:j1*d], d)
			for j := range row {
				row[j] *= y[i] * y[b+j]
			}
			if b == i {
				row[0]++
			}
		}
		for j := j0; j < j1; j++ {
			col := r[j*n : j*n+n]
			for i := i0; i < min(i1, j); i++ {
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
