package core

import "fmt"

// Memory. A group of m particles being propagated takes filterBytes(m):
// its draws z (m x N, unless they are kept, when they are the cloud's),
// three m x BlockSize block arrays and a few per-particle vectors. A kept
// cloud takes cloudBytes: M x (N + 1) values. Config.MaxMemory bounds the
// sum of the kept cloud and the groups running at once:
//
//   - fewer groups run at once when the threads' groups do not fit (the
//     result does not change);
//   - when not even one group of the default count fits, the particles are
//     split into more, smaller groups: independent particle systems with
//     their own random streams, combined exactly as groups always are (the
//     size-weighted mean of their estimates, posteriors weighted by them),
//     so the result agrees with the unsplit run's within its standard error;
//   - with Sink, the groups are handed over as they end and one spare
//     group's draws is counted besides the running groups (SinkAhead
//     more, as many as fit beside them);
//   - with Keep, a cloud larger than the limit cannot be returned at once:
//     Estimate returns a *MemoryError (gpc-train streams its cloud through
//     Sink instead).

// MemoryError reports a run whose particles do not fit in Config.MaxMemory.
type MemoryError struct {
	Need, Limit int64
	What        string
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("core: %s needs %.3g GB, more than the memory limit of %.3g GB", e.What, float64(e.Need)/1e9, float64(e.Limit)/1e9)
}

// filterBytes is the memory of one running group of m particles in n
// dimensions with block size bs (keep: z is counted with the cloud).
func filterBytes(m, n, bs int, keep bool) int64 {
	// part, zb and tmpB (whole groups of 8 columns), pt and zt (subBlock
	// each), and 14 per-particle vectors of 8 bytes.
	b := int64(m) * int64(3*((bs+7)&^7)+2*subBlock+14) * 8
	if !keep {
		b += int64(m) * int64(n) * 8
	}
	return b
}

// CloudBytes is the memory of a kept cloud of m particles in n dimensions.
func CloudBytes(m, n int) int64 { return int64(m) * int64(n+1) * 8 }

// plan resolves c's defaults and its memory limit for n dimensions: the
// configuration to run (Groups possibly raised, SinkAhead lowered to what
// fits) and how many groups run at once.
func (c Config) plan(n int) (Config, int, error) {
	p, workers, err := c.planGroups(n)
	if err != nil || p.Sink == nil {
		return p, workers, err
	}
	p.SinkAhead = p.sinkAhead(n, workers)
	return p, workers, nil
}

// sinkAhead is how many finished groups may wait for the Sink of c (as
// planned, workers groups running at once): c.SinkAhead, at least 1, and
// no more than fit in MaxMemory beside the running groups.
func (c Config) sinkAhead(n, workers int) int {
	ahead := max(1, c.SinkAhead)
	if c.MaxMemory <= 0 || ahead == 1 {
		return ahead
	}
	largest := (c.Samples + c.Groups - 1) / c.Groups
	arr := int64(largest) * int64(n) * 8
	room := c.MaxMemory - int64(workers)*filterBytes(largest, n, min(c.BlockSize, n), false) - arr
	return int(max(1, min(int64(ahead), 1+room/arr)))
}

// planGroups is plan with one spare array for a Sink.
func (c Config) planGroups(n int) (Config, int, error) {
	userGroups := c.Groups
	c = c.withDefaultsFor(n)
	bs := min(c.BlockSize, n)
	workers := min(c.Threads, c.Groups)
	if c.MaxMemory <= 0 {
		return c, workers, nil
	}
	avail := c.MaxMemory
	if c.Keep {
		avail -= CloudBytes(c.Samples, n)
	}
	largest := (c.Samples + c.Groups - 1) / c.Groups
	var spare int64 // the in-order hand-over's spare array (driver.go)
	if c.Sink != nil {
		spare = int64(largest) * int64(n) * 8
		avail -= spare
	}
	one := filterBytes(largest, n, bs, c.Keep)
	if c.Keep && avail < one {
		return c, 0, &MemoryError{Need: CloudBytes(c.Samples, n) + one, Limit: c.MaxMemory, What: fmt.Sprintf("a cloud of %d particles in %d dimensions", c.Samples, n)}
	}
	perParticle := filterBytes(1, n, bs, false)
	if c.Sink != nil {
		// The spare array is as large as the smaller group.
		perParticle += int64(n) * 8
	}
	return c.splitGroups(userGroups, n, avail, spare, one, perParticle, func(m int) int64 {
		b := filterBytes(m, n, bs, false)
		if c.Sink != nil {
			b += int64(m) * int64(n) * 8
		}
		return b
	}, func(largest int) int64 {
		if c.Sink != nil {
			return int64(largest) * int64(n) * 8
		}
		return 0
	})
}

// splitGroups is the memory plan's last part, for groups of c (defaults
// resolved) in n dimensions with avail bytes for the running groups
// (spare of them set aside for a Sink's spare array, which a split may
// give back), one the memory of a group of the current size, and
// perParticle the memory per particle of a group whose spare array is
// counted with it: as many workers as fit, or, when not even one group
// fits and the group count was not the user's (userGroups = 0), more
// and smaller groups. bytes(m) is a running group of m particles' memory
// with its spare array; spareOf(m) the spare array of a group of m.
func (c Config) splitGroups(userGroups, n int, avail, spare, one, perParticle int64, bytes, spareOf func(int) int64) (Config, int, error) {
	workers := min(c.Threads, c.Groups)
	if avail >= one {
		return c, int(min(int64(workers), avail/one)), nil
	}
	largest := (c.Samples + c.Groups - 1) / c.Groups
	// Not even one group fits: smaller groups, if the count was ours to
	// choose.
	avail += spare
	fit := int(avail / perParticle)
	if userGroups != 0 || fit < 2 {
		return c, 0, &MemoryError{Need: one, Limit: c.MaxMemory, What: fmt.Sprintf("a group of %d particles in %d dimensions", largest, n)}
	}
	c.Groups = (c.Samples + fit - 1) / fit
	if c.Groups > MaxSplitGroups {
		per := (c.Samples + MaxSplitGroups - 1) / MaxSplitGroups
		return c, 0, &MemoryError{Need: bytes(per) - spareOf(per), Limit: c.MaxMemory, What: fmt.Sprintf("a group of %d particles in %d dimensions (%d particles split into the most groups allowed, %d)", per, n, c.Samples, MaxSplitGroups)}
	}
	largest = (c.Samples + c.Groups - 1) / c.Groups
	avail -= spareOf(largest)
	return c, int(max(1, min(int64(min(c.Threads, c.Groups)), avail/(bytes(largest)-spareOf(largest))))), nil
}

// Plan returns cfg as Estimate runs it for a Factor in n dimensions: its
// defaults resolved and Groups raised where cfg.MaxMemory asks for smaller
// groups, or the *MemoryError Estimate would return. A caller that
// announces the groups before the estimate (gpc-train's cloud stream) takes
// them from here.
func Plan(cfg Config, n int) (Config, error) {
	c, _, err := cfg.plan(n)
	return c, err
}

// MaxSplitGroups bounds the groups a run is split into to fit its memory
// limit: each group's estimate is kept (in Result.GroupLogP and a cloud's
// metadata), and a run that would need more is far beyond what the machine
// could compute anyway (4096 groups that fill the memory are more particle
// steps than weeks of computing).
const MaxSplitGroups = 4096

// CheckMemory reports, as a *MemoryError, an estimate that cannot run
// within cfg.MaxMemory for a Factor in n dimensions, however split; a kept
// cloud is not counted.
func CheckMemory(cfg Config, n int) error {
	cfg.Keep = false
	_, _, err := cfg.plan(n)
	return err
}

// PlanParticles is the memory plan of an Estimator outside this package
// whose running group takes perParticle bytes per particle (core/vecchia's
// Prepared.Plan): cfg's defaults resolved as a Factor's Plan resolves them
// for its Method in n dimensions, but for Groups, which is groups where
// cfg.Groups is 0 (the estimator's own default; 0: DefaultGroups), Groups
// raised where cfg.MaxMemory asks for smaller groups (as Plan raises
// them, a default's as well as DefaultGroups'), and the number of groups
// that may run at once within it; or a *MemoryError.
func PlanParticles(cfg Config, n int, perParticle int64, groups int) (Config, int, error) {
	userGroups := cfg.Groups
	if cfg.Groups == 0 && groups > 0 {
		cfg.Groups = groups
	}
	c := cfg.withDefaultsFor(n)
	if c.MaxMemory <= 0 {
		return c, min(c.Threads, c.Groups), nil
	}
	largest := (c.Samples + c.Groups - 1) / c.Groups
	bytes := func(m int) int64 { return int64(m) * perParticle }
	return c.splitGroups(userGroups, n, c.MaxMemory, 0, bytes(largest), perParticle, bytes, func(int) int64 { return 0 })
}
