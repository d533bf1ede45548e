package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidateNamesTheFlag(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{}, "usage: --adapter is required"},
		{Options{Adapter: "a", Fixture: "podman"}, `usage: --fixture must be one of docker, cri, none, got "podman"`},
		{Options{Adapter: "a", Scale: -1}, "usage: --scale must not be negative, got -1"},
		{Options{Adapter: "a", Focus: "("}, "usage: --focus: invalid regular expression \"(\": error parsing regexp: missing closing ): `(`"},
		{Options{Adapter: "a", RuntimeStopCommand: "systemctl stop containerd"}, "usage: --runtime-stop-cmd and --runtime-start-cmd go together, got only one"},
		{Options{Adapter: "a", Fixture: FixtureDocker, PodCIDR: "198.18.0.0"},
			`usage: --pod-cidr must be a CIDR such as 198.18.0.0/16, or an IPv4 and an IPv6 one such as 198.18.0.0/16,fd00:18::/64, got "198.18.0.0": netip.ParsePrefix("198.18.0.0"): no '/'`},
		{Options{Adapter: "a", Fixture: FixtureDocker, PodCIDR: "198.18.0.0/16,198.19.0.0/16"},
			`usage: --pod-cidr must be a CIDR such as 198.18.0.0/16, or an IPv4 and an IPv6 one such as 198.18.0.0/16,fd00:18::/64, got "198.18.0.0/16,198.19.0.0/16": two ranges of one family, want an IPv4 and an IPv6 one`},
		{Options{Adapter: "a", Fixture: FixtureDocker, PodCIDR: "198.18.0.0/16,fd00:18::/64,fd00:19::/64"},
			`usage: --pod-cidr must be a CIDR such as 198.18.0.0/16, or an IPv4 and an IPv6 one such as 198.18.0.0/16,fd00:18::/64, got "198.18.0.0/16,fd00:18::/64,fd00:19::/64": 3 ranges, want one or two`},
		{Options{Adapter: "a", Fixture: FixtureCRI, PodCIDR: "198.18.0.0/16"},
			`usage: --pod-cidr needs --fixture docker (a CRI runtime's CNI gives pods their addresses), got --fixture "cri"`},
	}
	for _, tc := range cases {
		err := tc.opts.Validate()
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrUsage) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

func TestConfigPassesTheEndpointToTheAdapter(t *testing.T) {
	opts := Options{
		Adapter:          "/bin/adapter",
		AdapterArgs:      []string{"--runtime-name=containerd"},
		WrongRuntimeArgs: []string{"--runtime-name=cri-o"},
		Fixture:          FixtureCRI,
		Focus:            "^sandbox",
	}.withDefaults()
	cfg, err := opts.config(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--runtime-name=containerd", "--endpoint=" + DefaultCRIEndpoint}
	if !slices.Equal(cfg.AdapterArgs, wantArgs) {
		t.Errorf("AdapterArgs = %q, want %q", cfg.AdapterArgs, wantArgs)
	}
	// Flags given later win: the wrong-runtime override comes last.
	wantWrong := append(slices.Clone(wantArgs), "--runtime-name=cri-o")
	if !slices.Equal(cfg.WrongRuntimeArgs, wantWrong) {
		t.Errorf("WrongRuntimeArgs = %q, want %q", cfg.WrongRuntimeArgs, wantWrong)
	}
	if got, want := cfg.EndpointArgs("unix:///tmp/x.sock"), []string{"--runtime-name=containerd", "--endpoint=unix:///tmp/x.sock"}; !slices.Equal(got, want) {
		t.Errorf("EndpointArgs = %q, want %q", got, want)
	}
	if !slices.Equal(cfg.AdapterArgs, wantArgs) {
		t.Errorf("building the other argument lists changed AdapterArgs to %q", cfg.AdapterArgs)
	}
	if cfg.Scale != -1 || cfg.Focus.String() != "^sandbox" || cfg.Skip != nil {
		t.Errorf("Scale = %d, Focus = %v, Skip = %v", cfg.Scale, cfg.Focus, cfg.Skip)
	}
}

func TestNoFixtureNoEndpoint(t *testing.T) {
	opts := Options{Adapter: "/bin/adapter"}.withDefaults()
	cfg, err := opts.config(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Fixture != FixtureNone || len(cfg.AdapterArgs) != 0 || cfg.WrongRuntimeArgs != nil {
		t.Errorf("fixture %q, AdapterArgs %q, WrongRuntimeArgs %q", opts.Fixture, cfg.AdapterArgs, cfg.WrongRuntimeArgs)
	}
}

func TestRunReportsAnAdapterThatDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), Options{
		Adapter:   filepath.Join(dir, "missing"),
		Focus:     "^get-empty-id-invalid$",
		JUnitPath: filepath.Join(dir, "report.xml"),
		JSONPath:  filepath.Join(dir, "report.json"),
	}, &stdout, &stderr)
	if code != ExitFail {
		t.Errorf("exit code = %d, want %d; stderr: %s", code, ExitFail, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"FAIL  adapter-launch", "SKIP  get-empty-id-invalid", "NOT CONFORMANT"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRunRejectsUsageErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), Options{Adapter: "a", Fixture: "podman"}, &stdout, &stderr); code != ExitUsage {
		t.Errorf("exit code = %d, want %d", code, ExitUsage)
	}
	if got, want := stderr.String(), "usage: --fixture must be one of docker, cri, none, got \"podman\"\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func TestRuntimeCommandsBecomeTheFixturesControl(t *testing.T) {
	stopped := filepath.Join(t.TempDir(), "stopped")
	stop := shellCommand("touch " + stopped)
	if err := stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stopped); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
	failing := shellCommand("echo down >&2; exit 3")
	err := failing(t.Context())
	if err == nil || !strings.Contains(err.Error(), "exit status 3: down") {
		t.Errorf("failing command: %v, want its status and output", err)
	}
}

// TestPodCIDRsOnePerFamily: --pod-cidr takes one range, or an IPv4 and an
// IPv6 one in either order, the IPv4 one becoming PodAddresses.
func TestPodCIDRsOnePerFamily(t *testing.T) {
	cases := []struct{ value, want4, want6 string }{
		{"198.18.0.0/16", "198.18.0.0/16", "invalid Prefix"},
		{"fd00:18::/64", "fd00:18::/64", "invalid Prefix"},
		{"fd00:18::/64, 198.18.0.0/16", "198.18.0.0/16", "fd00:18::/64"},
		{"198.18.0.0/16,fd00:18::/64", "198.18.0.0/16", "fd00:18::/64"},
	}
	for _, tc := range cases {
		first, second, err := podCIDRs(tc.value)
		if err != nil || first.String() != tc.want4 || second.String() != tc.want6 {
			t.Errorf("podCIDRs(%q) = %s, %s, %v; want %s, %s", tc.value, first, second, err, tc.want4, tc.want6)
		}
	}
}
