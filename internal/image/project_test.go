package image

import (
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The image ships portmap beside the CNI plugin, built from the pinned
// tools module and stamped with that module's version, as upstream's own
// build stamps it: the version an operator sees is the one go.mod pins.
func TestProjectShipsPortMapBesideThePlugin(t *testing.T) {
	var pm *binary
	for _, b := range projectBinaries() {
		if b.path == PortMapPath {
			pm = &b
		}
	}
	if pm == nil {
		t.Fatalf("no binary at %s in the image", PortMapPath)
	}
	if path.Dir(PortMapPath) != path.Dir(CNIPluginPath) {
		t.Fatalf("portmap at %s, the CNI plugin at %s: want one directory", PortMapPath, CNIPluginPath)
	}
	if _, err := exec.LookPath("go"); err != nil {
		testsupport.SkipOrFail(t, "cannot build portmap: %v", err)
	}
	root := testsupport.Root(t)
	out := t.TempDir()
	built, err := BuildPortMap(t.Context(), root, out)
	if err != nil {
		t.Fatal(err)
	}
	version, err := goOutput(t.Context(), filepath.Join(root, pm.module), "list", "-m", "-f", "{{.Version}}", "github.com/containernetworking/plugins")
	if err != nil {
		t.Fatal(err)
	}
	about, _ := exec.Command(built).CombinedOutput()
	if want := "CNI portmap plugin " + version; !strings.HasPrefix(string(about), want) {
		t.Fatalf("portmap says %q, want it to start with %q", about, want)
	}
}
