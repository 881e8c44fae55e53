package sysmem

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviseHeap: after AdviseHeap, a large allocation lies in memory
// the kernel may back with huge pages (smaps' THPeligible), where the
// kernel's transparent huge pages are in madvise mode (in always mode
// every allocation is eligible, and in never mode none: skipped).
func TestAdviseHeap(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages not in madvise mode (%q)", strings.TrimSpace(string(mode)))
	}
	if strictCommit() {
		t.Skip("vm.overcommit_memory is 2: AdviseHeap does nothing")
	}
	const n = 128 << 20
	before := make([]byte, n)
	if eligible(t, unsafe.Pointer(&before[len(before)/2])) {
		t.Skip("the heap is eligible before the advice (another test advised it)")
	}
	AdviseHeap(1 << 30)
	after := make([]byte, n)
	if !eligible(t, unsafe.Pointer(&after[len(after)/2])) {
		t.Fatalf("a %d-byte allocation after AdviseHeap is not in huge-page-eligible memory", n)
	}
	// before stays live until now: freed by AdviseHeap's collection, its
	// range (lower than the advised one, and not advised) would be the
	// first that fits after, as it was once in the race detector's run
	// under CI's load, where the collection that frees before came late.
	runtime.KeepAlive(before)
	// Small requests change nothing.
	AdviseHeap(1 << 20)
}

// eligible reports smaps' THPeligible for the mapping that holds p.
func eligible(t *testing.T, p unsafe.Pointer) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	addr := uintptr(p)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 { // a mapping's first line
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "THPeligible:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "THPeligible:")) == "1"
		}
	}
	t.Skip("no THPeligible line for the allocation's mapping")
	return false
}
