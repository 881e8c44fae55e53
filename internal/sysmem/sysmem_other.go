//go:build !linux

package sysmem

// Floats returns n zeroed float64 values.
func Floats(n int) []float64 { return make([]float64, n) }
