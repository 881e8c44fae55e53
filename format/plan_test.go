package format_test

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// TestPlanRoundTrip: a plan read back holds the factor's parts bit for
// bit (awkward values included: -0, subnormals, the largest float,
// infinite bounds), for a factor with EP twisting, one with tilting and
// one with neither.
func TestPlanRoundTrip(t *testing.T) {
	odd := []float64{math.Copysign(0, -1), 5e-324, math.MaxFloat64, 0.1 + 0.2}
	for _, c := range []core.Candidate{{Method: core.MethodEP, Order: core.OrderGreedy}, {Method: core.MethodMET, Order: core.OrderSharp}, {Method: core.MethodSMC, Order: core.OrderGiven}} {
		n := 4
		cov := []float64{2, 0.5, 0.3, 0.1, 0.5, 1, 0.2, 0.4, 0.3, 0.2, 1.5, 0.6, 0.1, 0.4, 0.6, 1}
		box := core.Box{N: n, Cov: cov, Lower: []float64{0, math.Inf(-1), -1, 0}, Upper: []float64{math.Inf(1), 0.5, 2, math.Inf(1)}}
		f, err := core.Prepare(box, c, 1, 1e-12)
		if err != nil {
			t.Fatal(err)
		}
		parts := f.Parts()
		if parts.Mu != nil {
			parts.Mu = append([]float64(nil), parts.Mu...)
			copy(parts.Mu, odd)
		}
		var b bytes.Buffer
		meta := map[string]string{"gpc:method": c.Method.String()}
		if err := format.WritePlan(&b, &format.Plan{Parts: parts, Meta: meta}, format.NewAllocator()); err != nil {
			t.Fatal(err)
		}
		p, g, err := format.ReadPlan(&b, "plan", format.NewAllocator())
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if !reflect.DeepEqual(bitsOf(p.Parts), bitsOf(parts)) || !reflect.DeepEqual(bitsOf(g.Parts()), bitsOf(parts)) {
			t.Errorf("%v: parts read back\n%+v\nwritten\n%+v", c, p.Parts, parts)
		}
		if p.Meta["gpc:method"] != c.Method.String() || p.Meta[format.KeySchema] != format.SchemaPlan {
			t.Errorf("%v: metadata %v", c, p.Meta)
		}
	}
}

// bitsOf is p with every float64 slice as its bits (DeepEqual tells -0
// from 0 and compares NaNs then).
func bitsOf(p core.FactorParts) map[string]any {
	bits := func(v []float64) []uint64 {
		if v == nil {
			return nil
		}
		out := make([]uint64, len(v))
		for i, x := range v {
			out[i] = math.Float64bits(x)
		}
		return out
	}
	return map[string]any{"n": p.N, "l": bits(p.L), "a": bits(p.A), "b": bits(p.B), "perm": p.Perm,
		"scalars": bits([]float64{p.Jitter, p.MinPivot, p.TiltStats.Residual, p.TiltStats.LogBound, p.EPStats.Change, p.LogZ}),
		"ints":    []int{int(p.Order), p.TiltStats.Iterations, p.TiltStats.Krylov, p.EPStats.Sweeps},
		"mu":      bits(p.Mu), "tau": bits(p.Tau), "kappa": bits(p.Kappa), "m": bits(p.M), "rchol": bits(p.RChol)}
}
