package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpc-mc/gpc/format"
)

const showDescription = `Show a saved stream (any gpc tool's Arrow output, or any Arrow IPC stream) as a table or as CSV, or its metadata.

` + pipelineHelp + `

The tools write Arrow IPC streams to pipes and files; gpc-show prints one for people: a table (the default, also off a terminal), or CSV with --format csv (every digit), or the stream again with --format arrow. Numbers are shown to 7 significant digits in the table; lists (a covariance's or a cloud's rows) in brackets. With --meta it prints the stream's metadata instead, one "key = value" line each, sorted: its schema, the tool and version that wrote it, the seed, the kernel and its hyperparameters, the fingerprint of the train block, the estimate. The whole stream is read into memory: show a large cloud's metadata, or a few rows (| head), rather than all of it.

` + examplesHelp + `
  gpc-orthant --samples 2000 examples/onefactor-100.csv > logp.arrows
  gpc-show logp.arrows
  gpc-show --meta logp.arrows
  gpc-show --format csv logp.arrows

` + exitHelp

// showCmd is gpc-show's command line.
type showCmd struct {
	Input       string `arg:"" optional:"" default:"-" help:"An Arrow IPC stream; - or nothing reads standard input."`
	Meta        bool   `help:"Print the stream's metadata (key = value, sorted by key) instead of its rows."`
	commonFlags `embed:""`
}

// Show runs gpc-show.
func Show(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-show", showDescription, &showCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *showCmd) Validate() error {
	return c.validateCommon()
}

func (c *showCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	t, err := format.ReadAnyTable(r, name)
	if err != nil {
		return err
	}
	if c.Meta {
		var b strings.Builder
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range t.Meta {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "%s = %s\n", k, oneLine(t.Meta[k]))
		}
		if _, err := io.WriteString(e.stdout, b.String()); err != nil {
			return &format.IOError{Op: "write output", Err: err}
		}
		return nil
	}
	f := format.Text
	switch c.Format {
	case "csv":
		f = format.CSV
	case "arrow":
		f = format.Arrow
	}
	return format.WriteTable(e.stdout, t, f, 0, format.NewAllocator())
}
