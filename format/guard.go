package format

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ipcGuard stands between the input and Arrow's IPC reader. The v17 reader
// trusts the lengths it finds in a message: a corrupt or hostile stream of a
// few bytes can make it allocate gigabytes (a schema claiming 2^31 fields, a
// body length of a terabyte), which kills the process before any recover
// can run. The guard reads each message itself, growing its buffer only as
// data actually arrives, checks the message's flatbuffer metadata (vector
// lengths within the metadata, body length and buffer ranges within the
// body, column types among those gpc reads), and only then passes the
// message's bytes on. An Arrow IPC file is read as the stream it embeds,
// after its 8-byte magic; its footer is not needed.
type ipcGuard struct {
	r       *bufio.Reader
	pending [][]byte // the current message's parts, not yet read
	body    int64    // then as many body bytes, passed through from r
	err     error    // sticky: returned once pending is drained
	msgs    int
	shape   *shape // of the schema, once read
	eos     bool   // the end-of-stream marker was read
}

// maxDepth bounds the nesting of fields (a list of lists of ...).
const maxDepth = 16

func newIPCGuard(r *bufio.Reader) *ipcGuard { return &ipcGuard{r: r} }

// errNoEOS is the end of a gpc stream without Arrow's end-of-stream marker.
// The IPC format lets a writer end a stream by closing it, and Arrow's
// reader takes such an end as normal; but every gpc tool writes the marker
// on success and only then, so a gpc stream (one whose schema has
// gpc:schema) without it was cut short: by a failure, an interrupt, or a
// copy that stopped at a batch boundary.
var errNoEOS = errors.New("the stream ended without Arrow's end-of-stream marker: it was cut short (the tool that wrote it failed or was interrupted)")

// cutError is a stream that ends inside a message: its 8-byte prefix, its
// metadata (msg 0: the schema) or its body (a record batch's buffers). The
// reader says so in gpc's words, not in those of Arrow's reader, which
// wraps it (cutShort finds it).
type cutError struct {
	msg  int    // the message's index in the stream
	part string // "metadata" (the prefix and the flatbuffer) or "body"
}

func (e *cutError) Error() string {
	where := fmt.Sprintf("inside message %d's %s", e.msg, e.part)
	switch {
	case e.msg == 0:
		where = "inside its schema, the first message"
	case e.part == "body":
		where = fmt.Sprintf("inside message %d's body (a record batch's data)", e.msg)
	}
	return "the stream ends " + where + ": it was cut short (the tool that wrote it failed or was interrupted, or a copy stopped early)"
}

// cutShort returns the cutError that err wraps (Arrow's reader wraps the
// guard's errors in its own words), or err.
func cutShort(err error) error {
	var cut *cutError
	if errors.As(err, &cut) {
		return cut
	}
	return err
}

// checkEnd reports a stream that ended without the end-of-stream marker
// when its schema metadata says a gpc tool wrote it.
func (g *ipcGuard) checkEnd(meta map[string]string) error {
	if _, gpc := meta[KeySchema]; gpc && !g.eos {
		return errNoEOS
	}
	return nil
}

func (g *ipcGuard) Read(p []byte) (int, error) {
	for {
		for len(g.pending) > 0 && len(g.pending[0]) == 0 {
			g.pending = g.pending[1:]
		}
		if len(g.pending) > 0 {
			n := copy(p, g.pending[0])
			g.pending[0] = g.pending[0][n:]
			return n, nil
		}
		if g.body > 0 {
			// An uncompressed body of at most trustedLen (next reads a
			// larger one itself) goes straight from the input into the
			// reader's buffer: its lengths were checked with the metadata.
			n, err := g.r.Read(p[:min(int64(len(p)), g.body)])
			g.body -= int64(n)
			if n > 0 || err == nil {
				return n, nil
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = &cutError{g.msgs - 1, "body"}
			} else {
				err = fmt.Errorf("message %d body: %w", g.msgs-1, err)
			}
			g.body, g.err = 0, err
			return 0, g.err
		}
		if g.err != nil {
			return 0, g.err
		}
		g.pending, g.body, g.err = g.next()
	}
}

// trustedLen is how much of a length read from the stream readN allocates
// before the data arrive: beyond it, the buffer grows with the data.
const trustedLen = 64 << 20

// readN reads exactly n bytes, allocating as the data arrives rather than
// trusting n beyond trustedLen.
func (g *ipcGuard) readN(n int64) ([]byte, error) {
	if n <= trustedLen {
		buf := make([]byte, n)
		if _, err := io.ReadFull(g.r, buf); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, trustedLen+bytes.MinRead))
	got, err := io.CopyN(buf, g.r, n)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// next reads one message and returns its bytes (framing, metadata, and the
// body of a compressed message) and the length of a body still to be read
// from the input, or the end-of-stream marker with io.EOF.
func (g *ipcGuard) next() ([][]byte, int64, error) {
	var head [8]byte
	n, err := io.ReadFull(g.r, head[:4])
	if n == 0 && errors.Is(err, io.EOF) {
		return nil, 0, io.EOF // end without a marker: the reader treats it as the end
	}
	if err != nil {
		return nil, 0, g.cut(err, g.msgs, "metadata")
	}
	cont := binary.LittleEndian.Uint32(head[:4])
	if cont == 0 {
		g.eos = true
		return [][]byte{head[:4]}, 0, io.EOF // legacy end-of-stream marker
	}
	if cont != 0xffffffff {
		return nil, 0, fmt.Errorf("message %d: no continuation marker (bytes %x): not an Arrow IPC stream from version 0.15 or later", g.msgs, head[:4])
	}
	if _, err := io.ReadFull(g.r, head[4:]); err != nil {
		return nil, 0, g.cut(err, g.msgs, "metadata")
	}
	metaLen := int32(binary.LittleEndian.Uint32(head[4:]))
	if metaLen == 0 {
		g.eos = true
		return [][]byte{head[:]}, 0, io.EOF
	}
	if metaLen < 0 {
		return nil, 0, fmt.Errorf("message %d: negative metadata length %d", g.msgs, metaLen)
	}
	meta, err := g.readN(int64(metaLen))
	if err != nil {
		return nil, 0, g.cut(err, g.msgs, "metadata")
	}
	m, err := checkMessage(meta, g.shape)
	if err != nil {
		return nil, 0, fmt.Errorf("message %d: %w", g.msgs, err)
	}
	if m.schema != nil {
		g.shape = m.schema
	}
	g.msgs++
	if !m.compress && m.bodyLen <= trustedLen {
		return [][]byte{head[:], meta}, m.bodyLen, nil
	}
	if !m.compress {
		// Arrow's reader allocates the body length it is told before it
		// reads: a body beyond trustedLen is read here first, the buffer
		// growing as the data arrive (one more copy, for batches of more
		// than 64 MiB only).
		body, err := g.readN(m.bodyLen)
		if err != nil {
			return nil, 0, g.cut(err, g.msgs-1, "body")
		}
		return [][]byte{head[:], meta, body}, 0, nil
	}
	body, err := g.readN(m.bodyLen)
	if err != nil {
		return nil, 0, g.cut(err, g.msgs-1, "body")
	}
	if err := m.checkBody(body); err != nil {
		return nil, 0, fmt.Errorf("message %d: %w", g.msgs-1, err)
	}
	return [][]byte{head[:], meta, body}, 0, nil
}

// cut is the error of a read of message msg's part that failed: a
// cutError where the input ended (io.EOF, io.ErrUnexpectedEOF), else the
// read's error (an I/O error, which the reader's ioWatch reports).
func (g *ipcGuard) cut(err error, msg int, part string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &cutError{msg, part}
	}
	return fmt.Errorf("message %d %s: %w", msg, part, err)
}

// fb reads a flatbuffer with bounds checks: every accessor returns an error
// instead of reading outside the buffer.
type fb []byte

var errFB = errors.New("malformed message metadata")

func (b fb) u32(at int) (uint32, error) {
	if at < 0 || at+4 > len(b) {
		return 0, errFB
	}
	return binary.LittleEndian.Uint32(b[at:]), nil
}

func (b fb) u16(at int) (uint16, error) {
	if at < 0 || at+2 > len(b) {
		return 0, errFB
	}
	return binary.LittleEndian.Uint16(b[at:]), nil
}

// field returns the absolute position of field slot (4 + 2 i) of the table
// at t, or 0 if the field is absent.
func (b fb) field(t, slot int) (int, error) {
	so, err := b.u32(t)
	if err != nil {
		return 0, err
	}
	vt := t - int(int32(so))
	vlen, err := b.u16(vt)
	if err != nil {
		return 0, errFB
	}
	if slot >= int(vlen) { // exactly the flatbuffers library's test
		return 0, nil
	}
	off, err := b.u16(vt + slot)
	if err != nil || off == 0 {
		return 0, err
	}
	return t + int(off), nil
}

// deref follows the offset stored at pos.
func (b fb) deref(pos int) (int, error) {
	o, err := b.u32(pos)
	if err != nil || int(o) > len(b) {
		return 0, errFB
	}
	return pos + int(o), nil
}

// table returns the table referenced by field slot of table t (0: absent).
func (b fb) table(t, slot int) (int, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return b.deref(p)
}

// vector returns the start and length of the vector in field slot of table
// t, checking that length elements of elemSize bytes fit in the buffer.
func (b fb) vector(t, slot, elemSize int) (start, n int, err error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	v, err := b.deref(p)
	if err != nil {
		return 0, 0, err
	}
	l, err := b.u32(v)
	if err != nil || int64(l)*int64(elemSize) > int64(len(b)-v-4) {
		return 0, 0, errFB
	}
	return v + 4, int(l), nil
}

// i64 reads an 8-byte scalar field (0 when absent).
func (b fb) i64(t, slot int) (int64, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	if p+8 > len(b) {
		return 0, errFB
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), nil
}

// u8 reads a 1-byte scalar field (0 when absent).
func (b fb) u8(t, slot int) (byte, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	if p >= len(b) {
		return 0, errFB
	}
	return b[p], nil
}

// Flatbuffer field slots of Arrow's Message.fbs and Schema.fbs.
const (
	msgHeaderType, msgHeader, msgBodyLength, msgCustomMeta = 6, 8, 10, 12
	schemaFields, schemaCustomMeta, schemaFeatures         = 6, 8, 10
	fieldName, fieldTypeType, fieldDictionary              = 4, 8, 12
	fieldChildren, fieldMeta                               = 14, 16
	batchLength, batchNodes, batchBuffers, batchCompress   = 4, 6, 8, 10
	dictID, dictData                                       = 4, 6
	dictEncodingID                                         = 4
	headerSchema, headerDict, headerBatch                  = 1, 2, 3
)

// readableTypes are the Arrow type ids (Schema.fbs union Type) whose columns
// gpc can meet (numbers, strings, booleans, lists; temporal and binary
// columns, which it ignores), with the number of buffers a column of the
// type has in a record batch and the number of children it must have.
var readableTypes = map[byte]struct{ buffers, children int }{
	2: {2, 0}, 3: {2, 0}, 4: {3, 0}, 5: {3, 0}, 6: {2, 0}, 7: {2, 0}, 8: {2, 0}, 9: {2, 0},
	10: {2, 0}, 12: {2, 1}, 15: {2, 0}, 16: {1, 1}, 18: {2, 0}, 19: {3, 0}, 20: {3, 0}, 21: {2, 1},
}

// shape is how many field nodes and buffers every record batch of a schema
// must describe. Arrow's reader indexes both vectors without checking their
// lengths, so a batch that lists fewer would make it read garbage. limit
// bounds the fields visited: flatbuffer offsets may share a table, so a
// few bytes can describe a tree of exponential size, which Arrow's reader
// would expand.
type shape struct {
	nodes, buffers, limit int
	// dicts maps a dictionary id to the buffers of its values' type (a
	// dictionary batch is a record batch of one column of that type).
	dicts map[int64]int
}

// message is what checkMessage learned from a message's metadata.
type message struct {
	meta     fb
	bodyLen  int64
	batch    int // the RecordBatch table, or 0
	compress bool
	schema   *shape // set for a schema message
}

// checkMessage checks one message's metadata; sh is the stream's schema
// shape (nil before the schema message, which must come first).
func checkMessage(meta []byte, sh *shape) (*message, error) {
	b := fb(meta)
	root, err := b.deref(0)
	if err != nil {
		return nil, err
	}
	if err := checkKeyValues(b, root, msgCustomMeta); err != nil {
		return nil, err
	}
	m := &message{meta: b}
	if m.bodyLen, err = b.i64(root, msgBodyLength); err != nil {
		return nil, err
	}
	if m.bodyLen < 0 || m.bodyLen > 1<<40 {
		return nil, fmt.Errorf("body length %d out of range", m.bodyLen)
	}
	ht, err := b.u8(root, msgHeaderType)
	if err != nil {
		return nil, err
	}
	h, err := b.table(root, msgHeader)
	if err != nil || h == 0 {
		return nil, errFB
	}
	switch {
	case ht == headerSchema && sh == nil:
		if m.bodyLen != 0 {
			return nil, errors.New("schema message with a body")
		}
		m.schema, err = checkSchema(b, h)
		return m, err
	case ht == headerBatch && sh != nil:
		m.batch = h
		return m, m.checkBatch(sh)
	case sh == nil:
		return nil, fmt.Errorf("message type %d where the schema was expected", ht)
	case ht == headerSchema:
		return nil, errors.New("a second schema message")
	case ht == headerDict:
		id, err := b.i64(h, dictID)
		if err != nil {
			return nil, err
		}
		bufs, ok := sh.dicts[id]
		if !ok {
			return nil, fmt.Errorf("a dictionary batch for dictionary %d, which no column uses", id)
		}
		if m.batch, err = b.table(h, dictData); err != nil || m.batch == 0 {
			return nil, errFB
		}
		return m, m.checkBatch(&shape{nodes: 1, buffers: bufs})
	}
	return nil, fmt.Errorf("message type %d is not a record batch", ht)
}

func checkKeyValues(b fb, t, slot int) error {
	start, n, err := b.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		kv, err := b.deref(start + 4*i)
		if err != nil {
			return err
		}
		for _, s := range []int{4, 6} {
			if _, _, err := b.vector(kv, s, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkSchema(b fb, s int) (*shape, error) {
	if err := checkKeyValues(b, s, schemaCustomMeta); err != nil {
		return nil, err
	}
	if _, _, err := b.vector(s, schemaFeatures, 8); err != nil {
		return nil, err
	}
	sh := &shape{limit: len(b) / 8} // a field table takes at least 8 bytes
	_, err := checkFields(b, s, schemaFields, 0, sh)
	return sh, err
}

// checkFields checks the fields in vector slot of table t, adds their nodes
// and buffers to sh and returns how many there are.
func checkFields(b fb, t, slot, depth int, sh *shape) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("fields nested deeper than %d", maxDepth)
	}
	start, n, err := b.vector(t, slot, 4)
	if err != nil {
		return 0, err
	}
	for i := range n {
		f, err := b.deref(start + 4*i)
		if err != nil {
			return 0, err
		}
		ns, nl, err := b.vector(f, fieldName, 1)
		if err != nil {
			return 0, err
		}
		name := string(b[ns : ns+nl])
		tt, err := b.u8(f, fieldTypeType)
		if err != nil {
			return 0, err
		}
		rt, ok := readableTypes[tt]
		if !ok {
			return 0, fmt.Errorf("column %q has an Arrow type (id %d) that gpc does not read", name, tt)
		}
		d, err := b.table(f, fieldDictionary)
		if err != nil {
			return 0, err
		}
		if err := checkKeyValues(b, f, fieldMeta); err != nil {
			return 0, err
		}
		sh.nodes++
		if d != 0 {
			// Dictionary-encoded (a pandas category, an R factor): the
			// column holds integer indices (validity and values), the
			// values of its flat type come in dictionary batches.
			if depth > 0 || rt.children != 0 {
				return 0, fmt.Errorf("column %q is a dictionary-encoded nested column, which gpc does not read", name)
			}
			id, err := b.i64(d, dictEncodingID)
			if err != nil {
				return 0, err
			}
			if sh.dicts == nil {
				sh.dicts = map[int64]int{}
			}
			sh.dicts[id] = rt.buffers
			sh.buffers += 2
		} else {
			sh.buffers += rt.buffers
		}
		if sh.nodes > sh.limit {
			return 0, fmt.Errorf("the schema describes more fields than its %d bytes can hold (shared tables)", len(b))
		}
		kids, err := checkFields(b, f, fieldChildren, depth+1, sh)
		if err != nil {
			return 0, err
		}
		if kids != rt.children {
			return 0, fmt.Errorf("column %q has %d child fields, its type needs %d", name, kids, rt.children)
		}
	}
	return n, nil
}

// checkBatch checks a record batch's row, node and buffer counts against the
// body: every readable type needs at least one bit of body per row.
func (m *message) checkBatch(sh *shape) error {
	b, t := m.meta, m.batch
	maxRows := 8*m.bodyLen + 64
	rows, err := b.i64(t, batchLength)
	if err != nil {
		return err
	}
	if rows < 0 || rows > maxRows {
		return fmt.Errorf("record batch of %d rows in a body of %d bytes", rows, m.bodyLen)
	}
	start, n, err := b.vector(t, batchNodes, 16)
	if err != nil {
		return err
	}
	if n < sh.nodes {
		return fmt.Errorf("record batch describes %d columns and children, the schema has %d", n, sh.nodes)
	}
	for i := range n {
		p := start + 16*i
		length := int64(binary.LittleEndian.Uint64(b[p:]))
		nulls := int64(binary.LittleEndian.Uint64(b[p+8:]))
		if length < 0 || length > maxRows || nulls < 0 || nulls > length {
			return fmt.Errorf("column node %d: length %d, null count %d", i, length, nulls)
		}
	}
	start, n, err = b.vector(t, batchBuffers, 16)
	if err != nil {
		return err
	}
	if n < sh.buffers {
		return fmt.Errorf("record batch lists %d buffers, the schema needs %d", n, sh.buffers)
	}
	for i := range n {
		p := start + 16*i
		off := int64(binary.LittleEndian.Uint64(b[p:]))
		length := int64(binary.LittleEndian.Uint64(b[p+8:]))
		if off < 0 || length < 0 || off > m.bodyLen || length > m.bodyLen-off {
			return fmt.Errorf("buffer %d (offset %d, length %d) outside the body of %d bytes", i, off, length, m.bodyLen)
		}
	}
	c, err := b.table(t, batchCompress)
	m.compress = c != 0
	return err
}

// checkBody bounds the uncompressed sizes a compressed batch declares, which
// the reader would allocate before decompressing.
func (m *message) checkBody(body []byte) error {
	if !m.compress {
		return nil
	}
	b := m.meta
	start, n, _ := b.vector(m.batch, batchBuffers, 16)
	for i := range n {
		p := start + 16*i
		off := int64(binary.LittleEndian.Uint64(b[p:]))
		length := int64(binary.LittleEndian.Uint64(b[p+8:]))
		if length < 8 {
			continue
		}
		raw := int64(binary.LittleEndian.Uint64(body[off:]))
		if raw != -1 && (raw < 0 || raw > 1024*length+1<<20) {
			return fmt.Errorf("compressed buffer %d claims %d bytes from %d", i, raw, length)
		}
	}
	return nil
}

// Flatbuffer field slots of Arrow's File.fbs Footer.
const footerSchema, footerDicts, footerBatches, footerMeta = 6, 8, 10, 12

// checkFile checks an Arrow IPC file held in memory before Arrow's file
// reader sees it: the footer's schema as checkSchema does, and every block
// (dictionary or record batch) inside the file, its metadata as
// checkMessage does and its body large enough for the message's buffers.
func checkFile(data []byte) error {
	const tail = 10 // footer length (4) + magic (6)
	if len(data) < 8+tail+8 || !bytes.Equal(data[len(data)-6:], arrowFileMagic) {
		return errors.New("the Arrow IPC file ends without its footer and closing magic: it was cut short (the tool that wrote it failed or was interrupted, or a copy stopped early), or it is not an Arrow IPC file")
	}
	flen := int64(binary.LittleEndian.Uint32(data[len(data)-tail:]))
	fstart := int64(len(data)-tail) - flen
	if flen <= 0 || fstart < 8 {
		return fmt.Errorf("footer length %d does not fit the file", flen)
	}
	b := fb(data[fstart : len(data)-tail])
	root, err := b.deref(0)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	s, err := b.table(root, footerSchema)
	if err != nil || s == 0 {
		return errors.New("footer: no schema")
	}
	sh, err := checkSchema(b, s)
	if err != nil {
		return fmt.Errorf("footer schema: %w", err)
	}
	if err := checkKeyValues(b, root, footerMeta); err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	dstart, dn, err := b.vector(root, footerDicts, 24)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	start, n, err := b.vector(root, footerBatches, 24)
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	// The dictionary blocks, then the record batch blocks.
	for i := range dn + n {
		p := dstart + 24*i
		if i >= dn {
			p = start + 24*(i-dn)
		}
		off := int64(binary.LittleEndian.Uint64(b[p:]))
		metaLen := int64(int32(binary.LittleEndian.Uint32(b[p+8:])))
		bodyLen := int64(binary.LittleEndian.Uint64(b[p+16:]))
		if off < 8 || metaLen < 8 || bodyLen < 0 || off > fstart || metaLen > fstart-off || bodyLen > fstart-off-metaLen {
			return fmt.Errorf("block %d (offset %d, metadata %d, body %d) outside the file", i, off, metaLen, bodyLen)
		}
		meta := data[off : off+metaLen]
		prefix := 8
		switch binary.LittleEndian.Uint32(meta) {
		case 0xffffffff:
		case 0:
			return fmt.Errorf("block %d is an end-of-stream marker", i)
		default:
			prefix = 4 // before Arrow 0.15
		}
		m, err := checkMessage(meta[prefix:], sh)
		if err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
		if m.bodyLen > bodyLen {
			return fmt.Errorf("block %d: message body of %d bytes in a block of %d", i, m.bodyLen, bodyLen)
		}
		if err := m.checkBody(data[off+metaLen : off+metaLen+m.bodyLen]); err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
	}
	return nil
}
