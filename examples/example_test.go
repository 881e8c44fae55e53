// Package examples holds the data the README runs, and the test that keeps
// the files and the README's figures true.
package examples

import (
	"bytes"
	"encoding/csv"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/internal/cli"
	"github.com/gpc-mc/gpc/internal/oracle"
)

var update = flag.Bool("update", false, "rewrite the example files")

// oneFactorLoadings are the loadings of examples/onefactor-100.csv: the
// paper's Experiment 1 setup, d_i uniform on [-1, 1], rounded to 4 decimals
// so that every covariance entry d_i d_j prints exactly.
func oneFactorLoadings() []float64 {
	r := rand.New(rand.NewPCG(2013, 100))
	d := make([]float64, 100)
	for i := range d {
		d[i] = math.Round((2*r.Float64()-1)*1e4) / 1e4
	}
	return d
}

// readmeExact is the exact log P the README quotes for onefactor-100.csv.
const readmeExact = "-71.85754"

func TestOneFactorExample(t *testing.T) {
	d := oneFactorLoadings()
	var b bytes.Buffer
	for i, di := range d {
		for j, dj := range d {
			if j > 0 {
				b.WriteByte(',')
			}
			v := 1.0
			if i != j {
				v = di * dj
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	if *update {
		if err := os.WriteFile("onefactor-100.csv", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("onefactor-100.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Error("onefactor-100.csv differs from its recipe (go test ./examples -update)")
	}
	exact := strconv.FormatFloat(oracle.OneFactorLogP(d), 'f', 5, 64)
	t.Logf("exact log P = %s", exact)
	if exact != readmeExact {
		t.Errorf("exact log P is %s; readmeExact (and README.md) say %s", exact, readmeExact)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), readmeExact) {
		t.Errorf("README.md does not quote the exact value %s", readmeExact)
	}
}

// TestCrabsExample runs the README's first command (in process) and checks
// what the README says of it: 99 of the 100 test crabs classified right.
func TestCrabsExample(t *testing.T) {
	run := func(tool func([]string, io.Reader, io.Writer, io.Writer) int, args []string, in []byte) []byte {
		var out, errb bytes.Buffer
		if code := tool(args, bytes.NewReader(in), &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.Bytes()
	}
	// The README's first command: fit, then kernel, train and predict.
	hyper := run(cli.Fit, []string{"--standardize", "--train", "crabs/train.csv", "--format", "csv"}, nil)
	hrecs, err := csv.NewReader(bytes.NewReader(hyper)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// gpc-tune's optimum on crabs (docs/tuning.md, the README's gpc-tune
	// command) is -22.80; the fit must be within 0.5 nats of it.
	const tuneBest = -22.80
	if lml, err := strconv.ParseFloat(hrecs[1][4], 64); err != nil || hrecs[0][4] != "log_ml" || !(lml >= tuneBest-0.5) {
		t.Errorf("gpc-fit's log ML %q (%v): not within 0.5 nats of gpc-tune's best %v", hrecs[1][4], err, tuneBest)
	}
	cov := run(cli.Kernel, []string{"--hyper", "-", "--standardize", "--train", "crabs/train.csv", "--test", "crabs/test.csv"}, hyper)
	post := run(cli.Predict, []string{"--format", "csv"}, run(cli.Train, nil, cov))
	recs, err := csv.NewReader(bytes.NewReader(post)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for _, r := range recs[1:] {
		if r[3] == r[4] {
			right++
		}
	}
	if len(recs)-1 != 100 || right != 99 {
		t.Errorf("%d of %d right; README.md says 99 of 100", right, len(recs)-1)
	}
	readme, _ := os.ReadFile("../README.md")
	// The README's first sample output (whose pipeline TestREADMEOutputs
	// runs) ends with the same count.
	if !strings.Contains(string(readme), "\n    99 of 100 labelled test rows right (") {
		t.Error("README.md no longer quotes the crabs result this test checks")
	}
}
