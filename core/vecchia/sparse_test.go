package vecchia

import (
	"math"
	"slices"
	"testing"
)

// TestIC0Prior checks that the incomplete factorisation of A'A alone (no
// sites) in A's pattern is A itself: the reverse Cholesky factor of A'A
// has no fill; and with a dense block, the same.
func TestIC0Prior(t *testing.T) {
	m := classifier2D(t, 300, 10)
	a := newTri(m)
	a.priorFactor(m)
	for _, pat := range []*tri{newTri(m), hybridPattern(m, a, 100)} {
		w := make([]float64, m.N)
		pd, po := make([]float64, m.N), make([]float64, len(pat.nbr))
		if _, err := pat.ic0(a, w, pd, po); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for k := range m.N {
			worst = max(worst, math.Abs(pat.diag[k]-a.diag[k])/a.diag[k])
			// A's entries in pat's pattern; the others 0.
			for q := pat.start[k]; q < pat.start[k+1]; q++ {
				want := 0.0
				for qa := a.start[k]; qa < a.start[k+1]; qa++ {
					if a.nbr[qa] == pat.nbr[q] {
						want = a.off[qa]
					}
				}
				worst = max(worst, math.Abs(pat.off[q]-want)/a.diag[k])
			}
		}
		if worst > 1e-8 {
			t.Errorf("pattern of %d entries: largest relative difference from A %g", len(pat.nbr), worst)
		}
	}
}

// TestIC0Full checks that the factorisation in the full pattern is the
// exact reverse Cholesky factor: T'T = A'A + diag(w).
func TestIC0Full(t *testing.T) {
	m := classifier2D(t, 120, 6)
	n := m.N
	a := newTri(m)
	a.priorFactor(m)
	w := make([]float64, n)
	for k := range w {
		w[k] = 0.1 + 0.5*float64(k%7)/7
	}
	full := fullPattern(m)
	if _, err := full.ic0(a, w, make([]float64, n), make([]float64, len(full.nbr))); err != nil {
		t.Fatal(err)
	}
	dense := func(p *tri) []float64 {
		d := make([]float64, n*n)
		for k := range n {
			d[k*n+k] = p.diag[k]
			for q := p.start[k]; q < p.start[k+1]; q++ {
				d[k*n+int(p.nbr[q])] = p.off[q]
			}
		}
		return d
	}
	gram := func(d []float64) []float64 { // d'd
		g := make([]float64, n*n)
		for i := range n {
			for j := range n {
				s := 0.0
				for r := range n {
					s += d[r*n+i] * d[r*n+j]
				}
				g[i*n+j] = s
			}
		}
		return g
	}
	want, got := gram(dense(a)), gram(dense(full))
	for k := range n {
		want[k*n+k] += w[k]
	}
	for i := range want {
		scale := math.Sqrt(want[(i/n)*n+i/n] * want[(i%n)*n+i%n])
		if e := math.Abs(got[i]-want[i]) / scale; e > 1e-9 {
			t.Fatalf("entry (%d, %d): T'T %v, A'A + W %v", i/n, i%n, got[i], want[i])
		}
	}
}

// TestProductsFrom checks that EP's pattern, its A'A taken from the
// products on A's own pattern after the dense block (productsFrom), has
// the bits of its own products (products), with repeated points and
// blocks from none to every row.
func TestProductsFrom(t *testing.T) {
	rep, _ := oneFactorModelSmall(600, 5, []int{7, 300, 599}, 200)
	for _, m := range []*Model{classifier2D(t, 3000, 12), rep} {
		n := m.N
		a := newTri(m)
		a.priorFactor(m)
		pc := newPairCache(a)
		pre := newTri(m)
		pre.pc = pc
		pre.assemble(a, make([]float64, n), make([]float64, n), make([]float64, len(pre.nbr)))
		for _, k0 := range []int{0, 1, 37, 400, n} {
			want := hybridPattern(m, a, k0)
			want.pc = pc
			want.assemble(a, make([]float64, n), make([]float64, n), make([]float64, len(want.nbr)))
			got := hybridPattern(m, a, k0)
			got.pc = pc
			got.productsFrom(a, pre)
			if got.aaOf != a {
				t.Fatalf("n %d, block %d: the products were not taken from A's pattern", n, k0)
			}
			if !slices.Equal(got.aaD, want.aaD) || !slices.Equal(got.aaO, want.aaO) {
				t.Errorf("n %d, block %d: A'A differs from the pattern's own products", n, k0)
			}
		}
		// Another matrix's products are not taken.
		other := hybridPattern(m, a, 37)
		other.productsFrom(newTri(m), pre)
		if other.aaOf != nil {
			t.Errorf("n %d: products of another A taken", n)
		}
	}
}
