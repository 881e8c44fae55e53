package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is the pipe buffer asked for the cloud stream: a 1.6 GB cloud
// through the default 64 KiB buffer is 25,000 round trips between the
// writer and the reader.
const pipeSize = 1 << 20

// enlargePipe grows the buffer of a pipe, if f is one, to pipeSize (or as
// much as the system allows; failures are ignored: it is only faster).
func enlargePipe(f any) {
	file, ok := f.(*os.File)
	if !ok {
		return
	}
	st, err := file.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if rc, err := file.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// isTTY reports whether f is a terminal (not merely a character device,
// as /dev/null also is).
func isTTY(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// termWidth is the width in columns of the terminal f, or 0 when f is not
// a terminal (or says nothing of its size).
func termWidth(f any) int {
	file, ok := f.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(file.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
