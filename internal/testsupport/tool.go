package testsupport

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ToolsDir is where make test-tools builds the pinned tools (tools/ module),
// relative to the module root.
const ToolsDir = "bin/tools"

// ToolPath is where the named tool lives once make tools has built it.
func ToolPath(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ToolsDir, name), nil
}

// Tool returns the path of a tool built by make test-tools (crictl, say). When
// it is missing the test skips, or fails in CI, saying how to build it:
// tests never go install, which would need the network.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := ToolPath(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := isExecutable(p); err != nil {
		SkipOrFail(t, "%s is not built (run make test-tools): %v", name, err)
	}
	return p
}

func isExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}
