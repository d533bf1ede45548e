package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/containernetworking/cni/pkg/ns"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// This file does for the plugin what the CNI library's skel package does:
// read CNI_* and stdin, check versions, call a verb, print the CNI error
// object. It is hand-written because skel imports the library's utils
// package, whose package-level regexp is compiled at every exec: measured
// side by side (BENCHMARKS.md, "CNI plugin against host-local"), linking
// skel cost 0.6-0.9 ms of a 6-7 ms start on these machines, and the plugin
// starts twice per pod (ADD and DEL). The checks are the library's own,
// character for character (TestValidationMatchesTheLibrary and
// FuzzValidationMatchesTheLibrary compare them with utils'), and the error
// codes and messages are skel's. Two deliberate differences: the plugin's
// own network namespace given as CNI_NETNS is refused before a verb runs
// (skel refuses it after ADD or DEL ran), and no verb is optional.

// CmdArgs are one call's inputs, as skel.CmdArgs.
type CmdArgs struct {
	ContainerID   string
	Netns         string
	IfName        string
	Args          string
	Path          string
	NetnsOverride string
	StdinData     []byte
}

// verbs are the plugin's commands; every one is implemented.
type verbs struct {
	add, del, check, gc, status func(*CmdArgs) error
}

// of is the verb for a command other than VERSION.
func (v verbs) of(cmd string) func(*CmdArgs) error {
	switch cmd {
	case "ADD":
		return v.add
	case "DEL":
		return v.del
	case "CHECK":
		return v.check
	case "GC":
		return v.gc
	default:
		return v.status
	}
}

// env is what one call reads from the process.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// required lists, per command, the variables that must be set; the
// validated ones are checked only for the commands that require them, as
// skel does.
var required = map[string][]string{
	"ADD":     {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"},
	"CHECK":   {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"},
	"DEL":     {"CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"},
	"GC":      {"CNI_PATH"},
	"STATUS":  {"CNI_PATH"},
	"VERSION": nil,
}

// minConfigVersion is the oldest config cniVersion a command exists in.
var minConfigVersion = map[string]string{"CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}

// dispatch runs one CNI call. A nil error with nothing printed is success
// for verbs without a result.
func dispatch(e env, v verbs, supported version.PluginInfo, about string) *types.Error {
	cmd := e.getenv("CNI_COMMAND")
	if cmd == "" {
		if about != "" {
			fmt.Fprintln(e.stderr, about)
			fmt.Fprintf(e.stderr, "CNI protocol versions supported: %s\n", strings.Join(supported.SupportedVersions(), ", "))
			return nil
		}
		return types.NewError(types.ErrInvalidEnvironmentVariables, "required env variables [CNI_COMMAND] missing", "")
	}
	needs, known := required[cmd]
	if !known {
		return types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI_COMMAND: %v", cmd), "")
	}
	if cmd == "VERSION" {
		if err := supported.Encode(e.stdout); err != nil {
			return types.NewError(types.ErrIOFailure, err.Error(), "")
		}
		return nil
	}
	args, configVersion, cniErr := readCmdArgs(e, needs)
	if cniErr != nil {
		return cniErr
	}
	if cniErr := checkVersions(cmd, configVersion, supported); cniErr != nil {
		return cniErr
	}
	if cmd == "ADD" || cmd == "DEL" {
		if cniErr := refuseOwnNetns(args); cniErr != nil {
			return cniErr
		}
	}
	if err := v.of(cmd)(args); err != nil {
		var asCNI *types.Error
		if errors.As(err, &asCNI) {
			return asCNI
		}
		return types.NewError(types.ErrInternal, err.Error(), "")
	}
	return nil
}

// readCmdArgs reads the CNI_* variables and stdin, and checks what skel
// checks: the required variables, the container ID and interface name,
// and a config with a valid network name. It returns the config's
// cniVersion too ("0.1.0" when absent, as the library reads it), from the
// same decode.
func readCmdArgs(e env, needs []string) (*CmdArgs, string, *types.Error) {
	args := &CmdArgs{
		ContainerID:   e.getenv("CNI_CONTAINERID"),
		Netns:         e.getenv("CNI_NETNS"),
		IfName:        e.getenv("CNI_IFNAME"),
		Args:          e.getenv("CNI_ARGS"),
		Path:          e.getenv("CNI_PATH"),
		NetnsOverride: e.getenv("CNI_NETNS_OVERRIDE"),
	}
	var missing []string
	for _, name := range needs {
		value := e.getenv(name)
		switch {
		case value == "":
			missing = append(missing, name)
		case name == "CNI_CONTAINERID":
			if err := validateContainerID(value); err != nil {
				return nil, "", err
			}
		case name == "CNI_IFNAME":
			if err := validateInterfaceName(value); err != nil {
				return nil, "", err
			}
		}
	}
	if len(missing) > 0 {
		return nil, "", types.NewError(types.ErrInvalidEnvironmentVariables,
			fmt.Sprintf("required env variables [%s] missing", strings.Join(missing, ",")), "")
	}
	stdin, err := io.ReadAll(e.stdin)
	if err != nil {
		return nil, "", types.NewError(types.ErrIOFailure, fmt.Sprintf("error reading from stdin: %v", err), "")
	}
	args.StdinData = stdin
	var conf struct {
		Name       string `json:"name"`
		CNIVersion string `json:"cniVersion"`
	}
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, "", types.NewError(types.ErrDecodingFailure, fmt.Sprintf("error unmarshall network config: %v", err), "")
	}
	if conf.Name == "" {
		return nil, "", types.NewError(types.ErrInvalidNetworkConfig, "missing network name", "")
	}
	if !validName(conf.Name) {
		return nil, "", types.NewError(types.ErrInvalidNetworkConfig, "invalid characters found in network name", conf.Name)
	}
	if conf.CNIVersion == "" {
		conf.CNIVersion = "0.1.0"
	}
	return args, conf.CNIVersion, nil
}

// checkVersions refuses a config whose cniVersion the plugin does not
// speak, or that predates the command.
func checkVersions(cmd, configVersion string, supported version.PluginInfo) *types.Error {
	if minimum, ok := minConfigVersion[cmd]; ok {
		newEnough, err := version.GreaterThanOrEqualTo(configVersion, minimum)
		if err != nil {
			return types.NewError(types.ErrDecodingFailure, err.Error(), "")
		}
		if !newEnough {
			return types.NewError(types.ErrIncompatibleCNIVersion, "config version does not allow "+cmd, "")
		}
	}
	if verErr := (&version.Reconciler{}).Check(configVersion, supported); verErr != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, "incompatible CNI versions", verErr.Details())
	}
	return nil
}

// refuseOwnNetns refuses CNI_NETNS naming the plugin's own namespace,
// unless CNI_NETNS_OVERRIDE says the runtime means it.
func refuseOwnNetns(args *CmdArgs) *types.Error {
	if strings.ToUpper(args.NetnsOverride) == "TRUE" || args.NetnsOverride == "1" {
		return nil
	}
	isOwn, err := ns.CheckNetNS(args.Netns)
	if err != nil {
		return err
	}
	if isOwn {
		return types.NewError(types.ErrInvalidNetNS, "plugin's netns and netns from CNI_NETNS should not be the same", args.Netns)
	}
	return nil
}

// validName is the CNI library's rule for container IDs and network names,
// ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$, without compiling a regexp at start.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

func validateContainerID(id string) *types.Error {
	if id == "" {
		return types.NewError(types.ErrUnknownContainer, "missing containerID", "")
	}
	if !validName(id) {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "invalid characters in containerID", id)
	}
	return nil
}

// maxInterfaceNameLength is IFNAMSIZ less the terminating NUL.
const maxInterfaceNameLength = 15

func validateInterfaceName(ifName string) *types.Error {
	switch {
	case ifName == "":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "interface name is empty", "")
	case len(ifName) > maxInterfaceNameLength:
		return types.NewError(types.ErrInvalidEnvironmentVariables, "interface name is too long",
			fmt.Sprintf("interface name should be less than %d characters", maxInterfaceNameLength+1))
	case ifName == "." || ifName == "..":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "interface name is . or ..", "")
	}
	for _, r := range bytes.Runes([]byte(ifName)) {
		if r == '/' || r == ':' || unicode.IsSpace(r) {
			return types.NewError(types.ErrInvalidEnvironmentVariables, "interface name contains / or : or whitespace characters", "")
		}
	}
	return nil
}

// Main runs one CNI call from the environment and stdin, prints the result
// or the CNI error object, and exits non-zero on error. about is printed
// when CNI_COMMAND is unset.
func Main(ctx context.Context, about string) {
	p := &plugin{ctx: ctx}
	e := env{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	v := verbs{add: p.add, del: p.del, check: p.check, gc: p.gc, status: p.status}
	if err := dispatch(e, v, SupportedVersions, about); err != nil {
		if printErr := err.Print(); printErr != nil {
			fmt.Fprintf(os.Stderr, "write the error object to stdout: %v\n", printErr)
		}
		os.Exit(1)
	}
}
