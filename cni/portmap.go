package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// This file runs the CNI reference portmap plugin for a pod with hostPorts,
// and for no other pod. Chained after sandboxipam in the conflist, portmap
// is exec'd by the runtime on every ADD and DEL, and a pod without
// hostPorts paid its two process starts for nothing (1.6 to 1.8 times the
// pair of sandboxipam alone, BENCHMARKS.md "portmap for hostPorts only").
// So the conflist ipamd writes declares the portMappings capability on
// sandboxipam's own entry, with a "portMap" object, and the plugin hands
// a non-empty portMappings list to portmap as a chained plugin would get
// it: the same network name, container ID, netns, interface and CNI_ARGS,
// sandboxipam's result as prevResult. portmap itself does nothing for an
// empty list (its ADD passes prevResult on, its DEL and CHECK return), so
// skipping it then changes no rule.
//
// The exec is written here rather than taken from the CNI library's invoke
// package: invoke links OpenTelemetry and net/http (crypto/tls with them)
// for its trace propagation, and their initialisers cost every start of
// the plugin, hostPorts or not: 2.2 to 3.1 ms of package initialisation
// against 0.5 to 1.1 ms for os/exec alone, seven runs each of two
// otherwise identical programs with GODEBUG=inittrace=1 (BENCHMARKS.md,
// "portmap for hostPorts only"), where the plugin's whole start is 6 to
// 7 ms. What the plugin needs of invoke is its lookup in CNI_PATH and its
// reading of portmap's error object, both below.

// PortMapPlugin is the type under which portmap is looked up in CNI_PATH.
const PortMapPlugin = "portmap"

// PortMap enables hostPorts in the main plugin: with the portMappings
// capability declared on sandboxipam's entry, the runtime passes a pod's
// hostPorts in runtimeConfig, and the plugin runs portmap for them.
type PortMap struct {
	// Backend is portmap's backend, iptables or nftables; empty lets
	// portmap probe for one on every call it gets (two iptables execs).
	Backend string `json:"backend,omitempty"`
}

// Values of PortMap.Backend.
const (
	PortMapIPTables = "iptables"
	PortMapNFTables = "nftables"
)

// RuntimeConfig is what the runtime fills in from the capabilities the
// network config declares. Only the port mappings are read, and only to
// pass them on unchanged.
type RuntimeConfig struct {
	PortMappings []json.RawMessage `json:"portMappings,omitempty"`
}

// validatePortMap checks the portMap object; its messages name the field.
func (c *NetConf) validatePortMap() error {
	if c.PortMap == nil {
		return nil
	}
	if c.IPAMMode {
		return fmt.Errorf("portMap belongs to the main plugin; as an IPAM plugin, chain portmap in the conflist after the main plugin")
	}
	switch c.PortMap.Backend {
	case "", PortMapIPTables, PortMapNFTables:
		return nil
	}
	return fmt.Errorf("portMap.backend must be %s, %s or left out (portmap probes), got %q", PortMapIPTables, PortMapNFTables, c.PortMap.Backend)
}

// mapsPorts reports whether the call has hostPorts for portmap.
func (c *NetConf) mapsPorts() bool {
	return c.PortMap != nil && len(c.RuntimeConfig.PortMappings) > 0
}

// portMapConfig is portmap's network config for one call: what a conflist
// entry {"type": "portmap", "backend": ...} would carry after the runtime
// filled in its capability and prevResult.
func portMapConfig(conf *NetConf, prevResult []byte) ([]byte, error) {
	entry := map[string]any{
		"cniVersion":    conf.CNIVersion,
		"name":          conf.Name,
		"type":          PortMapPlugin,
		"runtimeConfig": map[string]any{"portMappings": conf.RuntimeConfig.PortMappings},
	}
	if conf.PortMap.Backend != "" {
		entry["backend"] = conf.PortMap.Backend
	}
	if prevResult != nil {
		entry["prevResult"] = json.RawMessage(prevResult)
	}
	return json.Marshal(entry)
}

// portMapPath finds portmap in the call's CNI_PATH.
func portMapPath(cmd *CmdArgs) (string, error) {
	path, err := findInCNIPath(PortMapPlugin, cmd.Path)
	if err != nil {
		return "", types.NewError(types.ErrInvalidNetworkConfig, "the pod has hostPorts but portmap cannot run", err.Error())
	}
	return path, nil
}

// runPortMap runs portmap's verb (ADD, DEL or CHECK) for the call in cmd,
// with prevResult (nil: none); path empty looks portmap up first.
// portmap's own error object comes back as a *types.Error whose message
// says it is portmap's.
func runPortMap(ctx context.Context, cmd *CmdArgs, conf *NetConf, path, verb string, prevResult []byte) error {
	stdin, err := portMapConfig(conf, prevResult)
	if err != nil {
		return types.NewError(types.ErrInternal, "encode portmap's network config", err.Error())
	}
	if path == "" {
		if path, err = portMapPath(cmd); err != nil {
			return err
		}
	}
	c := exec.CommandContext(ctx, path)
	c.Env = append(withoutVar(os.Environ(), "CNI_COMMAND"), "CNI_COMMAND="+verb)
	c.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return portMapError(verb, path, err, stdout.Bytes(), stderr.Bytes())
	}
	return nil
}

// portMapError turns a failed portmap run into a CNI error: portmap's own
// error object where it printed one, else what the process left.
func portMapError(verb, path string, runErr error, stdout, stderr []byte) error {
	var reported types.Error
	if json.Unmarshal(stdout, &reported) == nil && reported.Msg != "" {
		reported.Msg = fmt.Sprintf("portmap %s: %s", verb, reported.Msg)
		return &reported
	}
	details := strings.TrimSpace(string(stderr))
	if details == "" {
		details = strings.TrimSpace(string(stdout))
	}
	return types.NewError(types.ErrInternal, fmt.Sprintf("portmap %s (%s): %v", verb, path, runErr), details)
}

// findInCNIPath returns the first executable file named plugin in the
// directories of CNI_PATH, as a runtime looks up a chained plugin.
func findInCNIPath(plugin, cniPath string) (string, error) {
	dirs := filepath.SplitList(cniPath)
	for _, dir := range dirs {
		path := filepath.Join(dir, plugin)
		info, err := os.Stat(path)
		if err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return path, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("look up %s: %w", path, err)
		}
	}
	return "", fmt.Errorf("no executable %s in CNI_PATH %q: install the portmap plugin beside sandboxipam (its installer does), or set ipamd's cni.portMap to off", plugin, cniPath)
}

// withoutVar returns environ without the variable name.
func withoutVar(environ []string, name string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
