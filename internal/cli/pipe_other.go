//go:build !linux

package cli

// enlargePipe does nothing where pipe buffers cannot be resized.
func enlargePipe(any) {}

// isTTY reports whether f is a terminal: a character device, here.
func isTTY(f any) bool { return isTerminal(f) }
