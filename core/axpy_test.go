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

// TestCombinePaths checks Combine and Combine2 against Axpy, bit for bit,
// on every path.
func TestCombinePaths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 4000)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for _, path := range VecPaths() {
		if err := SetVecPath(path); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 156} {
			for _, nj := range []int{0, 1, 5, 33} {
				off := make([]int64, nj)
				a, b := make([]float64, nj), make([]float64, nj)
				for j := range off {
					off[j] = int64(r.IntN(len(x) - n + 1))
					a[j], b[j] = r.NormFloat64(), r.NormFloat64()
				}
				y0, z0 := make([]float64, n), make([]float64, n)
				for i := range y0 {
					y0[i], z0[i] = r.NormFloat64(), r.NormFloat64()
				}
				wy, wz := append([]float64(nil), y0...), append([]float64(nil), z0...)
				for j, o := range off {
					for i := range wy {
						wy[i] = math.FMA(a[j], x[int(o)+i], wy[i])
						wz[i] = math.FMA(b[j], x[int(o)+i], wz[i])
					}
				}
				y1 := append([]float64(nil), y0...)
				Combine(y1, x, off, a)
				y2, z2 := append([]float64(nil), y0...), append([]float64(nil), z0...)
				Combine2(y2, z2, x, off, a, b)
				for i := range wy {
					if y1[i] != wy[i] || y2[i] != wy[i] || z2[i] != wz[i] {
						t.Fatalf("%s, n = %d, %d rows, element %d: Combine %v, Combine2 %v %v, want %v %v", path, n, nj, i, y1[i], y2[i], z2[i], wy[i], wz[i])
					}
				}
			}
		}
	}
	if err := SetVecPath(VecPaths()[0]); err != nil {
		t.Fatal(err)
	}
}

// TestSpreadPaths checks Spread against the loop of its definition, bit
// for bit, on every path, on rows that do not overlap, in a scrambled
// order, of lengths that end a vector early and late, and that it
// refuses a row out of range.
func TestSpreadPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, path := range VecPaths() {
		if err := SetVecPath(path); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 16, 31} {
			for _, nj := range []int{0, 1, 5, 33} {
				x0 := make([]float64, (nj+2)*(n+3))
				for i := range x0 {
					x0[i] = r.NormFloat64()
				}
				off := make([]int64, nj)
				for j, p := range r.Perm(nj + 2)[:nj] {
					off[j] = int64(p*(n+3) + r.IntN(4))
				}
				a, v := make([]float64, nj), make([]float64, n)
				for j := range a {
					a[j] = r.NormFloat64()
				}
				for i := range v {
					v[i] = r.NormFloat64()
				}
				want := append([]float64(nil), x0...)
				for j, o := range off {
					for i := range v {
						want[int(o)+i] = math.FMA(-a[j], v[i], want[int(o)+i])
					}
				}
				x := append([]float64(nil), x0...)
				Spread(x, off, a, v)
				for i := range x {
					if math.Float64bits(x[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%s, n = %d, %d rows, element %d: %v, want %v", path, n, nj, i, x[i], want[i])
					}
				}
			}
		}
	}
	if err := SetVecPath(VecPaths()[0]); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Spread of a row past the end did not panic")
		}
	}()
	Spread(make([]float64, 10), []int64{3}, []float64{1}, make([]float64, 8))
}
