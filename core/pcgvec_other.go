//go:build !amd64 || purego

package core

// zigVector reports whether NormFloats' vector path runs: never here.
func zigVector() bool { return false }

// zigRects is NormFloats' vector path: none here (pcgvec_amd64.go).
func zigRects(g *pcg, z []float64) int { return 0 }

// pcgOutputs is the generator's vector path: none here (pcgvec_amd64.go).
func pcgOutputs(s *pcg, dst []uint64, n int) bool { return false }
