package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gpc/format"
)

// The tests of this file are a newcomer's stumbles (issue 21), each
// checked the way it was found.

// TestPosteriorsFileFormat: gpc-mcmc's --posteriors file is written in
// the encoding its name says, whatever --format says of standard output.
func TestPosteriorsFileFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		file, flag string
		csv        bool
	}{
		{"p.csv", "auto", true},
		{"p.csv", "arrow", true},
		{"p.arrows", "csv", false},
		{"p.out", "csv", true},
		{"q.out", "auto", false},
	} {
		path := filepath.Join(dir, c.file)
		runCLI(t, MCMC, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--test", "testdata/tiny-test.csv",
			"--label", "sex", "--positive", "M", "--id", "name", "--samples", "64", "--iterations", "4", "--burn", "0",
			"--format", c.flag, "--posteriors", path}})
		data := mustRead(t, path)
		if got := bytes.HasPrefix(data, []byte("id,p,se,label,y,sd_hyper\n")); got != c.csv {
			t.Errorf("--posteriors %s --format %s: CSV %v, want %v", c.file, c.flag, got, c.csv)
		}
		if !c.csv {
			if err := format.Dump(&bytes.Buffer{}, bytes.NewReader(data)); err != nil {
				t.Errorf("--posteriors %s --format %s: not an Arrow stream: %v", c.file, c.flag, err)
			}
		}
		os.Remove(path)
	}
}
