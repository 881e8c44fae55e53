//go:build !unix

package bench

import "time"

// processCPU is unknown here: the benchmarks leave out their CPU-time
// metrics.
func processCPU() time.Duration { return 0 }

// peakRSS is unknown here (0).
func peakRSS() int64 { return 0 }
