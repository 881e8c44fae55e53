package cli

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"testing"
)

// The multi-class pipeline on iris (examples/iris: 75 training and 75
// test flowers of three species): gpc-kernel's stream of 150 class
// differences, gpc-train, gpc-predict's class probabilities. They sum to
// one, the labels are right for at least 70 of 75 flowers (72 with these
// flags), and the output does not depend on the thread count.
func TestMulticlassPipeline(t *testing.T) {
	t.Parallel()
	cov := runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "2", "--beta", "4", "--label", "species", "--id", "id",
		"--train", "../../examples/iris/train.csv", "--test", "../../examples/iris/test.csv", "--batch-size", "100"}})
	predict := func(threads string) []byte {
		cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "4000", "--threads", threads}, stdin: cov})
		return runCLI(t, Predict, cliCase{args: []string{"--format", "csv", "--threads", threads, "--batch-size", "50"}, stdin: cloud})
	}
	out := predict("1")
	if again := predict("3"); !bytes.Equal(out, again) {
		t.Fatal("the posteriors differ between 1 and 3 threads")
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "p_setosa", "p_versicolor", "p_virginica", "se_setosa", "se_versicolor", "se_virginica", "label", "y"}
	if len(rows) != 76 || len(rows[0]) != len(want) {
		t.Fatalf("%d rows of %d columns, want 76 of %d: %v", len(rows), len(rows[0]), len(want), rows[0])
	}
	for i, h := range want {
		if rows[0][i] != h {
			t.Fatalf("header %v, want %v", rows[0], want)
		}
	}
	right := 0
	for _, r := range rows[1:] {
		sum := 0.0
		for _, s := range r[1:4] {
			p, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += p
		}
		// Three bivariate normal orthants per particle: they sum to one
		// to within rounding and BivariateUpper's 1e-15.
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("id %s: the probabilities sum to %v", r[0], sum)
		}
		if r[7] == r[8] {
			right++
		}
	}
	if right < 70 {
		t.Errorf("%d of 75 test flowers labelled right, want at least 70", right)
	}
}

// gpc-predict --count hard has no meaning for class probabilities.
func TestMulticlassHardCount(t *testing.T) {
	t.Parallel()
	cov := runCLI(t, Kernel, cliCase{args: []string{"--label", "species", "--id", "id",
		"--train", "../../examples/iris/train.csv", "--test", "../../examples/iris/test.csv"}})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "500"}, stdin: cov})
	runCLI(t, Predict, cliCase{args: []string{"--count", "hard"}, stdin: cloud, code: ExitUsage, stderr: "--count hard"})
}

// --class-alpha and --class-beta give each class its kernel: the same
// values as --alpha and --beta give the same covariance, others another;
// a count that is not the number of classes is a usage error.
func TestClassKernels(t *testing.T) {
	t.Parallel()
	args := func(extra ...string) []string {
		return append([]string{"--label", "species", "--id", "id", "--train", "../../examples/iris/train.csv", "--format", "csv", "--alpha", "2", "--beta", "4"}, extra...)
	}
	shared := runCLI(t, Kernel, cliCase{args: args()})
	same := runCLI(t, Kernel, cliCase{args: args("--class-alpha", "2,2,2", "--class-beta", "4,4,4")})
	if !bytes.Equal(shared, same) {
		t.Error("--class-alpha 2,2,2 --class-beta 4,4,4 differs from --alpha 2 --beta 4")
	}
	other := runCLI(t, Kernel, cliCase{args: args("--class-beta", "4,4,8")})
	if bytes.Equal(shared, other) {
		t.Error("--class-beta 4,4,8 gives the covariance of --beta 4")
	}
	runCLI(t, Kernel, cliCase{args: args("--class-beta", "1,2"), code: ExitUsage, stderr: `--class-beta has 2 values for the 3 classes "setosa", "versicolor", "virginica"`})
	runCLI(t, Kernel, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--class-beta", "1,2"}, code: ExitUsage, stderr: "for three or more classes"})
}

// Dictionary-encoded labels (a pandas category written to Arrow) are read
// as their values: testdata/iris-train-dict.arrows is
// examples/iris/train.csv with species dictionary-encoded, and gives the
// same covariance.
func TestDictionaryLabels(t *testing.T) {
	t.Parallel()
	args := func(train string) []string {
		return []string{"--label", "species", "--id", "id", "--train", train, "--format", "csv", "--alpha", "2", "--beta", "4"}
	}
	want := runCLI(t, Kernel, cliCase{args: args("../../examples/iris/train.csv")})
	if got := runCLI(t, Kernel, cliCase{args: args("testdata/iris-train-dict.arrows")}); !bytes.Equal(got, want) {
		t.Error("the dictionary-encoded Arrow file gives another covariance than the CSV file")
	}
}
