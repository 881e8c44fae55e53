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
// paths where the shards keep them, written as the unsharded run writes
// them. As for a dense cloud, every shard is checked whole (its paths'
// shape only) before anything is written; then each shard's groups are
// written as it is read again, so one shard's paths are held at a time.
func (c *mergeCmd) mergeVecchiaCloud(e *env, shards []*shardIn, mem format.Allocator) error {
	if f := c.outputFormat(e.stdout); f != format.Arrow {
		return usagef("gpc-train's shards merge into a cloud, an Arrow stream: not --format %s (redirect standard output, or pipe it to gpc-predict)", c.Format)
	}
	meta := shards[0].meta
	batch, err := strconv.Atoi(meta[format.KeyShardBatch])
	if err != nil || batch < 1 {
		return &dataError{fmt.Sprintf("%s: metadata %s = %q is not a batch size", shards[0].name, format.KeyShardBatch, meta[format.KeyShardBatch])}
	}
	out := unshardedMeta(meta)
	out[format.KeySchema] = meta[format.KeyShardOf]
	groups := shards[len(shards)-1].hi
	if n, err := strconv.Atoi(out[format.KeyGroups]); err != nil || n != groups {
		return &dataError{fmt.Sprintf("%s: the shards hold %d groups, and the metadata announces %s", shards[len(shards)-1].name, groups, out[format.KeyGroups])}
	}
	kept, pathRows, err := mergedKept(shards)
	if err != nil {
		return err
	}
	if kept != nil {
		out[format.KeyKeptPaths] = format.JoinInts(kept)
	}
	clouds := make([]*format.VecchiaCloud, len(shards))
	for i, s := range shards {
		cl, err := readVecchiaShard(s, false, mem)
		if err != nil {
			return err
		}
		if i > 0 && len(cl.Row) != len(clouds[0].Row) {
			return &dataError{fmt.Sprintf("%s: %d test rows where %s has %d", s.name, len(cl.Row), shards[0].name, len(clouds[0].Row))}
		}
		clouds[i] = cl
	}
	first := clouds[0]
	out[format.KeyRows] = strconv.Itoa(len(first.Row) + groups + pathRows)
	cw, err := format.NewVecchiaCloudWriter(e.stdout, out, first.Row, first.ID, first.Y, batch, mem)
	if err != nil {
		return err
	}
	for i, s := range shards {
		cl := clouds[i]
		if kept != nil { // read again, with its paths
			if cl, err = readVecchiaShard(s, true, mem); err != nil {
				return err
			}
		}
		for _, g := range cl.Groups {
			if err := cw.WriteGroup(g.Group, g.Out, g.P); err != nil {
				return err
			}
			if kept != nil && kept[g.Group] > 0 {
				if err := cw.WritePaths(g.Group, cl.N, g.Paths, g.PathW); err != nil {
					return err
				}
			}
		}
	}
	return cw.Close()
}

// mergedKept returns the kept paths of every group of the shards, each
// shard's from its metadata (nil where they keep none), and the rows
// they take in the merged cloud; shards that keep paths and shards that
// do not are refused.
func mergedKept(shards []*shardIn) (kept []int, rows int, err error) {
	for _, s := range shards {
		v, ok := s.meta[format.KeyKeptPaths]
		if _, ok0 := shards[0].meta[format.KeyKeptPaths]; ok != ok0 {
			return nil, 0, &dataError{fmt.Sprintf("%s: it keeps particle paths where %s does not, or the other way round: shards of one run (gpc-train --keep) keep them alike", s.name, shards[0].name)}
		}
		if !ok {
			continue
		}
		ks, vars, err := format.VecchiaKeptPaths(s.meta, s.name)
		if err != nil {
			return nil, 0, err
		}
		if len(ks) != s.hi-s.lo {
			return nil, 0, &dataError{fmt.Sprintf("%s: metadata %s = %q is not a count for each of its %d groups", s.name, format.KeyKeptPaths, v, s.hi-s.lo)}
		}
		for _, k := range ks {
			rows += format.VecchiaPathRows(vars, k)
		}
		kept = append(kept, ks...)
	}
	return kept, rows, nil
}

// readVecchiaShard reads a Vecchia cloud shard whole, with its kept
// paths if paths is set (else only their shape is checked), and checks
// that it holds its range's groups, in order.
func readVecchiaShard(s *shardIn, paths bool, mem format.Allocator) (*format.VecchiaCloud, error) {
	f, err := os.Open(s.name)
	if err != nil {
		return nil, &format.IOError{Op: "open shard", Err: err}
	}
	defer f.Close()
	var cl *format.VecchiaCloud
	if paths {
		cl, err = format.ReadVecchiaShardPaths(f, s.name, mem)
	} else {
		cl, err = format.ReadVecchiaCloud(f, s.name, true, mem)
	}
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
