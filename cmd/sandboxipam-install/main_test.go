package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallBinaryAndConfList(t *testing.T) {
	src := filepath.Join(t.TempDir(), "sandboxipam")
	if err := os.WriteFile(src, []byte("plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	binDir, confDir := t.TempDir(), t.TempDir()
	if err := run([]string{"install-binary", "--dst-dir", binDir, src}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(binDir, "sandboxipam")); string(got) != "plugin" {
		t.Fatalf("installed %q", got)
	}
	conf := filepath.Join(confDir, "10-sandboxipam.conflist")
	content := `{"cniVersion": "1.0.0", "name": "sandboxipam", "plugins": [{"type": "sandboxipam"}]}`
	if err := run([]string{"write-conflist", "--path", conf}, strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conf); string(got) != content {
		t.Fatalf("wrote %q", got)
	}
	if err := run([]string{"remove-conflist", "--path", conf}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Fatalf("conflist still there: %v", err)
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
		if err := run(args, nil); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
