package cni

import (
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/utils"
)

// sameError says whether two CNI errors are both nil or equal in code,
// message and details.
func sameError(a, b *types.Error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// checkAgainstLibrary compares the hand-written checks with the CNI
// library's utils on one input.
func checkAgainstLibrary(t *testing.T, s string) {
	t.Helper()
	if got, want := validateContainerID(s), utils.ValidateContainerID(s); !sameError(got, want) {
		t.Errorf("container ID %q: got %v, the library says %v", s, got, want)
	}
	if got, want := validateInterfaceName(s), utils.ValidateInterfaceName(s); !sameError(got, want) {
		t.Errorf("interface name %q: got %v, the library says %v", s, got, want)
	}
	if got, want := validName(s), utils.ValidateNetworkName(s) == nil; got != want {
		t.Errorf("network name %q: valid=%v, the library says %v", s, got, want)
	}
}

var validationCases = []string{
	"", "a", "A", "0", "_a", ".a", "-a", "a_b.c-d", "abc/def", "a:b", "a b", "a\tb", "eth0", ".", "..",
	"ÿ", "a\u00a0b", "a\u2028b", "\xff", strings.Repeat("a", 15), strings.Repeat("a", 16),
	"4f8a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8", "ABC-def_1.2", "a\n", "a$",
}

func TestValidationMatchesTheLibrary(t *testing.T) {
	for _, s := range validationCases {
		checkAgainstLibrary(t, s)
	}
}

func FuzzValidationMatchesTheLibrary(f *testing.F) {
	for _, s := range validationCases {
		f.Add(s)
	}
	f.Fuzz(checkAgainstLibrary)
}

// TestDispatchRefusesBeforeTheVerb: bad environments and configs fail
// with skel's codes and never reach a verb.
func TestDispatchRefusesBeforeTheVerb(t *testing.T) {
	called := func(*CmdArgs) error { t.Error("a verb ran"); return nil }
	v := verbs{add: called, del: called, check: called, gc: called, status: called}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		stdin string
		code  uint
		msg   string
	}{
		{"unknown command", map[string]string{"CNI_COMMAND": "FROB"}, "", types.ErrInvalidEnvironmentVariables, "unknown CNI_COMMAND: FROB"},
		{"missing variables", map[string]string{"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "abc"}, "", types.ErrInvalidEnvironmentVariables,
			"required env variables [CNI_NETNS,CNI_IFNAME,CNI_PATH] missing"},
		{"bad container ID", map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "a/b", "CNI_IFNAME": "eth0", "CNI_PATH": "/x"}, "",
			types.ErrInvalidEnvironmentVariables, "invalid characters in containerID"},
		{"long interface", map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0123456789012", "CNI_PATH": "/x"}, "",
			types.ErrInvalidEnvironmentVariables, "interface name is too long"},
		{"not JSON", map[string]string{"CNI_COMMAND": "GC", "CNI_PATH": "/x"}, "{", types.ErrDecodingFailure, ""},
		{"no name", map[string]string{"CNI_COMMAND": "GC", "CNI_PATH": "/x"}, `{"cniVersion":"1.1.0"}`, types.ErrInvalidNetworkConfig, "missing network name"},
		{"bad name", map[string]string{"CNI_COMMAND": "GC", "CNI_PATH": "/x"}, `{"cniVersion":"1.1.0","name":"a b"}`, types.ErrInvalidNetworkConfig,
			"invalid characters found in network name"},
		{"GC before 1.1.0", map[string]string{"CNI_COMMAND": "GC", "CNI_PATH": "/x"}, `{"cniVersion":"1.0.0","name":"n"}`, types.ErrIncompatibleCNIVersion,
			"config version does not allow GC"},
		{"unsupported version", map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0", "CNI_PATH": "/x"},
			`{"cniVersion":"0.3.1","name":"n"}`, types.ErrIncompatibleCNIVersion, "incompatible CNI versions"},
		{"no cniVersion means 0.1.0", map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0", "CNI_PATH": "/x"},
			`{"name":"n"}`, types.ErrIncompatibleCNIVersion, "incompatible CNI versions"},
		{"own netns", map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0", "CNI_PATH": "/x", "CNI_NETNS": "/proc/self/ns/net"},
			`{"cniVersion":"1.0.0","name":"n"}`, types.ErrInvalidNetNS, "plugin's netns and netns from CNI_NETNS should not be the same"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			e := env{getenv: func(k string) string { return tc.env[k] }, stdin: strings.NewReader(tc.stdin), stdout: &out, stderr: &errOut}
			err := dispatch(e, v, SupportedVersions, "about")
			if err == nil {
				t.Fatalf("dispatch succeeded; stdout %q", out.String())
			}
			if err.Code != tc.code || tc.msg != "" && err.Msg != tc.msg {
				t.Errorf("got code %d %q, want code %d %q", err.Code, err.Msg, tc.code, tc.msg)
			}
		})
	}
}

// TestDispatchCallsTheVerb: a good call reaches its verb with the inputs,
// a verb's plain error becomes code 999, and no CNI_COMMAND prints about.
func TestDispatchCallsTheVerb(t *testing.T) {
	var got *CmdArgs
	verb := func(a *CmdArgs) error { got = a; return nil }
	failing := func(*CmdArgs) error { return errorString("boom") }
	v := verbs{add: verb, del: verb, check: verb, gc: failing, status: verb}
	vars := map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0", "CNI_PATH": "/x", "CNI_ARGS": "K=V"}
	conf := `{"cniVersion":"1.1.0","name":"n"}`
	run := func(vars map[string]string) (*types.Error, string) {
		var out, errOut strings.Builder
		e := env{getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(conf), stdout: &out, stderr: &errOut}
		return dispatch(e, v, SupportedVersions, "about line"), out.String() + errOut.String()
	}
	if err, _ := run(vars); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if got == nil || got.ContainerID != "abc" || got.IfName != "eth0" || got.Args != "K=V" || string(got.StdinData) != conf {
		t.Errorf("DEL got %+v", got)
	}
	vars["CNI_COMMAND"] = "GC"
	if err, _ := run(vars); err == nil || err.Code != types.ErrInternal || err.Msg != "boom" {
		t.Errorf("GC: got %v, want code 999 boom", err)
	}
	vars["CNI_COMMAND"] = ""
	if err, printed := run(vars); err != nil || printed != "about line\nCNI protocol versions supported: 0.4.0, 1.0.0, 1.1.0\n" {
		t.Errorf("no command: err %v, printed %q", err, printed)
	}
	vars["CNI_COMMAND"] = "VERSION"
	if err, printed := run(vars); err != nil || !strings.Contains(printed, `"supportedVersions":["0.4.0","1.0.0","1.1.0"]`) {
		t.Errorf("VERSION: err %v, printed %q", err, printed)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
