package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// effectiveGroups is the effective number of groups of group estimates
// exp(logZ[g]) of sizes[g] particles, (sum_g n_g I_g)^2 / sum_g (n_g I_g)^2,
// computed here as the definition says (not by core), relative to the
// largest estimate.
func effectiveGroups(logZ []float64, sizes []int) float64 {
	mx := math.Inf(-1)
	for _, l := range logZ {
		mx = math.Max(mx, l)
	}
	var s, s2 float64
	for g, l := range logZ {
		x := float64(sizes[g]) * math.Exp(l-mx)
		s += x
		s2 += x * x
	}
	return s * s / s2
}

// listFloats and listInts parse a comma-separated metadata list.
func listFloats(t *testing.T, meta map[string]string, key string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Split(meta[key], ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, v)
	}
	return out
}

func listInts(t *testing.T, meta map[string]string, key string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(meta[key], ",") {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, v)
	}
	return out
}

// streamMeta is an Arrow stream's metadata.
func streamMeta(t *testing.T, data []byte) map[string]string {
	t.Helper()
	tab, err := format.ReadAnyTable(bytes.NewReader(data), "stream")
	if err != nil {
		t.Fatal(err)
	}
	return tab.Meta
}

// withGroups is a posteriors-like stream of one row whose metadata gives
// the group estimates logZ of sizes particles.
func withGroups(t *testing.T, logZ []float64, sizes []int) []byte {
	t.Helper()
	tab := &format.Table{Meta: map[string]string{
		format.KeySchema:     format.SchemaPosterior,
		format.KeyGroupLogP:  format.JoinFloats(logZ),
		format.KeyGroupSizes: format.JoinInts(sizes),
	}, Cols: []format.Column{{Name: "p", Float: []float64{0.5}}}}
	var b bytes.Buffer
	if err := format.WriteTable(&b, tab, format.Arrow, 0, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestShowSummaryKnown: gpc-show --summary on group estimates whose mean,
// standard error and effective groups are known in closed form.
func TestShowSummaryKnown(t *testing.T) {
	t.Parallel()
	const tol = 1e-12 // a few rounding errors of the log-sum-exp
	for _, c := range []struct {
		name        string
		logZ        []float64
		sizes       []int
		logML, se   float64
		groups, eff float64
	}{
		// I = (2, 1, 1, 0) e^-100, equal groups: the mean e^-100, eff
		// (sum I)^2 / sum I^2 = 16/6; the spread of I/mean = (2, 1, 1, 0)
		// has variance 2/3 over n = 10 particles a group, 40 in all.
		{"equal", []float64{math.Log(2) - 100, -100, -100, math.Inf(-1)}, []int{10, 10, 10, 10},
			-100, core.StudentScale(4) * math.Sqrt(10*(1+0+0+1)/3.0/40), 4, 8.0 / 3},
		// I = (1, 4) e^-100 in groups of 30 and 10: the weighted mean
		// 70/40 e^-100, eff (30 + 40)^2 / (30^2 + 40^2) = 1.96.
		{"unequal", []float64{-100, math.Log(4) - 100}, []int{30, 10},
			math.Log(1.75) - 100, core.StudentScale(2) * math.Sqrt((30*0.75*0.75+10*2.25*2.25)/1/40) / 1.75, 2, 1.96},
		// Groups that agree carry the mean together.
		{"agree", []float64{-7, -7, -7}, []int{5, 5, 5}, -7, 0, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runCLI(t, Show, cliCase{args: []string{"--summary", "--format", "csv"}, stdin: withGroups(t, c.logZ, c.sizes)})
			if head := strings.SplitN(string(out), "\n", 2)[0]; head != "log_ml,se_log_ml,samples,groups,effective_groups" {
				t.Fatalf("header %q", head)
			}
			samples := 0
			for _, n := range c.sizes {
				samples += n
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"log_ml", csvField(t, out, "log_ml"), c.logML},
				{"se_log_ml", csvField(t, out, "se_log_ml"), c.se},
				{"samples", csvField(t, out, "samples"), float64(samples)},
				{"groups", csvField(t, out, "groups"), c.groups},
				{"effective_groups", csvField(t, out, "effective_groups"), c.eff},
			} {
				if math.Abs(f.got-f.want) > tol*math.Max(1, math.Abs(f.want)) {
					t.Errorf("%s %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}

// TestShowSummaryStreams: gpc-show --summary reads a cloud's group rows
// (dense and Vecchia) and gpc-predict's posteriors' metadata to the same
// figures, gpc-predict's log ML and the effective groups of the groups'
// estimates; gpc-train and gpc-orthant --progress note the same effective
// groups; a shard, a stream without groups and --meta with --summary are
// refused.
func TestShowSummaryStreams(t *testing.T) {
	t.Parallel()
	dense := append(append([]string{}, tiny...), "--alpha", "1.5")
	vecchia := []string{"--train", "testdata/vecchia-train.csv", "--test", "testdata/vecchia-test.csv", "--label", "y", "--id", "id", "--alpha", "6", "--beta", "10", "--vecchia", "4"}
	for _, c := range []struct {
		name   string
		kernel []string
	}{{"dense", dense}, {"vecchia", vecchia}} {
		t.Run(c.name, func(t *testing.T) {
			train := []string{"--samples", "2000", "--groups", "16", "--seed", "3"}
			cov, cloud, post := pipeline(t, c.kernel, train, nil)
			meta := streamMeta(t, post)
			logZ, sizes := listFloats(t, meta, format.KeyGroupLogP), listInts(t, meta, format.KeyGroupSizes)
			eff := effectiveGroups(logZ, sizes)
			fromCloud := runCLI(t, Show, cliCase{args: []string{"--summary", "--format", "csv"}, stdin: cloud})
			fromPost := runCLI(t, Show, cliCase{args: []string{"--summary", "--format", "csv"}, stdin: post})
			if !bytes.Equal(fromCloud, fromPost) {
				t.Errorf("the cloud's summary %q is not the posteriors' %q", fromCloud, fromPost)
			}
			if got, want := strconv.FormatFloat(csvField(t, fromCloud, "log_ml"), 'g', -1, 64), meta[format.KeyLogML]; got != want {
				t.Errorf("log_ml %s, gpc-predict's %s", got, want)
			}
			if got := csvField(t, fromCloud, "effective_groups"); math.Abs(got-eff) > 1e-12*eff || csvField(t, fromCloud, "groups") != 16 {
				t.Errorf("effective_groups %v of %v groups, want %v of 16", got, csvField(t, fromCloud, "groups"), eff)
			}
			note := fmt.Sprintf("from 16 groups: effectively %.1f of them carry the mean", eff)
			for _, tool := range []struct {
				name string
				run  func([]string, io.Reader, io.Writer, io.Writer) int
			}{{"gpc-train", Train}, {"gpc-orthant", Orthant}} {
				var out, errb bytes.Buffer
				if code := tool.run(append([]string{"--progress"}, train...), bytes.NewReader(cov), &out, &errb); code != 0 {
					t.Fatalf("%s --progress: exit %d: %s", tool.name, code, errb.String())
				}
				if !strings.Contains(errb.String(), tool.name+": estimate: log P ") || !strings.Contains(errb.String(), note) {
					t.Errorf("%s --progress does not note %q:\n%s", tool.name, note, errb.String())
				}
			}
			for _, sh := range []string{"0/2", "1/2"} {
				shard := runCLI(t, Train, cliCase{args: append([]string{"--shard", sh}, train...), stdin: cov})
				runCLI(t, Show, cliCase{args: []string{"--summary"}, stdin: shard, code: ExitData, stderr: "a shard holds a range of the groups: merge the shards first"})
			}
			runCLI(t, Show, cliCase{args: []string{"--summary"}, stdin: cov, code: ExitData, stderr: "no particle groups' estimates"})
		})
	}
	runCLI(t, Show, cliCase{args: []string{"--summary", "--meta"}, stdin: withGroups(t, []float64{-1, -1}, []int{4, 4}), code: ExitUsage, stderr: "--meta and --summary"})
}
