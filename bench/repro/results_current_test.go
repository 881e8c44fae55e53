package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResultsCurrent fails when docs/results.md was generated from a core/
// other than the tree's: its numbers would describe code that is gone.
func TestResultsCurrent(t *testing.T) {
	root, err := repoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	named, ok := parseCoreHash(doc)
	if !ok {
		t.Fatalf("docs/results.md names no core/ hash (a line starting %q): regenerate it with `%s`", coreHashPrefix, regenerate)
	}
	tree, files, err := CoreHash(root)
	if err != nil {
		t.Fatal(err)
	}
	if named != tree {
		t.Fatalf("docs/results.md was generated from another core/ (its hash %s; the tree's %s, %d files): regenerate it with `%s` (about 10 CPU minutes: under 10 minutes on 2 idle cores), then re-read its summary", named, tree, files, regenerate)
	}
}
