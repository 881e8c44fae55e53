package sysmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later).
const madvPopulateWrite = 23

// Floats returns n zeroed float64 values. When they are many, their pages
// are asked to be huge (madvise MADV_HUGEPAGE: 2 MiB pages where the
// kernel's transparent huge pages are in madvise mode, as on our machines)
// and are committed at once (MADV_POPULATE_WRITE). The particle arrays are
// written a block of variables at a time, a few hundred bytes per particle
// row, all over a gigabyte: with 4 KiB pages nearly every row is a TLB miss
// and the first pass a page fault per page. Measured on the 2-core machine,
// gpc-train --samples 1000000 at N = 200 (a 1.6 GB cloud): 434,535 minor
// page faults and 9.98 s wall with 4 KiB pages committed at once, 60,970
// and 5.62 s with huge pages (and, before the commit at once, a fault per
// page cost five times the batch). Where a call is not supported, the
// pages are ordinary and fault in as usual.
func Floats(n int) []float64 {
	z := make([]float64, n)
	if n*8 < 1<<21 {
		return z
	}
	if b := wholePages(unsafe.Slice((*byte)(unsafe.Pointer(&z[0])), n*8)); len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
		_ = unix.Madvise(b, madvPopulateWrite)
	}
	return z
}

// wholePages returns the whole 4 KiB pages inside b (empty if none), the
// range madvise may be given.
func wholePages(b []byte) []byte {
	const page = 4096
	if len(b) == 0 {
		return nil
	}
	p := int(uintptr(unsafe.Pointer(&b[0])) % page)
	start := (page - p) % page      // the first page boundary in b
	end := len(b) - (p+len(b))%page // the last
	if end <= start {
		return nil
	}
	return b[start:end]
}
