package core_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// TestWidenPiloted checks that MethodEP's proposal below core.EPLargeN
// variables widens its sites where the pilot finds that it pays and keeps
// EP's own where it does not: on RBF classification at beta = 10 (two
// overlapping 2-D classes, N = 200) the prepared factor is not the one of
// EP's own sites, on the linear kernel's orthant (the paper's Experiment 2
// family, N = 400, where widening multiplies the standard error by about 4)
// it is, bit for bit; and that the choice does not depend on the thread
// count.
func TestWidenPiloted(t *testing.T) {
	ord := core.Ordering{Kind: core.OrderGreedy}
	same := func(box core.Box) bool {
		t.Helper()
		w, err := core.PrepareEP(box, ord, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := core.PrepareEPUnwidened(box, ord, 0)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(w.L, p.L) && slices.Equal(w.Perm, p.Perm)
	}
	if !same(linearClassifierBox(400, 1).box) {
		t.Error("linear kernel, N = 400: the sites were widened")
	}
	const n = 200
	r := rand.New(rand.NewPCG(7, 19))
	x, y := make([]float64, 2*n), make([]float64, n)
	for i := range n {
		x[2*i], x[2*i+1], y[i] = r.NormFloat64(), r.NormFloat64(), 1
		if i%2 == 1 {
			x[2*i], x[2*i+1], y[i] = 1+r.NormFloat64(), 1+r.NormFloat64(), -1
		}
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	box := core.Box{N: n, Cov: gp.ClassifierCov(k, x, 2, y)}
	if same(box) {
		t.Error("RBF, beta 10, N = 200: the sites were not widened")
	}
	a, err := core.PrepareEP(box, ord, 0)
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	b, err := core.PrepareEP(box, ord, 0)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.L, b.L) {
		t.Error("RBF, beta 10, N = 200: the factor depends on the thread count")
	}
}
