//go:build !purego

package gemm

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkFMAPeak measures the CPU's peak float64 rate on one core (12
// independent fused multiply-adds per step), for each vector width the
// CPU has: the ceiling of BenchmarkPaths's rates (GFLOP/cpu-s on a shared
// machine).
func BenchmarkFMAPeak(b *testing.B) {
	const steps = 1 << 16
	for _, p := range []struct {
		name  string
		ok    bool
		lanes int
		run   func(int)
	}{{"avx512", avx512In(), 8, fmaPeakAVX512}, {"avx2", avx2In(), 4, fmaPeakAVX2}} {
		if !p.ok {
			continue
		}
		b.Run(fmt.Sprintf("path=%s", p.name), func(b *testing.B) {
			cpu0 := processCPU()
			for b.Loop() {
				p.run(steps)
			}
			flops := 2 * 12 * float64(p.lanes) * steps * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}

func avx512In() bool { return slices.Contains(kernels, avx512) }
func avx2In() bool   { return slices.Contains(kernels, avx2) }
