package e2e_test

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestWireFloorMakesThePluginsCall: the floor BenchmarkIPAMAddDel compares
// the plugin with makes the plugin's own ipamd calls, under the same key:
// an address it adds is the one the plugin then finds held (an ADD of an
// attachment ipamd holds answers with its address), and its DEL releases
// that attachment. Otherwise the floor would measure some other call.
func TestWireFloorMakesThePluginsCall(t *testing.T) {
	testsupport.RequireRoot(t, "ip")
	ipamd := startIPAMD(t, "198.18.6.0/29", time.Millisecond)
	floor := testsupport.StaticBinary(t, "./cni/internal/wirefloor")
	id := cnitest.SandboxID("floor")
	run := func(command string) string {
		t.Helper()
		cmd := exec.Command(floor)
		cmd.Env = []string{
			"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0", "CNI_NETNS=/run/netns/floor-pod",
			"CNI_ARGS=" + cnitest.PodArgs(id), "WIREFLOOR_SOCKET=" + ipamd.Socket, "WIREFLOOR_NETWORK=podnet",
		}
		cmd.Stdin = bytes.NewReader(cnitest.IPAMConf(ipamd.Socket))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("wirefloor %s: %v\n%s", command, err, stderr.String())
		}
		return stdout.String()
	}

	const want = `{"cniVersion":"1.0.0","ips":[{"address":"198.18.6.1/29"}]}` + "\n"
	if got := run("ADD"); got != want {
		t.Fatalf("wirefloor ADD printed %q, want %q", got, want)
	}
	held := ipamd.Daemon.Store().Assignments()
	if len(held) != 1 || held[0].SandboxID != id || held[0].Network != "podnet" || held[0].IfName != "eth0" {
		t.Fatalf("after wirefloor ADD ipamd holds %+v, want one assignment of %s/eth0 on podnet", held, id)
	}
	// The plugin's ADD of the same attachment finds the floor's address.
	o := cnitest.Run(t, cnitest.Call{Command: "ADD", SandboxID: id, IfName: "eth0", Netns: "/run/netns/floor-pod",
		Args: cnitest.PodArgs(id), Config: cnitest.IPAMConf(ipamd.Socket)})
	cnitest.MustSucceed(t, o, "plugin ADD after the floor's")
	if !bytes.Contains(o.Stdout, []byte(`"address": "198.18.6.1/29"`)) {
		t.Fatalf("plugin ADD of the floor's attachment printed %s, want 198.18.6.1/29", o.Stdout)
	}

	if got := run("DEL"); got != "" {
		t.Fatalf("wirefloor DEL printed %q, want nothing", got)
	}
	if held := ipamd.Daemon.Store().Assignments(); len(held) != 0 {
		t.Fatalf("after wirefloor DEL ipamd holds %+v, want nothing", held)
	}
}
