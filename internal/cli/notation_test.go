package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// neighboursAsM matches the Vecchia path's neighbour count written M, the
// particle count's letter: "--vecchia M", "O(M)", "O(N M)", "M nearest",
// "M neighbours", "M x M", "M + 1 entries", "M = 50" (auto's), "M = 30 of".
var neighboursAsM = regexp.MustCompile(`--vecchia M\b|O\(M\)|O\(N M|\bM nearest|\bM neighbours|\bM x M\b|\bM \+ 1 (entries|rows)|auto[^.]{0,30}\bM = 50|M = 30 of|the M its`)

// TestNotation: m is the Vecchia path's neighbour count and M the
// particle count, in every tool's --help, the README and docs/*.md; the
// --help of the tools that estimate says where the dense path ends and
// which tools have no Vecchia path (largeNHelp), and gpc-merge's says that
// it merges the Vecchia path's shards.
func TestNotation(t *testing.T) {
	for name, tool := range runners {
		var out, errb bytes.Buffer
		if code := tool([]string{"--help"}, bytes.NewReader(nil), &out, &errb); code != 0 {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		help := strings.Join(strings.Fields(out.String()), " ")
		if m := neighboursAsM.FindString(help); m != "" {
			t.Errorf("%s --help writes the neighbours as M: %q", name, m)
		}
		switch name {
		case "gpc-kernel", "gpc-train", "gpc-orthant", "gpc-fit", "gpc-tune", "gpc-mcmc":
			if !strings.Contains(help, "from about 10^4 training points use the Vecchia path") || !strings.Contains(help, noVecchiaTools+" have no Vecchia path yet") {
				t.Errorf("%s --help does not say where the dense path ends and which tools have no Vecchia path", name)
			}
		case "gpc-merge":
			if !strings.Contains(help, "gpc.vecchia-cloud-shard/1") {
				t.Errorf("gpc-merge --help does not mention the Vecchia path's shards")
			}
		}
	}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append(docs, filepath.Join("..", "..", "README.md")) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		if m := neighboursAsM.FindString(text); m != "" {
			t.Errorf("%s writes the neighbours as M: %q", doc, m)
		}
	}
}
