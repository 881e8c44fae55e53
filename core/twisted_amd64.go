//go:build !purego

package core

// twistedWeightsAVX2 is TwistedStep.Weights for n particles (a multiple
// of 4).
//
//go:noescape
func twistedWeightsAVX2(s *TwistedStep, mh, c, lo, logw *float64, n int)

// twistedMovesAVX2 is TwistedStep.Moves for n particles (a multiple of 4);
// nz is nil if s.Rsd is
// not positive (no noise).
//
//go:noescape
func twistedMovesAVX2(s *TwistedStep, c, z, nz, mu, mh *float64, xk *float32, corr *float64, n int)
