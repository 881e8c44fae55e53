//go:build !amd64 || purego

package core

// vecSupported lists the Go kernels of fastnorm.go alone: they run on other
// architectures, and on amd64 with the build tag purego.
func vecSupported() []vecPath { return []vecPath{vecGeneric} }

func tailWeightsAVX512(lo, t, c, lg, logw *float64, n int) (mx float64, special int) {
	panic("core: no assembly kernels on this architecture")
}

func tailDrawsAVX512(z, lo, t, c, u *float64, n int) (special int) {
	panic("core: no assembly kernels on this architecture")
}

func expSumsAVX512(x *float64, n int, mx float64) (s1, s2 float64) {
	panic("core: no assembly kernels on this architecture")
}

func phiAccumulateAVX512(acc, mu, isig *float64, n int, w float64) {
	panic("core: no assembly kernels on this architecture")
}

func tailWeightsAVX2(lo, t, c, lg, logw *float64, n int) (mx float64, special int) {
	panic("core: no assembly kernels on this architecture")
}

func tailDrawsAVX2(z, lo, t, c, u *float64, n int) (special int) {
	panic("core: no assembly kernels on this architecture")
}

func expSumsAVX2(x *float64, n int, mx float64, a, b *[8]float64) {
	panic("core: no assembly kernels on this architecture")
}

func phiAccumulateAVX2(acc, mu, isig *float64, n int, w float64) {
	panic("core: no assembly kernels on this architecture")
}
