package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

func TestSelectAdapter(t *testing.T) {
	dir := t.TempDir()
	for _, a := range config.Adapters() {
		if err := os.WriteFile(filepath.Join(dir, a.Binary), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "..", "ipamd")
	probeOnly := func(live ...string) Prober {
		return func(_ context.Context, socket string) bool { return slices.Contains(live, socket) }
	}
	rt := config.DefaultConfig().Runtime
	rt.PluginDir = dir

	sel, err := selectAdapter(t.Context(), rt, exe, probeOnly("/var/run/docker.sock", "/var/run/cri-dockerd.sock"))
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	want := selection{Adapter: "dockershim", Binary: filepath.Join(dir, "dockershim"),
		Args: []string{"--endpoint", "unix:///var/run/cri-dockerd.sock"}, Endpoint: "unix:///var/run/cri-dockerd.sock",
		Reason:    "auto: /var/run/cri-dockerd.sock accepts connections (first of crictl's order)",
		AlsoFound: []string{"/var/run/docker.sock"}}
	if !reflect.DeepEqual(sel, want) {
		t.Errorf("auto = %+v\nwant %+v", sel, want)
	}

	sel, err = selectAdapter(t.Context(), rt, exe, probeOnly("/run/crio/crio.sock", "/run/containerd/containerd.sock"))
	if err != nil || sel.Adapter != "containerd" {
		t.Errorf("auto with containerd and crio = %+v, %v; want containerd (crictl's first)", sel, err)
	}

	_, err = selectAdapter(t.Context(), rt, exe, probeOnly())
	if !errors.Is(err, ErrNoRuntime) {
		t.Errorf("auto with no socket = %v, want ErrNoRuntime", err)
	}

	rt.Adapter, rt.Endpoint, rt.Args = "crio", "unix:///run/crio/crio.sock", []string{"--timeout", "2s"}
	sel, err = selectAdapter(t.Context(), rt, exe, probeOnly())
	if err != nil || sel.Binary != filepath.Join(dir, "crio") ||
		!reflect.DeepEqual(sel.Args, []string{"--endpoint", "unix:///run/crio/crio.sock", "--timeout", "2s"}) {
		t.Errorf("named = %+v, %v", sel, err)
	}

	rt = config.DefaultConfig().Runtime
	rt.Adapter = filepath.Join(dir, "docker")
	sel, err = selectAdapter(t.Context(), rt, exe, probeOnly())
	if err != nil || sel.Adapter != "path" || sel.Binary != rt.Adapter || len(sel.Args) != 0 {
		t.Errorf("path = %+v, %v", sel, err)
	}

	rt = config.DefaultConfig().Runtime
	rt.Adapter = "docker"
	if got := pluginDir(rt, "/usr/local/bin/ipamd"); got != "/usr/local/bin/adapters" {
		t.Errorf("default plugin dir = %q, want /usr/local/bin/adapters", got)
	}
	if _, err := selectAdapter(t.Context(), rt, "/nonexistent/ipamd", probeOnly()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing binary = %v, want ErrNotExist", err)
	}
}

// Auto probes every runtime socket of the adapter table in crictl's
// order, then the legacy dockershim socket, then the Docker Engine: the
// ranks of the table's rows, not the rows' order, decide it.
func TestAutoProbeOrder(t *testing.T) {
	var got []string
	for _, p := range config.AutoProbeOrder() {
		got = append(got, p.Socket+" "+p.Adapter)
	}
	want := []string{
		"/run/containerd/containerd.sock containerd",
		"/run/crio/crio.sock crio",
		"/var/run/cri-dockerd.sock dockershim",
		"/var/run/dockershim.sock dockershim",
		"/var/run/docker.sock docker",
	}
	if !slices.Equal(got, want) {
		t.Errorf("auto's probe order:\n got %q\nwant %q", got, want)
	}
}
