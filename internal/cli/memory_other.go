//go:build !linux

package cli

// availableMemory is an assumed 8 GiB where the machine's memory is not
// looked up.
func availableMemory() int64 { return 8 << 30 }
