package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/cniinstall"
)

func TestInstallBinaryAndConfList(t *testing.T) {
	src := filepath.Join(t.TempDir(), "sandboxipam")
	if err := os.WriteFile(src, []byte("plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	binDir, confDir := t.TempDir(), t.TempDir()
	if err := run([]string{"install-binary", "--dst-dir", binDir, src}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(binDir, "sandboxipam")); string(got) != "plugin" {
		t.Fatalf("installed %q", got)
	}
	conf := filepath.Join(confDir, "10-sandboxipam.conflist")
	content := `{"cniVersion": "1.0.0", "name": "sandboxipam", "plugins": [{"type": "sandboxipam"}]}`
	if err := run([]string{"write-conflist", "--path", conf}, strings.NewReader(content), io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conf); string(got) != content {
		t.Fatalf("wrote %q", got)
	}
	if err := run([]string{"remove-conflist", "--path", conf}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Fatalf("conflist still there: %v", err)
	}
}

// --help, -h and help print the usage and succeed, and so does a
// command's -h; anything else unknown still fails.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help", "-help"} {
		var out bytes.Buffer
		if err := run([]string{arg}, nil, &out); err != nil || !strings.HasPrefix(out.String(), "usage: sandboxipam-install COMMAND [flags]\n") ||
			!strings.Contains(out.String(), "remove-conflist --path FILE") {
			t.Errorf("%s: %v\n%s", arg, err, out.String())
		}
	}
	for _, args := range [][]string{{"install-binary", "-h"}, {"remove-conflist", "--help"}} {
		if err := run(args, nil, io.Discard); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	if err := run([]string{"--bogus"}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown command "--bogus" (try sandboxipam-install --help)`) {
		t.Errorf("--bogus: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"install-binary", "--dst-dir", t.TempDir()},
		{"remove-conflist"},
		{"remove-conflist", "--path", "a.conflist", "extra"},
	} {
		if err := run(args, nil, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

// The DaemonSet's init container installs the plugin and, beside it, the
// portmap it chains: the CNI bin directory then holds exactly the two
// binaries and portmap's install record. A portmap of the operator's is
// kept, and the line the pod's log keeps says so, naming both sums.
func TestInstallBinaryWithSharedPortMap(t *testing.T) {
	srcDir := t.TempDir()
	plugin, portmap := filepath.Join(srcDir, "sandboxipam"), filepath.Join(srcDir, "portmap")
	for path, content := range map[string]string{plugin: "plugin", portmap: "portmap"} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	binDir := t.TempDir()
	if err := run([]string{"install-binary", "--dst-dir", binDir, "--shared", portmap, plugin}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(binDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".sandboxipam-portmap.sha256", "portmap", "sandboxipam"}; !slices.Equal(names, want) {
		t.Fatalf("%s holds %q, want %q", binDir, names, want)
	}
	for name, want := range map[string]string{"sandboxipam": "plugin", "portmap": "portmap"} {
		if got, _ := os.ReadFile(filepath.Join(binDir, name)); string(got) != want {
			t.Fatalf("%s holds %q, want %q", name, got, want)
		}
	}

	theirs := t.TempDir()
	if err := os.WriteFile(filepath.Join(theirs, "portmap"), []byte("theirs"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := cniinstall.InstallShared(portmap, theirs)
	if err != nil || res.Outcome != cniinstall.KeptForeign {
		t.Fatalf("InstallShared over the operator's portmap = %+v, %v", res, err)
	}
	line := describe(portmap, res)
	for _, want := range []string{"WARNING: kept the portmap already at " + filepath.Join(theirs, "portmap"), res.Found, res.Ours, "sandboxipam did not install it"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}
