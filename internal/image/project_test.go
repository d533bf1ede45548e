package image

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
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

// The image carries every adapter of ipamd's table, executable, where
// ipamd looks by default (runtime.pluginDir empty: "adapters" beside its
// own binary). The binaries here are stand-ins, each holding its own
// image path, so the test reads which file landed where without
// compiling anything.
func TestImageCarriesEveryAdapterOfTheTable(t *testing.T) {
	bin := t.TempDir()
	for _, b := range projectBinaries() {
		file := filepath.Join(bin, filepath.FromSlash(b.path))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(b.path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("ca"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := ProjectSpec(bin, ca)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, onlyLayer(t, img))
	ipamd := spec.Entrypoint[0]
	for _, a := range config.Adapters() {
		want := path.Join(path.Dir(ipamd), "adapters", a.Binary)
		got, ok := files[strings.TrimPrefix(want, "/")]
		if !ok {
			t.Errorf("adapter %s: the image has no %s", a.Name, want)
			continue
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Errorf("adapter %s: %s holds %q, want the binary built for it", a.Name, want, got)
		}
		if !slices.ContainsFunc(projectBinaries(), func(b binary) bool { return b.path == want && b.pkg == "./"+a.Cmd }) {
			t.Errorf("adapter %s: %s is not built from ./%s", a.Name, want, a.Cmd)
		}
	}
	if n := len(config.Adapters()); n < 4 {
		t.Fatalf("the adapter table has %d rows, want the four shipped adapters at least", n)
	}
}

// Every main package under cmd/adapters has a row in ipamd's adapter
// table, and every row's main package is there: a new adapter's folder
// without its row would build but never ship, and a row without its
// folder would ship an image build that fails.
func TestAdapterTableMatchesCmdAdapters(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.Name}} {{.ImportPath}}", "./cmd/adapters/...")
	cmd.Dir = testsupport.Root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var mains []string
	for line := range strings.Lines(string(out)) {
		name, pkg, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "main" {
			mains = append(mains, strings.TrimPrefix(pkg, "github.com/sandboxipam/sandboxipam/"))
		}
	}
	var rows []string
	for _, a := range config.Adapters() {
		rows = append(rows, a.Cmd)
		// make build and the tests' builds name each binary after its
		// folder (go build -o dir/ ./cmd/adapters/...).
		if path.Base(a.Cmd) != a.Binary {
			t.Errorf("adapter %s: binary %q, want its folder's name %q", a.Name, a.Binary, path.Base(a.Cmd))
		}
	}
	slices.Sort(mains)
	slices.Sort(rows)
	if !slices.Equal(mains, rows) {
		t.Errorf("main packages under cmd/adapters %v, the adapter table's %v: want the same", mains, rows)
	}
	if len(mains) < 4 {
		t.Fatalf("go list found %d adapter mains, want at least the four shipped:\n%s", len(mains), out)
	}
}
