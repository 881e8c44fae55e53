package sysmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later).
const madvPopulateWrite = 23

// Floats returns n zeroed float64 values, their pages committed at
// once (madvise MADV_POPULATE_WRITE) when they are many: the particle
// arrays are written once, front to back, and on the virtual machines we
// measured a page fault per 4 KiB page costs five times the batch (3.2 s
// against 0.65 s of CPU per GB). Where the call is not supported the pages
// fault in as usual.
func Floats(n int) []float64 {
	z := make([]float64, n)
	const page = 4096
	if n*8 < 1<<21 {
		return z
	}
	// The interior pages of z, whole pages only.
	b := unsafe.Slice((*byte)(unsafe.Pointer(&z[0])), n*8)
	p := int(uintptr(unsafe.Pointer(&z[0])) % page)
	start := (page - p) % page      // the first page boundary in b
	end := len(b) - (p+len(b))%page // the last
	if end > start {
		_ = unix.Madvise(b[start:end], madvPopulateWrite)
	}
	return z
}
