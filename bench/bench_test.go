package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// BenchmarkEstimate times one estimate of an Experiment 1 orthant
// probability (one-factor covariance, OrderSharp, default groups), ordering,
// factorisation and tilting excluded. It reports particles/s (M per
// second), particle-steps/s (M N per second) and the effective GFLOP/s of
// the conditional means (M N^2/2 multiply-adds, 2 flops each).
//
//	go test ./bench -run '^$' -bench Estimate -count 10
func BenchmarkEstimate(b *testing.B) {
	for _, method := range []core.Method{core.MethodMET, core.MethodSMC} {
		for _, n := range []int{200, 500, 1000} {
			m := 10000
			b.Run(fmt.Sprintf("method=%v/n=%d/m=%d", method, n, m), func(b *testing.B) {
				d := Loadings(n, 1)
				f, err := core.Prepare(core.Box{N: n, Cov: oracle.OneFactor(d)}, core.Candidate{Method: method, Order: core.OrderSharp}, 1, 0)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := core.Estimate(context.Background(), f, core.Config{Method: method, Samples: m, Seed: 1}); err != nil {
						b.Fatal(err)
					}
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(m)/sec, "particles/s")
				b.ReportMetric(float64(m)*float64(n)/sec, "particle-steps/s")
				b.ReportMetric(float64(m)*float64(n)*float64(n)/sec/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkTilt times the minimax tilting solve.
func BenchmarkTilt(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			f, err := core.NewFactor(core.Box{N: n, Cov: oracle.OneFactor(Loadings(n, 1))}, core.Ordering{Kind: core.OrderGreedy}, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Tilt(core.MaxTiltIterations); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFactor times ordering and factorising an N x N covariance.
func BenchmarkFactor(b *testing.B) {
	for _, n := range []int{200, 1000} {
		for _, kind := range []core.OrderKind{core.OrderSharp, core.OrderGreedy, core.OrderShuffle} {
			b.Run(fmt.Sprintf("n=%d/order=%v", n, kind), func(b *testing.B) {
				box := core.Box{N: n, Cov: oracle.OneFactor(Loadings(n, 1))}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := core.NewFactor(box, core.Ordering{Kind: kind}, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
