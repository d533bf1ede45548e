package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// CNIPlugin runs the sandboxipam CNI plugin binary the way a runtime does:
// the network config on stdin, the CNI_* variables in the environment.
// It runs inside HostNetNS (a namespace the caller made), so the host side
// of the pod's veth never lands in the machine's own network namespace.
type CNIPlugin struct {
	Binary    string
	HostNetNS string // path of the "host" network namespace
	Socket    string // ipamd's socket
}

// PodRef is the pod identity a runtime passes in CNI_ARGS.
type PodRef struct{ Name, Namespace, UID string }

func (p CNIPlugin) conf() []byte {
	return fmt.Appendf(nil, `{"cniVersion": "1.0.0", "name": %q, "type": "sandboxipam", "ipamdSocket": %q}`, NetworkName, p.Socket)
}

// Add runs CNI ADD for the sandbox and returns the plugin's result.
func (p CNIPlugin) Add(ctx context.Context, sandboxID, netns string, pod PodRef) (*types100.Result, error) {
	out, err := p.run(ctx, "ADD", sandboxID, netns, pod)
	if err != nil {
		return nil, err
	}
	var res types100.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("CNI ADD result %q: %w", out, err)
	}
	return &res, nil
}

// Del runs CNI DEL for the sandbox.
func (p CNIPlugin) Del(ctx context.Context, sandboxID, netns string, pod PodRef) error {
	_, err := p.run(ctx, "DEL", sandboxID, netns, pod)
	return err
}

func (p CNIPlugin) run(ctx context.Context, command, sandboxID, netns string, pod PodRef) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+p.HostNetNS, p.Binary)
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+command,
		"CNI_CONTAINERID="+sandboxID,
		"CNI_NETNS="+netns,
		"CNI_IFNAME=eth0",
		"CNI_PATH=/usr/lib/cni",
		"CNI_ARGS="+strings.Join([]string{
			"IgnoreUnknown=1",
			"K8S_POD_NAMESPACE=" + pod.Namespace,
			"K8S_POD_NAME=" + pod.Name,
			"K8S_POD_INFRA_CONTAINER_ID=" + sandboxID,
			"K8S_POD_UID=" + pod.UID,
		}, ";"),
	)
	cmd.Stdin = bytes.NewReader(p.conf())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("CNI %s of %s: %w: %s %s", command, sandboxID, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}
