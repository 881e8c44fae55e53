package format

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Allocator is Arrow's memory allocator, named here so that the tools need
// not import Arrow themselves.
type Allocator = memory.Allocator

// NewAllocator returns the allocator a tool uses for all its streams (one
// per process: STYLE.md section 5).
func NewAllocator() Allocator { return memory.NewGoAllocator() }

// NewRecyclingAllocator returns an allocator for reading a long stream of
// large record batches, such as a cloud that gpc-predict reads as it goes:
// buffers of recycleMin bytes and more come back to it when Arrow releases
// them and are handed out again. Arrow's IPC reader allocates two such
// buffers per record batch (the message body, and each column's copy of
// its part of it); from a fresh allocation every time, a 1.6 GB cloud
// costs a page fault per 4 KiB and a zeroing of every byte, twice, and
// keeps the garbage collector busy.
//
// The buffers it recycles are not zeroed: use it only where Arrow fills
// what it allocates, as its IPC reader does (every byte of a message body
// and of an uncompressed column buffer is read from the stream), not for
// builders.
func NewRecyclingAllocator() Allocator { return &recycler{free: map[int][][]byte{}} }

const (
	// recycleMin is the smallest buffer recycled (smaller ones are the
	// Go allocator's); sizes are rounded up to a multiple of it.
	recycleMin = 64 << 10
	// recycleKeep bounds the bytes held for reuse.
	recycleKeep = 256 << 20
	// alignment of the buffers handed out, as memory.GoAllocator's.
	alignment = 64
)

// recycler is NewRecyclingAllocator's allocator: free lists by capacity.
type recycler struct {
	mu   sync.Mutex
	free map[int][][]byte
	kept int
}

// aligned returns a zeroed buffer of length size and capacity c (>= size)
// whose first byte is 64-byte aligned.
func aligned(size, c int) []byte {
	buf := make([]byte, c+alignment)
	shift := int(-uintptr(unsafe.Pointer(&buf[0])) & (alignment - 1))
	return buf[shift : shift+size : shift+c]
}

// Allocate returns a buffer of size bytes.
func (r *recycler) Allocate(size int) []byte {
	if size < recycleMin {
		return aligned(size, size)
	}
	c := (size + recycleMin - 1) / recycleMin * recycleMin
	r.mu.Lock()
	if l := r.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		r.free[c] = l[:len(l)-1]
		r.kept -= c
		r.mu.Unlock()
		return b[:size]
	}
	r.mu.Unlock()
	return aligned(size, c)
}

// Reallocate returns a buffer of size bytes that starts with b's.
func (r *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

// Free takes b back, for reuse if it is large and the free lists have room.
func (r *recycler) Free(b []byte) {
	c := cap(b)
	if c < recycleMin || c%recycleMin != 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kept+c <= recycleKeep {
		r.free[c] = append(r.free[c], b[:0])
		r.kept += c
	}
}
