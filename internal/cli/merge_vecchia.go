package cli

// gpc-merge of gpc-train's Vecchia cloud shards.

import (
	"fmt"
	"os"
	"strconv"

	"github.com/gpc-mc/gpc/format"
)

// mergeVecchiaCloud merges gpc-train's Vecchia cloud shards: their test
// rows (the same in each) and their groups, in order, with their kept
// paths where the shards keep them (held in memory until written: at
// most the unsharded cloud's), written as the unsharded run writes them.
func (c *mergeCmd) mergeVecchiaCloud(e *env, shards []*shardIn, mem format.Allocator) error {
	if f := c.outputFormat(e.stdout); f != format.Arrow {
		return usagef("gpc-train's shards merge into a cloud, an Arrow stream: not --format %s (redirect standard output, or pipe it to gpc-predict)", c.Format)
	}
	meta := shards[0].meta
	batch, err := strconv.Atoi(meta[format.KeyShardBatch])
	if err != nil || batch < 1 {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q is not a batch size", shards[0].name, format.KeyShardBatch, meta[format.KeyShardBatch])}
	}
	var first *format.VecchiaCloud
	var groups []format.VecchiaGroup
	var kept []int
	for _, s := range shards {
		cl, err := readVecchiaShard(s, mem)
		if err != nil {
			return err
		}
		if first == nil {
			first = cl
		} else if len(cl.Row) != len(first.Row) {
			return &dataError{fmt.Sprintf("%s: %d test rows where %s has %d", s.name, len(cl.Row), shards[0].name, len(first.Row))}
		}
		if (cl.Kept == nil) != (first.Kept == nil) {
			return &dataError{fmt.Sprintf("%s: it keeps particle paths where %s does not, or the other way round: shards of one run (gpc-train --keep) keep them alike", s.name, shards[0].name)}
		}
		groups, kept = append(groups, cl.Groups...), append(kept, cl.Kept...)
	}
	out := unshardedMeta(meta)
	out[format.KeySchema] = meta[format.KeyShardOf]
	if n, err := strconv.Atoi(out[format.KeyGroups]); err != nil || n != len(groups) {
		return &dataError{fmt.Sprintf("%s: the shards hold %d groups, and the metadata announces %s", shards[len(shards)-1].name, len(groups), out[format.KeyGroups])}
	}
	rows := len(first.Row) + len(groups)
	if kept != nil {
		out[format.KeyKeptPaths] = format.JoinInts(kept)
		for _, k := range kept {
			rows += format.VecchiaPathRows(first.N, k)
		}
	}
	out[format.KeyRows] = strconv.Itoa(rows)
	cw, err := format.NewVecchiaCloudWriter(e.stdout, out, first.Row, first.ID, first.Y, batch, mem)
	if err != nil {
		return err
	}
	for i, g := range groups {
		if err := cw.WriteGroup(g.Group, g.Out, g.P); err != nil {
			return err
		}
		if kept != nil && kept[i] > 0 {
			if err := cw.WritePaths(g.Group, first.N, g.Paths, g.PathW); err != nil {
				return err
			}
		}
		groups[i].Paths = nil // its memory goes at the next collection
	}
	return cw.Close()
}

// readVecchiaShard reads a Vecchia cloud shard whole and checks that it
// holds its range's groups, in order.
func readVecchiaShard(s *shardIn, mem format.Allocator) (*format.VecchiaCloud, error) {
	f, err := os.Open(s.name)
	if err != nil {
		return nil, &format.IOError{Op: "open shard", Err: err}
	}
	defer f.Close()
	cl, err := format.ReadVecchiaShardPaths(f, s.name, mem)
	if err != nil {
		return nil, err
	}
	if len(cl.Groups) != s.hi-s.lo {
		return nil, &dataError{fmt.Sprintf("%s: shard %d/%d has %d groups for groups %d-%d", s.name, s.i, s.k, len(cl.Groups), s.lo, s.hi)}
	}
	for j, g := range cl.Groups {
		if g.Group != s.lo+j {
			return nil, &dataError{fmt.Sprintf("%s: group row %d is group %d, not %d", s.name, j, g.Group, s.lo+j)}
		}
	}
	return cl, nil
}
