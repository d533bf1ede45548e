package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The runc wrapper rewrites only what this machine's root cannot do: the
// process's oomScoreAdj becomes the wrapper's own, the hugepage limits go;
// everything else in the bundle's config (indented, as CRI-O writes it)
// stays, and runc gets the same arguments.
func TestRuncWrapperRewritesTheBundle(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	fakeRunc := filepath.Join(dir, "runc")
	if err := os.WriteFile(fakeRunc, []byte("#!/bin/sh\necho \"$@\" >"+strconv.Quote(args)+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "runc-wrapper")
	if err := writeRuncWrapper(wrapper, fakeRunc); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle")
	if err := os.Mkdir(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	config := map[string]any{
		"process": map[string]any{"oomScoreAdj": -998, "args": []string{"/pause"}},
		"linux": map[string]any{"resources": map[string]any{
			"hugepageLimits": []map[string]any{{"pageSize": "2MB", "limit": 0}, {"pageSize": "1GB", "limit": 0}},
			"pids":           map[string]any{"limit": 1024},
		}},
	}
	data, err := json.MarshalIndent(config, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(wrapper, "create", "--bundle", bundle, "ctr-1").CombinedOutput(); err != nil {
		t.Fatalf("wrapper: %v: %s", err, out)
	}
	got, err := os.ReadFile(args)
	if err != nil || strings.TrimSpace(string(got)) != "create --bundle "+bundle+" ctr-1" {
		t.Fatalf("runc got %q, %v", got, err)
	}
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	var after struct {
		Process struct {
			OOMScoreAdj int      `json:"oomScoreAdj"`
			Args        []string `json:"args"`
		} `json:"process"`
		Linux struct {
			Resources struct {
				HugepageLimits []any `json:"hugepageLimits"`
				Pids           struct {
					Limit int `json:"limit"`
				} `json:"pids"`
			} `json:"resources"`
		} `json:"linux"`
	}
	data, err = os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &after); err != nil {
		t.Fatalf("the rewritten config is not JSON: %v\n%s", err, data)
	}
	if strconv.Itoa(after.Process.OOMScoreAdj) != strings.TrimSpace(string(own)) || len(after.Linux.Resources.HugepageLimits) != 0 ||
		after.Linux.Resources.Pids.Limit != 1024 || len(after.Process.Args) != 1 || after.Process.Args[0] != "/pause" {
		t.Fatalf("rewritten config:\n%s", data)
	}
}
