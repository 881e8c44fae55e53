package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoreHash: the hash covers exactly the non-test .go and .s files
// under core/, their paths and their bytes.
func TestCoreHash(t *testing.T) {
	root := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hash := func() string {
		t.Helper()
		h, _, err := CoreHash(root)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	write("core/a.go", "package core\n")
	write("core/gp/b.go", "package gp\n")
	write("core/x_amd64.s", "TEXT ·x(SB)\n")
	h0 := hash()
	if _, n, _ := CoreHash(root); n != 3 || !strings.HasPrefix(h0, "sha256:") || len(h0) != len("sha256:")+64 {
		t.Fatalf("%d files, hash %q", n, h0)
	}
	// Not code: tests, testdata, other files, files outside core/.
	write("core/a_test.go", "package core\n")
	write("core/testdata/c.go", "package c\n")
	write("core/README.md", "x")
	write("format/d.go", "package format\n")
	if h := hash(); h != h0 {
		t.Errorf("a file that is not core's code changed the hash")
	}
	for _, c := range []struct{ path, body string }{
		{"core/a.go", "package core // changed\n"},
		{"core/x_amd64.s", "TEXT ·y(SB)\n"},
		{"core/fit/new.go", "package fit\n"},
	} {
		write(c.path, c.body)
		if h := hash(); h == h0 {
			t.Errorf("%s changed, the hash did not", c.path)
		}
		h0 = hash()
	}
	// The same bytes under another name are another tree.
	if err := os.Rename(filepath.Join(root, "core", "fit", "new.go"), filepath.Join(root, "core", "fit", "renamed.go")); err != nil {
		t.Fatal(err)
	}
	if h := hash(); h == h0 {
		t.Errorf("a renamed file left the hash unchanged")
	}
	if _, _, err := CoreHash(t.TempDir()); err == nil {
		t.Errorf("no core/: no error")
	}
}

// TestWriteDoc: --doc replaces only the part between the markers, names
// the hash that TestResultsCurrent reads back, writes "-" and a note
// where the paper has no figure, and copies the figures beside the file.
func TestWriteDoc(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"figure1.png", "figure2.png", "surface-p1-set3.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := &Report{Plan: tinyPlan, Seconds: 12, Surfaces: []string{"surface-p1-set3.png"}, MvtnormNote: "skipped (--no-r)",
		Table1: []T1Row{{N: 50, M: 10000, Problems: 3, Method: "default", MAPE: 0.001, MAPESE: 0.0005, RMSZ: 1, CPU: 0.1}}}
	rep.Plan.T1 = []T1Cell{{50, 10000, 3}, {1000, 10000, 1}}
	prov := &Provenance{Commit: "abc", CoreHash: "sha256:" + strings.Repeat("0", 64), Files: 7, CPUModel: "Test CPU", CPUs: 2, AVX512: true}
	doc := filepath.Join(t.TempDir(), "results.md")
	before, after := "# Title\n\nhand-written\n\n", "\n## Appendix\n\nkept\n"
	if err := os.WriteFile(doc, []byte(before+docBegin+"\nold tables\n"+docEnd+after), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second run replaces the first's output
		if err := writeDoc(doc, rep, prov, "go run ./bench/repro --tiny", dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, before+docBegin) || !strings.HasSuffix(s, docEnd+after) || strings.Contains(s, "old tables") || strings.Count(s, docBegin) != 1 {
		t.Errorf("the hand-written parts were not kept, or the old output not replaced:\n%s", s)
	}
	if h, ok := parseCoreHash(b); !ok || h != prov.CoreHash {
		t.Errorf("hash read back %q, %v", h, ok)
	}
	for _, want := range []string{"`abc`", `"Test CPU"`, "AVX-512: yes", "--tiny", "| 50 | 10000 | 3 | 0.245 | 0.012 | 0.001 (0.0005) |", "| 50 | 10000 | 3 | - | - | 0.1 |", "| 1000 | 10000 | 1 | - | - | - |",
		"\"-\": in the paper columns, the paper reports no CPU time", "](results/figure1.png)", "](results/surface-p1-set3.png)"} {
		if !strings.Contains(s, want) {
			t.Errorf("the generated part lacks %q:\n%s", want, s)
		}
	}
	// No empty cell anywhere in the tables.
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "|") && (strings.Contains(l, "|  |") || strings.Contains(l, "| |")) {
			t.Errorf("empty cell: %s", l)
		}
	}
	if got, err := os.ReadFile(filepath.Join(filepath.Dir(doc), "results", "surface-p1-set3.png")); err != nil || string(got) != "surface-p1-set3.png" {
		t.Errorf("figure not copied: %q, %v", got, err)
	}
	if err := os.WriteFile(doc, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(doc, rep, prov, "x", dir); err == nil {
		t.Errorf("a file without markers: no error")
	}
}
