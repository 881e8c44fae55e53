package vecchia

import (
	"math"
	"testing"

	"gpc/core/gp"
)

// TestIC0Prior checks that the incomplete factorisation of A'A alone (no
// sites) in A's pattern is A itself: the reverse Cholesky factor of A'A
// has no fill.
func TestIC0Prior(t *testing.T) {
	x, y := twoClass(300, 1)
	s, err := NewStructure(x, 300, 2, Options{M: 10})
	if err != nil {
		t.Fatal(err)
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	m, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := newTri(m)
	a.priorFactor(m)
	for _, pat := range []*tri{newTri(m), twoHop(m)} {
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
