//go:build !linux

package cli

// enlargePipe does nothing where pipe buffers cannot be resized.
func enlargePipe(any) {}
