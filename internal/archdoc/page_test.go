package archdoc_test

import (
	"os"
	"path/filepath"
	"sync"
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
	checkPage(t, "docs/architecture.md")
}

// TestTestSupportMap: the same for the names internal/README.md gives
// (it has no package table, so it need not list every package).
func TestTestSupportMap(t *testing.T) {
	checkPage(t, "internal/README.md")
}

// module parses the module once for both pages.
var module = sync.OnceValues(func() (*archdoc.Module, error) {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return nil, err
	}
	return archdoc.LoadModule(root)
})

func checkPage(t *testing.T, page string) {
	start := time.Now()
	m, err := module()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(m.Root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range archdoc.Check(m, archdoc.ParsePage(string(src))) {
		t.Errorf("%s %s", page, p)
	}
	t.Logf("checked %s against %d packages in %v", page, len(m.Packages), time.Since(start))
}
