//go:build !linux

package sysmem

// Floats returns n zeroed float64 values.
func Floats(n int) []float64 { return make([]float64, n) }

// AdviseHeap does nothing: huge pages are asked for on Linux only.
func AdviseHeap(n int64) {}
