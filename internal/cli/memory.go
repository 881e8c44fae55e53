package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"gpc/core"
	"gpc/format"
)

// A run that cannot fit in memory must be refused before it starts: Go
// cannot recover from a failed allocation (the runtime aborts with a stack
// dump, exit 2), and with overcommit the kernel's OOM killer ends the
// process (SIGKILL) long after the allocation seemed to succeed. So the
// tools estimate the memory of their large arrays and compare it with what
// the machine has free.

// availableMemory returns the bytes this process can still take: the
// kernel's MemAvailable, or less where a cgroup limits the process; ok is
// false where neither can be read (then nothing is checked).
func availableMemory() (n int64, ok bool) {
	if v, found := memInfo("/proc/meminfo", "MemAvailable:"); found {
		n, ok = v, true
	}
	for _, lim := range cgroupRoom() {
		if !ok || lim < n {
			n, ok = lim, true
		}
	}
	return n, ok
}

// memInfo reads a "Key: N kB" line of /proc/meminfo, in bytes.
func memInfo(path, key string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// cgroupRoom returns the room left under the memory limits of the
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes), where set.
func cgroupRoom() []int64 {
	var out []int64
	room := func(limitPath, usagePath string) {
		lim, err1 := readInt(limitPath)
		use, err2 := readInt(usagePath)
		if err1 == nil && err2 == nil && lim > 0 && lim < 1<<60 {
			out = append(out, max(0, lim-use))
		}
	}
	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if path, ok := strings.CutPrefix(line, "0::"); ok {
				dir := filepath.Join("/sys/fs/cgroup", path)
				room(filepath.Join(dir, "memory.max"), filepath.Join(dir, "memory.current"))
			}
		}
	}
	room("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")
	return out
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// memoryBudget is what a tool may allocate: the available memory, or 0
// (no limit) where it cannot be known.
func memoryBudget() int64 {
	n, ok := availableMemory()
	if !ok {
		return 0
	}
	return max(n, 1)
}

// The estimator's large arrays, in float64 values (core/filter.go,
// core/factor.go, core/tilt.go): a factored covariance is about factorCopies
// N x N matrices (the ordered copy and its Cholesky factor, the tilt's
// matrix, the ordering's scratch); each particle of a group in flight holds
// its N draws (unless they are kept in the cloud) and workPerParticle
// values of per-step state plus two blocks of partial means.
const (
	factorCopies    = 4
	workPerParticle = 12
)

// estimateMemory returns the bytes an estimate of N variables with cfg
// needs: factor for the factorisations (one per candidate the pilots
// compare), particles for the particle arrays.
func estimateMemory(n int, cfg core.Config, cands []core.Candidate, keep bool) (factor, particles float64) {
	nf := float64(n)
	factor = 8 * factorCopies * nf * nf * float64(max(1, len(cands)))
	method := cfg.Method
	if len(cands) > 0 {
		method = cands[0].Method
	}
	groups := cfg.Groups
	if groups <= 0 {
		groups = core.DefaultGroups(method, cfg.Samples)
	}
	threads := cfg.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	perGroup := float64((cfg.Samples + groups - 1) / groups)
	block := float64(min(n, core.DefaultBlockSize))
	work := float64(min(threads, groups)) * perGroup * (workPerParticle + 3*block)
	if keep {
		particles = 8 * (float64(cfg.Samples)*nf + work)
	} else {
		particles = 8 * (float64(min(threads, groups))*perGroup*nf + work)
	}
	return factor, particles
}

// checkEstimateMemory refuses an estimate that cannot fit: a covariance too
// large to factorise is the input's fault (exit 65), particles that do not
// fit are the flags' (exit 80).
func checkEstimateMemory(name string, n int, cfg core.Config, cands []core.Candidate, keep bool) error {
	return checkMemoryFlag("--samples", name, n, cfg, cands, keep)
}

// checkMemoryFlag is checkEstimateMemory for particles that the flag
// named sets (gpc-tune's --exploit-samples).
func checkMemoryFlag(flag, name string, n int, cfg core.Config, cands []core.Candidate, keep bool) error {
	avail, ok := availableMemory()
	if !ok {
		return nil
	}
	factor, particles := estimateMemory(n, cfg, cands, keep)
	a := float64(avail)
	switch {
	case factor > a:
		return &dataError{fmt.Sprintf("%s: %d variables: factorising the %d x %d covariance needs about %s, and only %s of memory is available", name, n, n, n, format.Bytes(factor), format.Bytes(a))}
	case factor+particles > a:
		return usagef("%s %d: %d particles of %d variables need about %s, and only %s of memory is available: use fewer samples", flag, cfg.Samples, cfg.Samples, n, format.Bytes(factor+particles), format.Bytes(a))
	}
	return nil
}
