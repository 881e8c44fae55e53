package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
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

// factorCopies is how many N x N float64 matrices the preparation of
// one candidate allocates, the covariance as read being in memory already
// (it is not available when the plan is made): from core.EPLargeN
// variables on, EP's route holds R's factor and Sigma, which becomes its
// own factor (core/ep.go, epLazy), and met's the ordered factor and the
// tilting solve's matrix (core/factor.go, core/tilt.go); with the
// covariance, the 3 N x N of --max-memory's help. factorScratch is the
// float64s per variable of their other arrays (EP's delayed updates, the
// product's packed blocks, the factor's vectors). Below core.EPLargeN,
// EP recomputes Sigma from its sites with two more N x N matrices
// (smallFactorCopies), a few MB at most. From core.EPLargeN on, EP's
// widening of its sites (core/widen.go) holds Sigma's columns of the
// widened variables and their Woodbury matrix besides: widenCopies of an
// N x N.
const widenCopies = core.WidenFractionLarge * (1 + core.WidenFractionLarge)

const (
	factorCopies      = 2
	factorScratch     = 2048
	smallFactorCopies = 4
)

// factorBytes is the memory the preparations of cands take for n
// variables, each candidate's counted as every candidate's factor is held
// until the pilots have chosen.
func factorBytes(n int, cands []core.Candidate) float64 {
	copies := float64(factorCopies)
	if n < core.EPLargeN {
		copies = smallFactorCopies
	}
	k := float64(max(1, len(cands)))
	mats := copies * k
	if n >= core.EPLargeN && slices.ContainsFunc(cands, func(c core.Candidate) bool { return c.Method == core.MethodEP }) {
		// The widening's matrices are let go before another candidate
		// is prepared.
		mats = max(mats, copies+widenCopies)
	}
	nf := float64(n)
	return 8 * (mats*nf + factorScratch*k) * nf
}

// memoryPlan decides, for an estimate of N variables with cfg on a machine
// with avail bytes free, what cannot fit and the memory limit for the
// particles (core.Config.MaxMemory), so that the story is one:
//
//   - the factorisations (one per candidate the pilots compare) must fit in
//     memory: else the input is too large (exit 65);
//   - with keep (gpc-mcmc's clouds, kept for the test posteriors), the
//     whole cloud must fit in the memory left: else the flags ask too much
//     (exit 80); gpc-train streams its cloud and keeps none;
//   - the particles in flight are bounded by --max-memory (default: half
//     the available memory), never more than the memory left after the
//     factorisations: groups that do not fit are run fewer at a time, or
//     split into more, smaller groups (core.Config.MaxMemory); a run that
//     no split fits (--groups fixed their count, or more than
//     core.MaxSplitGroups would be needed) is refused (exit 80).
func memoryPlan(avail int64, flag, name string, n int, cfg core.Config, cands []core.Candidate, keep bool) (limit int64, err error) {
	factor := factorBytes(n, cands)
	a := float64(avail)
	if factor > a {
		return 0, &denseTooLarge{msg: fmt.Sprintf("%s: %d variables: factorising the %d x %d covariance needs about %s, and only %s of memory is available", name, n, n, n, format.Bytes(factor), format.Bytes(a))}
	}
	if cloud := float64(core.CloudBytes(cfg.Samples, n)); keep && factor+cloud > a {
		return 0, usagef("%s %d: a cloud of %d particles of %d variables needs about %s, and only %s of memory is available: use fewer samples", flag, cfg.Samples, cfg.Samples, n, format.Bytes(factor+cloud), format.Bytes(a))
	}
	limit = max(1, avail-int64(factor))
	advice := "use fewer samples"
	if cfg.MaxMemory > 0 && cfg.MaxMemory < limit {
		limit = cfg.MaxMemory
		// The user's --max-memory is the bound: it may be what is wrong.
		advice = "raise --max-memory or use fewer samples"
	}
	cfg.MaxMemory = limit
	var me *core.MemoryError
	if err := core.CheckMemory(cfg, n); errors.As(err, &me) {
		return 0, usagef("%s %d: %s needs about %s, and only %s of memory is available for the particles: %s", flag, cfg.Samples, me.What, format.Bytes(float64(me.Need)), format.Bytes(float64(me.Limit)), advice)
	}
	return limit, nil
}

// checkEstimateMemory applies memoryPlan with the memory available now:
// it refuses an estimate that cannot fit and lowers cfg.MaxMemory to what
// is left after the factorisations.
func checkEstimateMemory(name string, n int, cfg *core.Config, cands []core.Candidate, keep bool) error {
	return checkMemoryFlag("--samples", name, n, cfg, cands, keep)
}

// checkMemoryFlag is checkEstimateMemory for particles that the flag
// named sets (gpc-tune's --exploit-samples).
func checkMemoryFlag(flag, name string, n int, cfg *core.Config, cands []core.Candidate, keep bool) error {
	avail, ok := availableMemory()
	if !ok {
		return nil
	}
	limit, err := memoryPlan(avail, flag, name, n, *cfg, cands, keep)
	if err != nil {
		return err
	}
	cfg.MaxMemory = limit
	return nil
}

// byteSize is a --max-memory value: a number of bytes with an optional
// unit, k, M, G or T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024),
// with or without a final B; 0 selects defaultMaxMemory.
type byteSize int64

// Decode parses the flag's value (kong.MapperValue).
func (b *byteSize) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("size", &s); err != nil {
		return err
	}
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

// parseByteSize parses a byteSize's text.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(v >= 0) || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a memory size (bytes, or a number with k, M, G, T, Ki, Mi, Gi or Ti)", s)
	}
	return int64(v * float64(mult)), nil
}

// maxMemoryShare is the default --max-memory as a share of the available
// memory (MemAvailable, or the room under a cgroup limit): half, so that a
// pipeline's two tools holding one cloud each still fit.
const maxMemoryShare = 0.5

// defaultMaxMemory is maxMemoryShare of the memory available to the
// process, or 0 (no limit) where it cannot be known.
func defaultMaxMemory() int64 {
	n, ok := availableMemory()
	if !ok {
		return 0
	}
	return max(1, int64(maxMemoryShare*float64(n)))
}

// limit returns the memory limit a --max-memory value selects.
func (b byteSize) limit() int64 {
	if b > 0 {
		return int64(b)
	}
	return defaultMaxMemory()
}
