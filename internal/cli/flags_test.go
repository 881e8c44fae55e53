package cli

import (
	"io"
	"slices"
	"testing"
)

// toolCmds are the tools' names, descriptions and flag structs.
func toolCmds() []struct {
	name, description string
	cmd               runner
} {
	return []struct {
		name, description string
		cmd               runner
	}{
		{"gpc-kernel", kernelDescription, &kernelCmd{}},
		{"gpc-orthant", orthantDescription, &orthantCmd{}},
		{"gpc-train", trainDescription, &trainCmd{}},
		{"gpc-predict", predictDescription, &predictCmd{}},
		{"gpc-tune", tuneDescription, &tuneCmd{}},
		{"gpc-mcmc", mcmcDescription, &mcmcCmd{}},
	}
}

// gridFlags are gpc-tune's own --alpha, --beta and --bias: a value, a list
// or a range each, where gpc-kernel and gpc-mcmc take one value.
var gridFlags = []string{"alpha", "beta", "bias"}

// TestSharedFlags: a flag that several tools take has the same help in
// every one of them (it is declared once, in flags.go, and embedded), but
// for gpc-tune's grids.
func TestSharedFlags(t *testing.T) {
	type decl struct{ tool, help string }
	flags := map[string][]decl{}
	for _, tc := range toolCmds() {
		p, err := newParser(tc.name, tc.description, tc.cmd, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, group := range p.Model.AllFlags(true) {
			for _, f := range group {
				flags[f.Name] = append(flags[f.Name], decl{tc.name, f.Help})
			}
		}
	}
	shared := 0
	for name, ds := range flags {
		if len(ds) < 2 {
			continue
		}
		shared++
		var first *decl
		for i, d := range ds {
			if d.tool == "gpc-tune" && slices.Contains(gridFlags, name) {
				continue
			}
			if first == nil {
				first = &ds[i]
				continue
			}
			if d.help != first.help {
				t.Errorf("--%s: %s and %s differ:\n %s: %s\n %s: %s", name, first.tool, d.tool, first.tool, first.help, d.tool, d.help)
			}
		}
	}
	// The shared flags the tools must all have.
	for _, name := range []string{"format", "threads", "quiet", "progress", "version", "help"} {
		if len(flags[name]) != len(toolCmds()) {
			t.Errorf("--%s: in %d of %d tools", name, len(flags[name]), len(toolCmds()))
		}
	}
	for _, name := range []string{"train", "label", "positive", "id", "standardize", "kernel", "samples", "seed", "method", "order", "groups", "ess", "jitter", "max-memory", "batch-size"} {
		if len(flags[name]) < 2 {
			t.Errorf("--%s is in %d tool(s), want a shared flag", name, len(flags[name]))
		}
	}
	t.Logf("%d flags are shared by several tools", shared)
}

// TestSamplesDefault: --samples, shared, keeps each tool's own default.
func TestSamplesDefault(t *testing.T) {
	want := map[string]string{"gpc-orthant": "10000", "gpc-train": "10000", "gpc-tune": "2000", "gpc-mcmc": "1000"}
	for _, tc := range toolCmds() {
		p, err := newParser(tc.name, tc.description, tc.cmd, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for _, group := range p.Model.AllFlags(true) {
			for _, f := range group {
				if f.Name == "samples" && f.Default != want[tc.name] {
					t.Errorf("%s --samples defaults to %q, want %q", tc.name, f.Default, want[tc.name])
				}
			}
		}
	}
}
