package sysmem

import (
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// AdviseHeap asks that the next n bytes or so of the Go heap's growth
// come in huge pages (madvise MADV_HUGEPAGE: 2 MiB pages where the
// kernel's transparent huge pages are in madvise mode, as on our
// machines), so that memory touched for the first time faults once a 2
// MiB page rather than once a 4 KiB page. The runtime maps the heap
// without that advice, and first touches are dear on virtual machines:
// gpc-train's preparation at N = 10^6 faulted 1.2 million times (its
// whole 5 GB peak, each page once), about 18 CPU seconds of its 147
// wall seconds (docs/vecchia.md, Huge pages for the preparation).
//
// It allocates n bytes, which a heap with fewer free bytes maps fresh
// and does not touch, advises their pages, drops them and collects, so
// that the runtime's allocator, which takes the lowest free addresses
// first, places what comes next in the advised range (the advice stays
// with the address range when the runtime later returns pages to the
// system). A collection is the call's cost: call it when the live heap
// is small. It does nothing for n under 256 MiB, beyond half the
// machine's memory (then half of it), or where the system commits
// memory strictly (vm.overcommit_memory 2), where reserving n bytes
// might fail.
func AdviseHeap(n int64) {
	const minAdvise = 256 << 20
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		n = min(n, int64(si.Totalram)*int64(si.Unit)/2)
	}
	if n < minAdvise || strictCommit() {
		return
	}
	// In arena-sized pieces, so that the runtime clears only the pieces
	// that reuse memory it has had (it clears a whole allocation where
	// any of it has been used before; fresh pages are zero already).
	const piece = 64 << 20
	pieces := make([][]byte, 0, n/piece+1)
	for left := n; left > 0; left -= piece {
		b := make([]byte, min(left, piece))
		if w := wholePages(b); len(w) > 0 {
			_ = unix.Madvise(w, unix.MADV_HUGEPAGE)
		}
		pieces = append(pieces, b)
	}
	runtime.KeepAlive(pieces)
	runtime.GC()
}

// strictCommit reports whether the system refuses to commit more memory
// than it has (vm.overcommit_memory 2).
func strictCommit() bool {
	v, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && strings.TrimSpace(string(v)) == "2"
}
