package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args      []string
		code      int
		stdoutHas string
		stderrHas string
	}{
		{nil, 2, "Usage:", ""},
		{[]string{"--help"}, 0, "conformance run --adapter PATH", ""},
		{[]string{"list"}, 0, "sandbox-id-exact", ""},
		{[]string{"run"}, 2, "", "--adapter is required"},
		{[]string{"run", "--adapter", "a", "--fixture", "podman"}, 2, "", "--fixture must be one of"},
		{[]string{"run", "--adapter", "a", "extra"}, 2, "", "unexpected arguments: extra"},
		{[]string{"run", "--no-such-flag"}, 2, "", "flag provided but not defined"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdoutHas) || !strings.Contains(stderr.String(), tc.stderrHas) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d with %q and %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdoutHas, tc.stderrHas)
		}
	}
}

func TestRepeatedAdapterArgs(t *testing.T) {
	flags, opts := newFlagSet(&bytes.Buffer{})
	err := flags.Parse([]string{"--adapter", "x", "--adapter-arg", "--cri", "--adapter-arg=--runtime-name=containerd", "--scale", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(opts.AdapterArgs, " "); got != "--cri --runtime-name=containerd" || opts.Scale != 0 {
		t.Errorf("AdapterArgs = %q, Scale = %d", got, opts.Scale)
	}
}
