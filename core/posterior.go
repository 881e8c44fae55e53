package core

import (
	"math"
	"runtime"
	"sync"

	"gpc/internal/gemm"
)

// Prediction's work is split into fixed units of particles, independent of
// the thread count: each unit's weighted sums are kept apart and added in
// unit order, so the posteriors are the same for any number of threads.
const (
	// predictUnit is the most particles of one group in a work unit.
	predictUnit = 4096
	// predictTile is the number of particles whose conditional means are
	// computed by one matrix product (predictTile x T values, reused from
	// the cache at once).
	predictTile = 256
)

// solveRowsTo overwrites each of the t rows of w (t x n, row-major) by the
// solution x of L x = row, L the lower-triangular n x n factor (row-major):
// w <- w L^-T. Blocks of trsmBlock columns are solved by substitution and
// the rest of each row updated by one matrix product per block, so the
// O(n^2 t) work runs at the product's speed.
func solveRowsTo(w []float64, t int, l []float64, n int, ws *gemm.Workspace, workers int) {
	const trsmBlock = 64
	upd := make([]float64, t*trsmBlock)
	for j0 := 0; j0 < n; j0 += trsmBlock {
		j1 := min(n, j0+trsmBlock)
		nb := j1 - j0
		if j0 > 0 {
			// upd (t x nb) = w[:, :j0] L[j0:j1, :j0]'.
			ws.NT(t, nb, j0, w, n, l[j0*n:], n, upd, nb, false, workers)
			for r := range t {
				row := w[r*n+j0 : r*n+j1]
				for k := range row {
					row[k] -= upd[r*nb+k]
				}
			}
		}
		for r := range t {
			row := w[r*n : r*n+j1]
			for k := j0; k < j1; k++ {
				s := row[k]
				lk := l[k*n+j0 : k*n+k]
				for q, v := range lk {
					s = math.FMA(-v, row[j0+q], s)
				}
				row[k] = s / l[k*n+k]
			}
		}
	}
}

// groupMeans fills pg (groups x t, row-major) with each group's weighted
// mean over its particles of the soft count Phi(mu*_p / sigma_j) (or the
// hard count's indicator), where mu*_p = w_j . z_p for the rows w_j of w
// (t x n), plus offset_j if offset is not nil. isig holds 1/sigma_j.
func groupMeans(pg []float64, c *Cloud, w, offset, sigma, isig []float64, n, t int, opt PredictOptions) {
	type unit struct{ g, p0, p1 int }
	var units []unit
	for g := range c.Groups {
		m := c.Groups[g].Len()
		if opt.Hard {
			// One unit per group: the hard count's streams run through the
			// group's particles in order.
			units = append(units, unit{g, 0, m})
			continue
		}
		for p0 := 0; p0 < m; p0 += predictUnit {
			units = append(units, unit{g, p0, min(m, p0+predictUnit)})
		}
	}
	acc := make([]float64, len(units)*t)
	workers := opt.Threads
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(units)))
	next := make(chan int, len(units))
	for u := range units {
		next <- u
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ws gemm.Workspace
			mu := make([]float64, predictTile*t)
			var rngs []interface{ NormFloat64() float64 }
			for ui := range next {
				u := units[ui]
				grp := &c.Groups[u.g]
				a := acc[ui*t : ui*t+t]
				if opt.Hard {
					rngs = rngs[:0]
					for j := range t {
						rngs = append(rngs, NewStream(opt.Seed, domainPredict, uint64(opt.First+j)<<20|uint64(u.g)))
					}
				}
				for p0 := u.p0; p0 < u.p1; p0 += predictTile {
					mt := min(predictTile, u.p1-p0)
					// mu (mt x t) = Z[p0:p0+mt] (mt x n) W' (n x t).
					ws.NT(mt, t, n, grp.Z[p0*n:], n, w, n, mu, t, false, 1)
					for p := range mt {
						wp := math.Exp(grp.LogW[p0+p])
						row := mu[p*t : p*t+t]
						if offset != nil {
							for j, o := range offset {
								row[j] += o
							}
						}
						if !opt.Hard {
							phiAccumulate(a, row, isig, wp)
							continue
						}
						for j := range t {
							if row[j]+sigma[j]*rngs[j].NormFloat64() > 0 {
								a[j] += wp
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	clear(pg)
	for ui, u := range units {
		row := pg[u.g*t : u.g*t+t]
		for j, v := range acc[ui*t : ui*t+t] {
			row[j] += v
		}
	}
}
