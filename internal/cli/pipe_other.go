//go:build !linux

package cli

// enlargePipe does nothing where pipe buffers cannot be resized.
func enlargePipe(any) {}

// isTTY reports whether f is a terminal: a character device, here.
func isTTY(f any) bool { return isTerminal(f) }

// termWidth is 0 (unknown) where the terminal's size is not asked.
func termWidth(any) int { return 0 }
