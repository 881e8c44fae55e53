package core

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAxpyPaths checks Axpy and Axpy2 against their loops, bit for bit, on
// every vector path and every length up to 40.
func TestAxpyPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, path := range VecPaths() {
		if err := SetVecPath(path); err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= 40; n++ {
			x, y, z := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range x {
				x[i], y[i], z[i] = r.NormFloat64(), r.NormFloat64(), r.NormFloat64()
			}
			a, b := r.NormFloat64(), r.NormFloat64()
			wy, wz := make([]float64, n), make([]float64, n)
			for i := range x {
				wy[i], wz[i] = math.FMA(a, x[i], y[i]), math.FMA(b, x[i], z[i])
			}
			y1 := append([]float64(nil), y...)
			Axpy(y1, a, x)
			Axpy2(y, z, a, b, x)
			for i := range x {
				if y1[i] != wy[i] || y[i] != wy[i] || z[i] != wz[i] {
					t.Fatalf("%s, n = %d, element %d: Axpy %v, Axpy2 %v %v, want %v %v", path, n, i, y1[i], y[i], z[i], wy[i], wz[i])
				}
			}
		}
	}
	if err := SetVecPath(VecPaths()[0]); err != nil {
		t.Fatal(err)
	}
}
