package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var updateExamples = flag.Bool("update-examples", false, "rewrite examples/exp4 from the generator")

// exp4CSV writes n patterns of Experiment 4 data as CSV: x1, x2, y.
func exp4CSV(x, y []float64, n int) []byte {
	var b bytes.Buffer
	b.WriteString("x1,x2,y\n")
	for i := range n {
		b.WriteString(strconv.FormatFloat(x[2*i], 'g', -1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(x[2*i+1], 'g', -1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y[i], 'g', -1, 64))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestExp4Example: examples/exp4 (the data of docs/benchmarks.md's
// headline run through the tools) is the Experiment 4 generator's output:
// 200 training and 200 test patterns, seed 1, the data of
// BenchmarkHeadline.
func TestExp4Example(t *testing.T) {
	p := Exp4Problem{N: 200, NTest: 200, D: 2, Shift: 1, Sigma2: sigma0}
	d := p.Generate(1)
	dir := filepath.Join("..", "examples", "exp4")
	for name, data := range map[string][]byte{"train.csv": exp4CSV(d.X, d.Y, p.N), "test.csv": exp4CSV(d.XTest, d.YTest, p.NTest)} {
		path := filepath.Join(dir, name)
		if *updateExamples {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s differs from the generator's data (go test ./bench -run TestExp4Example -update-examples)", path)
		}
	}
}
