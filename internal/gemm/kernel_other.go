//go:build !amd64 || purego

package gemm

const useAVX512 = false

func kern3AVX512(a *float64, lda int, bp *float64, kcPad, kc int, c *float64, ldc, strips, mask, add, aks int) {
	panic("gemm: no assembly kernel on this architecture")
}

func kern1AVX512(a *float64, bp *float64, kcPad, kc int, c *float64, groups, mask, add, aks, cgs int) {
	panic("gemm: no assembly kernel on this architecture")
}
