//go:build !unix

package gemm

import "time"

// processCPU is unknown here: the benchmarks leave out their CPU-time
// metrics.
func processCPU() time.Duration { return 0 }
