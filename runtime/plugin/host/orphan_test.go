package host

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
	"github.com/sandboxipam/sandboxipam/runtime/plugin/internal/shared"
)

const (
	helperHostEnv    = "SANDBOXIPAM_PLUGIN_TEST_HOST_STATE"
	helperAdapterEnv = "SANDBOXIPAM_PLUGIN_TEST_HOST_ADAPTER"
	// helperRawEnv has the helper host launch through go-plugin alone,
	// without the kernel's Pdeathsig, to prove the plugin's own orphan
	// check.
	helperRawEnv = "SANDBOXIPAM_PLUGIN_TEST_HOST_RAW"
)

// TestHelperHost is not a test: run by TestHostDeathKillsPlugin as a
// separate host process, it launches a plugin, prints its PID and waits to
// be killed.
func TestHelperHost(t *testing.T) {
	statePath := os.Getenv(helperHostEnv)
	if statePath == "" {
		return
	}
	adapter := os.Getenv(helperAdapterEnv)
	if os.Getenv(helperRawEnv) != "" {
		pc := goplugin.NewClient(&goplugin.ClientConfig{
			HandshakeConfig:  shared.Handshake(),
			VersionedPlugins: shared.PluginSets(plugin.ProtocolVersion, nil),
			AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
			Cmd:              exec.Command(adapter, "--state="+statePath),
			Logger:           newSlogBridge(testLogger(t), "", nil),
		})
		if _, err := pc.Start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("pid:", pc.ReattachConfig().Pid)
		select {}
	}
	client, err := Launch(context.Background(), Config{
		Path:   adapter,
		Args:   []string{"--state=" + statePath},
		Logger: testLogger(t),
	})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("pid:", client.PID())
	select {}
}

// The kernel kills the plugin with its host (Pdeathsig).
func TestHostDeathKillsPlugin(t *testing.T) {
	pid := killHostOfPlugin(t, false)
	waitProcessDead(t, pid)
}

// A plugin launched without Pdeathsig (by a plain go-plugin host) exits by
// itself once its host is gone.
func TestOrphanedPluginExits(t *testing.T) {
	pid := killHostOfPlugin(t, true)
	waitProcessDead(t, pid)
}

// killHostOfPlugin runs a host process that launches a plugin, kills the
// host with SIGKILL and returns the plugin's PID.
func killHostOfPlugin(t *testing.T, raw bool) int {
	t.Helper()
	statePath := writeState(t, fixtureState())
	host := exec.Command(os.Args[0], "-test.run=^TestHelperHost$")
	host.Env = append(os.Environ(), helperHostEnv+"="+statePath, helperAdapterEnv+"="+pluginConfig(t, statePath).Path)
	if raw {
		host.Env = append(host.Env, helperRawEnv+"=1")
	}
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid: ") {
		_ = host.Process.Kill()
		_ = host.Wait()
		t.Fatalf("host said %q (%v), want its plugin's pid", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid: ")))
	if err != nil {
		t.Fatal(err)
	}
	if processDead(pid) {
		t.Fatalf("plugin %d not running while its host runs", pid)
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	return pid
}

func waitProcessDead(t *testing.T, pid int) {
	t.Helper()
	start := time.Now()
	// Reap the plugin if the wait gives up, so a failure leaves nothing.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	// Not our child: no wait or pidfd event reaches us, so poll /proc.
	testsupport.Eventually(t, fmt.Sprintf("plugin %d to exit after its host was killed", pid), func() bool { return processDead(pid) })
	t.Logf("plugin %d gone %v after its host was killed", pid, time.Since(start))
}

// processDead reports whether pid is gone from /proc or a zombie: dead,
// waiting for a parent that may not reap it.
func processDead(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
