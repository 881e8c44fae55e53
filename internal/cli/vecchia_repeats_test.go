package cli

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

// The Vecchia path on real tables' repeated values, and its warnings
// where the proposal falls back (docs/vecchia.md).

// roundedCSV is the two-class problem's n points with their features
// rounded to one decimal (as a table of rounded measurements has them:
// points repeat from n = 200 on), rows shuffled (seed), then extra rows:
// copies of the first `copies` rows' features with labels flipped, and
// (copies > 0) a new point twice, with either label, so that in the
// given order the last position is a repeat; as CSV text.
func roundedCSV(n int, seed uint64, copies int) string {
	lines := strings.Split(strings.TrimSpace(string(twoClassCSV(n, seed))), "\n")
	rows := make([]string, 0, n+copies)
	for _, l := range lines[1:] {
		var x1, x2, y float64
		if _, err := fmt.Sscanf(strings.ReplaceAll(l, ",", " "), "%g %g %g", &x1, &x2, &y); err != nil {
			panic(err)
		}
		rows = append(rows, fmt.Sprintf("%.1f,%.1f,%v", x1, x2, y))
	}
	r := rand.New(rand.NewPCG(seed, 0x5ffe))
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	for _, l := range rows[:copies] {
		f := strings.Split(l, ",")
		y := "1"
		if f[2] == "1" {
			y = "-1"
		}
		rows = append(rows, f[0]+","+f[1]+","+y)
	}
	if copies > 0 {
		rows = append(rows, "0.05,0.05,1", "0.05,0.05,-1")
	}
	return lines[0] + "\n" + strings.Join(rows, "\n") + "\n"
}

// writeFile writes text to a file in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVecchiaRoundedData runs the Vecchia pipeline on rounded data, whose
// points repeat (a repeat last in the given order), with test rows that
// repeat training rows and each other, in both orders and with more
// neighbours than distinct points: gpc-train and gpc-orthant complete
// without a warning, their outputs do not depend on --threads or on
// sharding, byte for byte, the log marginal likelihood is within a nat
// (and its standard errors) of the dense path's, and test rows with the
// same features get the same posterior.
func TestVecchiaRoundedData(t *testing.T) {
	dir := t.TempDir()
	train := writeFile(t, dir, "train.csv", roundedCSV(200, 1, 3))
	test := roundedCSV(30, 2, 0)
	tl := strings.Split(strings.TrimSpace(test), "\n")
	trl := strings.Split(strings.TrimSpace(roundedCSV(200, 1, 3)), "\n")
	// Test rows 0-2 repeat training rows (the last among them), 3 and 4
	// each other.
	tl[1], tl[2], tl[3], tl[5] = trl[len(trl)-1], trl[7], trl[100], tl[4]
	testPath := writeFile(t, dir, "test.csv", strings.Join(tl, "\n")+"\n")
	cov := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--train", train}})
	dense := runCLI(t, Orthant, cliCase{args: []string{"--samples", "20000", "--format", "csv"}, stdin: cov})
	for _, c := range []struct {
		order string
		m     string
	}{{"maxmin", "30"}, {"given", "30"}, {"maxmin", "200"}} {
		t.Run(c.order+"/m="+c.m, func(t *testing.T) {
			model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--vecchia", c.m, "--vecchia-order", c.order, "--train", train, "--test", testPath},
				stderr: "training points repeat an earlier point's features"})
			cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "4000", "--threads", "1"}, stdin: model})
			if c2 := runCLI(t, Train, cliCase{args: []string{"--samples", "4000", "--threads", "2"}, stdin: model}); !bytes.Equal(cloud, c2) {
				t.Errorf("the cloud differs between --threads 1 and 2")
			}
			var files []string
			for i := range 3 {
				shard := runCLI(t, Train, cliCase{args: []string{"--samples", "4000", "--shard", fmt.Sprintf("%d/3", i)}, stdin: model})
				files = append(files, writeFile(t, t.TempDir(), "shard.arrows", string(shard)))
			}
			if merged := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, files...)}); !bytes.Equal(merged, cloud) {
				t.Errorf("the merged shards differ from the unsharded cloud")
			}
			orth := runCLI(t, Orthant, cliCase{args: []string{"--samples", "4000", "--format", "csv"}, stdin: model})
			logP, se := csvField(t, orth, "log_p"), csvField(t, orth, "se_log_p")
			if d := logP - csvField(t, dense, "log_p"); !(math.Abs(d) <= 1+4*math.Hypot(se, csvField(t, dense, "se_log_p"))) {
				t.Errorf("Vecchia log ML %v (se %v), dense %v: %v apart", logP, se, csvField(t, dense, "log_p"), d)
			}
			post := strings.Split(strings.TrimSpace(string(runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud}))), "\n")
			if len(post) != 31 {
				t.Fatalf("%d posterior lines", len(post))
			}
			p3, p4 := strings.Split(post[4], ","), strings.Split(post[5], ",")
			if p3[1] != p4[1] || p3[2] != p4[2] {
				t.Errorf("test rows 3 and 4 have the same features and posteriors %v and %v", p3[1:3], p4[1:3])
			}
		})
	}
}

// TestVecchiaOnePoint runs the pipeline on data whose points are all the
// same: one latent value observed by every row, with more neighbours
// asked for than there are distinct points.
func TestVecchiaOnePoint(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := range 120 {
		fmt.Fprintf(&b, "0.5,-1,%d\n", 1-2*(i%3/2))
	}
	train := writeFile(t, dir, "train.csv", b.String())
	test := writeFile(t, dir, "test.csv", "x1,x2\n0.5,-1\n0.5,-1\n3,3\n")
	model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "4", "--vecchia", "5", "--train", train, "--test", test}, stderr: "119 of 120 training points repeat"})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "2000"}, stdin: model})
	post := strings.Split(strings.TrimSpace(string(runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud}))), "\n")
	if len(post) != 4 || post[1][strings.Index(post[1], ","):] != post[2][strings.Index(post[2], ","):] {
		t.Errorf("posteriors %q: test rows 0 and 1 are the same point", post)
	}
}

// modelStream writes a Vecchia stream of the model of the given rows
// (CSR offsets, neighbours, coefficients, variances) and labels y, noise 1.
func modelStream(t *testing.T, start []int, nbr []int32, coef, condVar []float64, y []float64) []byte {
	t.Helper()
	n := len(condVar)
	m := &vecchia.Model{N: n, Noise: 1, Start: start, Nbr: nbr, Coef: coef, CondVar: condVar, Lower: make([]float64, n), Upper: make([]float64, n)}
	s := &format.VecchiaStream{Model: m, Y: y}
	for k := range n {
		m.Lower[k], m.Upper[k] = 0, math.Inf(1)
		if y[k] < 0 {
			m.Lower[k], m.Upper[k] = math.Inf(-1), 0
		}
		s.Row = append(s.Row, k)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := format.WriteVecchia(&out, s, 256, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestVecchiaFallbackWarnings checks the tools on models whose EP sites
// break the proposal's incomplete factorisation (core/vecchia's
// fallback_test.go has them): gpc-train and gpc-orthant complete,
// say that the proposal keeps only a share of EP's sites, and record it
// (gpc:vecchia_prepare's site_scale and ep_rounds); where even the nearly
// removed sites break it, they exit 65 with one line that says what to do.
func TestVecchiaFallbackWarnings(t *testing.T) {
	stop := modelStream(t, []int{0, 0, 1, 3, 5, 7, 10, 13}, []int32{0, 0, 1, 0, 2, 0, 3, 2, 3, 4, 3, 4, 5},
		[]float64{-1071, 6321, 2322, -1503, 4556, 9444, -57, 4150, -7524, 6999, -8124, 2544, 1278},
		[]float64{37, 0.0008, 0.0005, 0.0001, 0.0001, 0.0005, 0.0007}, []float64{1, 1, 1, 1, 1, -1, -1})
	const keeps = "the proposal keeps only"
	runCLI(t, Train, cliCase{args: []string{"--samples", "1000", "--format", "csv"}, stdin: stop, stderr: keeps})
	out := runCLI(t, Orthant, cliCase{args: []string{"--samples", "1000", "--format", "arrow"}, stdin: stop, stderr: keeps})
	var dump strings.Builder
	if err := format.Dump(&dump, bytes.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	if d := dump.String(); strings.Contains(d, "site_scale=1 ") || !strings.Contains(d, "site_scale=") || strings.Contains(d, "ep_rounds=6 ") {
		t.Errorf("gpc:vecchia_prepare does not record the fallback: %s", d)
	}
	broken := brokenStream(t)
	const msg = "breaks down even with the later sites nearly removed"
	runCLI(t, Train, cliCase{args: []string{"--samples", "1000"}, stdin: broken, code: ExitData, stderr: msg})
	runCLI(t, Orthant, cliCase{args: []string{"--samples", "1000"}, stdin: broken, code: ExitData, stderr: msg})
}

// brokenStream is the Vecchia stream of a model whose later rows break the
// proposal's incomplete factorisation even with their sites nearly
// removed (core/vecchia's brokenModel).
func brokenStream(t *testing.T) []byte {
	return modelStream(t, []int{0, 0, 1, 2, 5, 7, 9}, []int32{0, 0, 0, 1, 2, 2, 3, 3, 4},
		[]float64{-9379, 8699, -9666, -4130, -1218, 4874, -4719, 781, -4127},
		[]float64{28, 0.0005, 0.0009, 0.0002, 0.0001, 0.0005}, []float64{-1, 1, 1, 1, -1, -1})
}
