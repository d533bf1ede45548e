package archdoc_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/archdoc"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestArchitecturePage: every package, file and name docs/architecture.md
// gives exists where it says, every package of the module has a row, and
// every import the page draws or lists is real. A failure names the line
// and what to write instead.
func TestArchitecturePage(t *testing.T) {
	start := time.Now()
	root := testsupport.Root(t)
	m, err := archdoc.LoadModule(root)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range archdoc.Check(m, archdoc.ParsePage(string(src))) {
		t.Errorf("docs/architecture.md %s", p)
	}
	t.Logf("checked %d packages in %v", len(m.Packages), time.Since(start))
}
