package core

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCombineF32Paths checks CombineF32 and Combine2F32 against their
// definition, bit for bit, on every path, for every chunk remainder.
func TestCombineF32Paths(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 4000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, path := range VecPaths() {
		if err := SetVecPath(path); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 24, 31, 32, 33, 40, 63, 64, 100, 156} {
			for _, nj := range []int{0, 1, 5, 33} {
				off := make([]int64, nj)
				a, b := make([]float64, nj), make([]float64, nj)
				for j := range off {
					off[j] = int64(r.IntN(len(x) - n + 1))
					a[j], b[j] = r.NormFloat64(), r.NormFloat64()
				}
				if nj > 0 {
					off[0] = int64(len(x) - n) // a row that ends the array
				}
				y0, z0 := make([]float64, n), make([]float64, n)
				for i := range y0 {
					y0[i], z0[i] = r.NormFloat64(), r.NormFloat64()
				}
				wy, wz := append([]float64(nil), y0...), append([]float64(nil), z0...)
				for j, o := range off {
					for i := range wy {
						wy[i] = math.FMA(a[j], float64(x[int(o)+i]), wy[i])
						wz[i] = math.FMA(b[j], float64(x[int(o)+i]), wz[i])
					}
				}
				// Each output is followed by 40 sentinels that the masked
				// stores must leave alone.
				pad := func(v []float64) []float64 {
					p := make([]float64, len(v)+40)
					for i := range p {
						p[i] = -7
					}
					return p[:copy(p, v)]
				}
				y1 := pad(y0)
				CombineF32(y1, x, off, a)
				y2, z2 := pad(y0), pad(z0)
				Combine2F32(y2, z2, x, off, a, b)
				for _, v := range [][]float64{y1, y2, z2} {
					for _, s := range v[n : n+40] {
						if s != -7 {
							t.Fatalf("%s, n = %d, %d rows: a value past the end was written", path, n, nj)
						}
					}
				}
				for i := range wy {
					if y1[i] != wy[i] || y2[i] != wy[i] || z2[i] != wz[i] {
						t.Fatalf("%s, n = %d, %d rows, element %d: CombineF32 %v, Combine2F32 %v %v, want %v %v", path, n, nj, i, y1[i], y2[i], z2[i], wy[i], wz[i])
					}
				}
			}
		}
	}
	if err := SetVecPath(VecPaths()[0]); err != nil {
		t.Fatal(err)
	}
}

// TestSpreadF32Paths checks SpreadF32 on every vector path against its
// definition (the fma in float64 of each row's widened values, rounded to
// float32, the rows in order), for lengths around the vector's eight and
// rows that end the array, and that nothing past a row is written.
func TestSpreadF32Paths(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, path := range VecPaths() {
		if err := SetVecPath(path); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 40} {
			for _, nj := range []int{0, 1, 5, 33} {
				// Rows apart (n + 3 values each, the 3 sentinels ahead
				// of the row), in a shuffled order: one of them ends the
				// array.
				x0 := make([]float32, nj*(n+3))
				for i := range x0 {
					x0[i] = float32(r.NormFloat64())
				}
				off := make([]int64, nj)
				for j, q := range r.Perm(nj) {
					off[j] = int64(q*(n+3) + 3)
				}
				a, v := make([]float64, nj), make([]float64, n)
				for j := range a {
					a[j] = r.NormFloat64()
				}
				for i := range v {
					v[i] = r.NormFloat64()
				}
				want := append([]float32(nil), x0...)
				for j, o := range off {
					for i := range v {
						want[int(o)+i] = float32(math.FMA(-a[j], v[i], float64(want[int(o)+i])))
					}
				}
				got := append([]float32(nil), x0...)
				SpreadF32(got, off, a, v)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s, n = %d, %d rows, value %d: %v, want %v", path, n, nj, i, got[i], want[i])
					}
				}
			}
		}
	}
	if err := SetVecPath(VecPaths()[0]); err != nil {
		t.Fatal(err)
	}
}

// TestCombineF32Range checks that a row beyond the array panics.
func TestCombineF32Range(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a row out of range")
		}
	}()
	CombineF32(make([]float64, 8), make([]float32, 10), []int64{3}, []float64{1})
}

// TestPrefetchRowsF32 checks that the prefetch hint accepts rows that end
// the array or lie outside it (skipped) and changes no value.
func TestPrefetchRowsF32(t *testing.T) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(i)
	}
	for _, n := range []int{0, 1, 7, 16, 17, 156, 1000} {
		PrefetchRowsF32(x, []int64{0, int64(len(x) - n), int64(len(x)), -1, int64(len(x) - n + 1), 1 << 40}, n)
	}
	PrefetchRowsF32(nil, []int64{0}, 4)
	for i, v := range x {
		if v != float32(i) {
			t.Fatalf("x[%d] = %v after a prefetch", i, v)
		}
	}
}

// TestPrefetchRowSpansF32 checks that the spans' hint accepts spans at
// the rows' ends, empty ones and rows out of range, and changes no value.
func TestPrefetchRowSpansF32(t *testing.T) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(i)
	}
	for _, n := range []int{1, 7, 16, 17, 156, 1000} {
		in := []int64{0, int64(len(x) - n)}
		out := append(in, int64(len(x)), -1, int64(len(x)-n+1), 1<<40)
		for _, span := range [][2]int{{0, n}, {0, 1}, {n - 1, n}, {n / 2, n}, {n / 2, n / 2}, {1, 0}, {-1, n}} {
			PrefetchRowSpansF32(x, in, span[0], span[1])
			PrefetchRowSpansF32(x, out, span[0], span[1])
		}
	}
	PrefetchRowSpansF32(nil, []int64{0}, 0, 4)
	PrefetchRowSpansF32(x, nil, 0, 4)
	for i, v := range x {
		if v != float32(i) {
			t.Fatalf("x[%d] = %v after a prefetch", i, v)
		}
	}
}

// TestPrefetch checks that the span hint takes spans of any element size
// and length (empty, one value, an odd number of bytes, the end of an
// array) and changes no value.
func TestPrefetch(t *testing.T) {
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64(i)
	}
	for _, n := range []int{0, 1, 7, 8, 9, 1000} {
		Prefetch(x[len(x)-n:])
		Prefetch(x[:n])
	}
	b := make([]byte, 1001)
	for i := range b {
		b[i] = byte(i)
	}
	for _, n := range []int{1, 3, 63, 64, 65, 1001} {
		Prefetch(b[len(b)-n:])
	}
	type three struct{ a, b, c uint8 }
	Prefetch(make([]three, 5)[4:])
	Prefetch([]int32(nil))
	for i, v := range x {
		if v != float64(i) {
			t.Fatalf("x[%d] = %v after a prefetch", i, v)
		}
	}
	for i, v := range b {
		if v != byte(i) {
			t.Fatalf("b[%d] = %v after a prefetch", i, v)
		}
	}
}
