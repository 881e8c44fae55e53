package format

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"maps"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Cloud shards. gpc-train --shard I/K writes a cloud stream (schema
// gpc.cloud-shard/1) that holds the unsharded cloud's train and test rows
// and only the particles and group rows of its range of groups, in the
// same record batches as the unsharded cloud's: NewCloudWriter flushes
// its batch before each group and after its group row, so a group's
// messages depend on that group alone. gpc-merge checks each shard
// (CheckCloudShard) and then splices the messages (MergeCloudShards): the
// unsharded schema message, the first shard's train and test messages,
// every shard's group messages in order, the first shard's test messages
// after the particles, the end-of-stream marker. The result is the
// unsharded cloud, byte for byte.
const (
	SchemaCloudShard = "gpc.cloud-shard/1"
	KeyShardRowsOf   = "gpc:shard_rows_of" // the unsharded cloud's gpc:rows, when it has one
)

// CloudShardInfo is what CheckCloudShard learned of a cloud shard: its
// metadata, how many messages (after the schema) come before its
// particles, hold them, and follow them, and a digest of the rows before
// and after the particles (equal in every shard of one run).
type CloudShardInfo struct {
	Meta               map[string]string
	Head, Groups, Tail int
	Rows               string
}

// CheckCloudShard reads the cloud shard r of groups [lo, hi) of sizes
// whole and checks it: its schema, each group's particles and group row
// in order, the end-of-stream marker, gpc:rows. A shard that fails is a
// *DataError naming it.
func CheckCloudShard(r io.Reader, name string, lo, hi int, sizes []int, mem memory.Allocator) (info *CloudShardInfo, err error) {
	defer recoverArrow(name, &err)
	in, err := openInput(r, name)
	if err != nil {
		return nil, err
	}
	if in.kind != kindArrowStream {
		return nil, dataErrorf(name, "a cloud shard is an Arrow IPC stream (written by gpc-train --shard)")
	}
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, err
	}
	defer src.release()
	info = &CloudShardInfo{Meta: schema.Metadata().ToMap()}
	if s := info.Meta[KeySchema]; s != SchemaCloudShard {
		return nil, dataErrorf(name, "schema %q where a cloud shard (%s) was expected", s, SchemaCloudShard)
	}
	want := cloudSchema(nil, false)
	if !schema.Equal(want) {
		return nil, dataErrorf(name, "the columns are not a cloud's")
	}
	h := sha256.New()
	const (
		head = iota
		groups
		tail
	)
	phase, g, inGroup, rows := head, lo, 0, 0
	for batch := 0; ; batch++ {
		rec, err := src.next()
		if err != nil {
			return nil, in.w.classify(name, err)
		}
		if rec == nil {
			break
		}
		where := fmt.Sprintf("%s: batch %d", name, batch)
		n := int(rec.NumRows())
		if n == 0 {
			return nil, dataErrorf(where, "an empty record batch")
		}
		rows += n
		kind := rec.Column(0).(*array.String)
		group := rec.Column(4).(*array.Int32)
		isGroup := kind.Value(0) == KindParticle || kind.Value(0) == KindGroup
		switch {
		case phase == head && isGroup:
			phase = groups
		case phase == groups && !isGroup:
			phase = tail
		case phase == tail && isGroup:
			return nil, dataErrorf(where, "particles after the test rows that follow the particles")
		}
		switch phase {
		case head:
			info.Head++
		case groups:
			info.Groups++
		case tail:
			info.Tail++
		}
		if phase != groups {
			for i := range n {
				if k := kind.Value(i); k != KindTrain && k != KindFactor && k != KindTest {
					return nil, dataErrorf(where, "row %d is a %q row among the train, factor and test rows", i, k)
				}
			}
			hashArray(h, rec)
			continue
		}
		for i := range n {
			k := kind.Value(i)
			if (k != KindParticle && k != KindGroup) || group.IsNull(i) || int(group.Value(i)) != g || g >= hi {
				return nil, dataErrorf(where, "row %d (%q, group %v) where a row of group %d of the shard's groups %d-%d was expected", i, k, group.Value(i), g, lo, hi)
			}
			if k == KindParticle {
				inGroup++
				continue
			}
			if inGroup != sizes[g] {
				return nil, dataErrorf(where, "group %d has %d particles, not %d", g, inGroup, sizes[g])
			}
			g, inGroup = g+1, 0
		}
	}
	if g != hi {
		return nil, dataErrorf(name, "groups %d-%d of the shard's %d-%d are missing: the stream was cut short", g, hi, lo, hi)
	}
	if err := checkRows(info.Meta, rows); err != nil {
		return nil, dataErrorf(name, "%v", err)
	}
	info.Rows = hex.EncodeToString(h.Sum(nil)[:16])
	return info, nil
}

// hashArray adds a record's buffers to h.
func hashArray(h hash.Hash, rec arrow.Record) {
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		fmt.Fprintf(h, "%d/%d/%d;", d.Len(), d.Offset(), d.NullN())
		for _, b := range d.Buffers() {
			if b != nil {
				h.Write(b.Bytes())
			}
			h.Write([]byte{0})
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
}

// MergeCloudShards writes the cloud stream with metadata meta (which must
// name gpc.cloud/3) made of the checked shards' messages, in shard order:
// the first shard's messages before its particles, every shard's
// particle and group messages, the first shard's messages after the
// particles, and the end-of-stream marker.
func MergeCloudShards(w io.Writer, meta map[string]string, shards []io.Reader, infos []*CloudShardInfo, mem memory.Allocator) error {
	if meta[KeySchema] != SchemaCloud {
		panic("format: MergeCloudShards: not a cloud's metadata")
	}
	// The schema message, as NewCloudWriter's ipc.Writer writes it.
	var sb bytes.Buffer
	iw := ipc.NewWriter(&sb, ipc.WithSchema(cloudSchema(maps.Clone(meta), false)), ipc.WithAllocator(mem))
	if err := iw.Close(); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.Write(sb.Bytes()[:sb.Len()-8]); err != nil { // without its end-of-stream marker
		return &IOError{Op: "write cloud", Err: err}
	}
	last := len(shards) - 1
	for i, r := range shards {
		skip, take := infos[i].Head, infos[i].Groups
		if i == 0 {
			skip, take = 0, infos[i].Head+infos[i].Groups
		}
		if i == last {
			// The test rows after the particles: the last shard's, read
			// last (the same rows as every shard's, CloudShardInfo.Rows).
			take += infos[i].Tail
		}
		if err := spliceMessages(bw, r, fmt.Sprintf("shard %d", i), skip, take); err != nil {
			return err
		}
	}
	if _, err := bw.Write(ipcEOS); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &IOError{Op: "write cloud", Err: err}
	}
	return nil
}

// ipcEOS is Arrow's end-of-stream marker.
var ipcEOS = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// spliceMessages copies messages skip to skip+take (counted after the
// schema) of the Arrow stream r to w, as they are.
func spliceMessages(w io.Writer, r io.Reader, name string, skip, take int) error {
	br := bufio.NewReader(r)
	g := newIPCGuard(br)
	for m := -1; m < skip+take; m++ {
		parts, body, err := g.next()
		if err != nil {
			return dataErrorf(name, "message %d: %v (the shard changed since it was checked)", m+1, err)
		}
		out := io.Discard
		if m >= skip {
			out = w
		}
		for _, p := range parts {
			if _, err := out.Write(p); err != nil {
				return &IOError{Op: "write cloud", Err: err}
			}
		}
		if _, err := io.CopyN(out, br, body); err != nil {
			return dataErrorf(name, "message %d body: %v", m+1, err)
		}
	}
	return nil
}
