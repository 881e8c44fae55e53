package cli

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// availableMemory is the machine's physical memory, or the memory limit of
// the process's cgroup (v2) if that is lower.
func availableMemory() int64 {
	var si unix.Sysinfo_t
	total := int64(8 << 30)
	if unix.Sysinfo(&si) == nil {
		total = int64(si.Totalram) * int64(si.Unit)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && v < total {
			total = v
		}
	}
	return total
}
