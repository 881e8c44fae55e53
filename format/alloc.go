package format

import "github.com/apache/arrow/go/v17/arrow/memory"

// Allocator is Arrow's memory allocator, named here so that the tools need
// not import Arrow themselves.
type Allocator = memory.Allocator

// NewAllocator returns the allocator a tool uses for all its streams (one
// per process: STYLE.md section 5).
func NewAllocator() Allocator { return memory.NewGoAllocator() }
