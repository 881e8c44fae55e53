//go:build !amd64 || purego

package core

// haveAVX2 is false: the filter's per-particle loops run in Go.
const haveAVX2 = false

func epBoundsAVX2(ec *epConsts, pt, zt *float64, m int, lrow *float64, kk int, lo, hi, off, logw *float64, n int) {
	panic("core: no assembly kernels on this architecture")
}

func epStoreAVX2(zt, off, z, logw *float64, sl, inc float64, n int) {
	panic("core: no assembly kernels on this architecture")
}

func subLoadAVX2(pt, part *float64, m, n int) {
	panic("core: no assembly kernels on this architecture")
}

func subStoreAVX2(zb, zt *float64, m, n int) {
	panic("core: no assembly kernels on this architecture")
}

func conditionAVX2(c *[4]float64, pt, zt *float64, m int, lrow *float64, kk int, lo, hi *float64, n int) {
	panic("core: no assembly kernels on this architecture")
}

func smcStoreAVX2(zt, zk, logw *float64, mu, inc float64, n int) {
	panic("core: no assembly kernels on this architecture")
}
