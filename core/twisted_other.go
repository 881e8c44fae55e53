//go:build !amd64 || purego

package core

func twistedWeightsAVX2(s *TwistedStep, mh, c, lo, logw *float64, n int) {
	panic("core: no assembly kernels on this architecture")
}

func twistedMovesAVX2(s *TwistedStep, c, z, nz, mu, mh *float64, xk *float32, corr *float64, n int) {
	panic("core: no assembly kernels on this architecture")
}
