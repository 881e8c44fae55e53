package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"gpc/format"
)

// fitArgs fits crabs' RBF kernel with few particles.
var fitArgs = []string{"--train", "../../examples/crabs/train.csv", "--standardize", "--samples", "500", "--final-samples", "1000"}

// TestFitHyperRoundTrip checks that gpc-kernel --hyper takes gpc-fit's
// hyperparameters as they are, from Arrow and from CSV, into the
// covariance's metadata; and that gpc-fit's output does not depend on the
// thread count.
func TestFitHyperRoundTrip(t *testing.T) {
	arrow := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--threads", "1")})
	if again := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--threads", "2")}); !bytes.Equal(arrow, again) {
		t.Errorf("gpc-fit: --threads 1 and 2 differ")
	}
	csv := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--format", "csv")})
	f, err := format.ReadFrame(bytes.NewReader(csv), "fit.csv", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	fit, rows, err := format.ReadHyper(f)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Kernel != "rbf" || !fit.Standardize || len(rows) != 2 {
		t.Fatalf("fit %+v rows %+v", fit, rows)
	}
	// The log ML at crabs' optimum is about -22.8 (docs/fitting.md).
	if !(fit.LogML > -23.5 && fit.LogML < -22) {
		t.Errorf("log ML %v: not near crabs' optimum", fit.LogML)
	}
	for _, in := range [][]byte{arrow, csv} {
		cov := runCLI(t, Kernel, cliCase{args: []string{"--train", "../../examples/crabs/train.csv", "--standardize", "--hyper", "-"}, stdin: in})
		c, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Meta["gpc:alpha"], strconv.FormatFloat(rows[0].Value, 'g', -1, 64); got != want {
			t.Errorf("gpc:alpha %q, want %q", got, want)
		}
		if got, want := c.Meta["gpc:beta"], strconv.FormatFloat(rows[1].Value, 'g', -1, 64); got != want {
			t.Errorf("gpc:beta %q, want %q", got, want)
		}
	}
}

// TestFitARDFeatures checks that the ard kernel's length scales are
// matched to the training file's features by name, whatever the table's
// row order.
func TestFitARDFeatures(t *testing.T) {
	hyper := "kernel,name,feature,value\nard,beta,,3\nard,alpha,b,5\nard,alpha,a,2\n"
	cov := runCLI(t, Kernel, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: []byte(hyper)})
	c, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Meta["gpc:alpha"]; got != "2,5" || c.Meta["gpc:kernel"] != "ard" || c.Meta["gpc:beta"] != "3" {
		t.Errorf("kernel %q alpha %q beta %q, want ard 2,5 3", c.Meta["gpc:kernel"], got, c.Meta["gpc:beta"])
	}
	if !strings.Contains(c.Meta["gpc:features"], "a") {
		t.Errorf("features %q", c.Meta["gpc:features"])
	}
}
