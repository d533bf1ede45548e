package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

func TestHelpListsEveryFieldWithVariableAndDefault(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, f := range config.Reference() {
		if !strings.Contains(stderr.String(), f.Env) || !strings.Contains(stderr.String(), f.Path) {
			t.Errorf("--help lacks %s (%s)", f.Path, f.Env)
		}
	}
	stdout.Reset()
	if code := run([]string{"config-reference"}, &stdout, &stderr); code != 0 {
		t.Fatalf("config-reference exit %d", code)
	}
	var socketLine []string
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "socket" {
			socketLine = f[:3]
		}
	}
	if strings.Join(socketLine, " ") != "socket IPAMD_SOCKET /run/sandboxipam/ipamd.sock" {
		t.Errorf("config-reference socket line = %q\n%s", socketLine, stdout.String())
	}
}

func TestBadConfigExitsNamingTheField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipamd.yaml")
	if err := os.WriteFile(path, []byte("runtime:\n  adapter: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config", path}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	want := `runtime.adapter must be one of docker, dockershim, containerd, crio, auto or a path, got "x"`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
	}
}
