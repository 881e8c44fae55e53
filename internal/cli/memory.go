package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

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

// maxMemoryShare is the default --max-memory as a share of the machine's
// memory (or of the cgroup's limit, if lower): half, so that a pipeline's
// two tools holding one cloud each still fit.
const maxMemoryShare = 0.5

// defaultMaxMemory is maxMemoryShare of the memory available to the
// process.
func defaultMaxMemory() int64 {
	return int64(maxMemoryShare * float64(availableMemory()))
}

// limit returns the memory limit a --max-memory value selects.
func (b byteSize) limit() int64 {
	if b > 0 {
		return int64(b)
	}
	return defaultMaxMemory()
}
