package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// ipamOnlyPlugin execs the real CNI plugin as a runtime does when
// sandboxipam is the IPAM plugin of another main plugin (an "ipam"
// section): the plugin only asks ipamd for the address, and tells it so.
type ipamOnlyPlugin struct {
	bin, socket string
	// netnsDir holds the pods' network namespaces, one named after each
	// sandbox ID; default /var/run/netns.
	netnsDir string
}

func newIPAMOnlyPlugin(t testing.TB, socket string) ipamOnlyPlugin {
	t.Helper()
	return ipamOnlyPlugin{bin: testsupport.StaticBinary(t, "./cmd/sandboxipam"), socket: socket, netnsDir: "/var/run/netns"}
}

// cniError is the plugin's error result.
type cniError struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
}

func (e *cniError) Error() string {
	return fmt.Sprintf("CNI error %d: %s: %s", e.Code, e.Msg, e.Details)
}

func (p ipamOnlyPlugin) run(ctx context.Context, command, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	conf := fmt.Appendf(nil, `{"cniVersion":"1.0.0","name":%q,"type":"bridge","ipam":{"type":"sandboxipam","ipamdSocket":%q}}`, testNetwork, p.socket)
	cmd := exec.CommandContext(ctx, p.bin)
	// In IPAM mode the plugin never enters the pod's namespace; the
	// override tells it the path is meant (no namespace is made for it).
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0", "CNI_NETNS=" + filepath.Join(p.netnsDir, id),
		"CNI_NETNS_OVERRIDE=1", "CNI_PATH=/opt/cni/bin",
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-" + id + ";K8S_POD_INFRA_CONTAINER_ID=" + id,
		"PATH=" + os.Getenv("PATH")}
	cmd.Stdin = bytes.NewReader(conf)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run()
	if err != nil {
		var e cniError
		if jerr := json.Unmarshal(stdout.Bytes(), &e); jerr == nil && e.Code != 0 {
			return nil, &e
		}
		return nil, fmt.Errorf("plugin %s %s: %w: %s", command, id, err, stdout.String())
	}
	return stdout.Bytes(), nil
}

// add returns the address in CIDR notation.
func (p ipamOnlyPlugin) add(ctx context.Context, id string) (string, error) {
	out, err := p.run(ctx, "ADD", id)
	if err != nil {
		return "", err
	}
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.IPs) == 0 {
		return "", fmt.Errorf("plugin ADD %s answered %s: %v", id, out, err)
	}
	return res.IPs[0].Address, nil
}

func (p ipamOnlyPlugin) del(ctx context.Context, id string) error {
	_, err := p.run(ctx, "DEL", id)
	return err
}
