package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/client"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// nobody is the unprivileged caller of the reproduction.
const nobody = 65534

// logBuffer keeps ipamd's log for assertions and shows it under -v.
type logBuffer struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// lines returns the log lines holding every one of parts.
func (l *logBuffer) lines(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// startLogged is startInProcess with ipamd's log kept.
func startLogged(t *testing.T, n *node) (*daemon.Daemon, cniClient, *client.Client, *logBuffer) {
	t.Helper()
	logs := &logBuffer{t: t}
	d := daemon.New(n.cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return d, cniClient{socket: n.cfg.Socket}, client.NewAdmin(n.cfg.AdminSocketPath()), logs
}

// The victim: a pod the runtime lists, Ready, reporting the address ipamd
// gave it, as in the issue.
const victim = "0b5a1f1d6e4c4a3b9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a49382"

func startWithVictim(t *testing.T) (*node, *daemon.Daemon, cniClient, *client.Client, *logBuffer) {
	t.Helper()
	n := newNode(t, "198.18.0.0/28")
	d, cni, admin, logs := startLogged(t, n)
	waitReady(t, cni)
	n.addSandbox(victim)
	ip, err := cni.add(t.Context(), victim)
	if err != nil || ip != "198.18.0.1/28" {
		t.Fatalf("victim ADD = %q, %v; want 198.18.0.1/28", ip, err)
	}
	n.setSandboxIP(victim, "198.18.0.1")
	return n, d, cni, admin, logs
}

// callerReport is what the unprivileged caller saw, one entry per call.
type callerReport struct {
	UID, PID int
	Calls    map[string]callResult
}

type callResult struct {
	Code int
	Body string
	Err  string
}

// runAsNobody runs this test binary's TestHelperUnprivilegedCaller as uid
// and gid 65534, from a copy it can execute, against ipamd's TCP address
// and admin socket.
func runAsNobody(t *testing.T, tcp, admin string) callerReport {
	t.Helper()
	dir := testsupport.ShortDir(t, "nobody")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "caller.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run=^TestHelperUnprivilegedCaller$", "-test.count=1")
	cmd.Env = []string{"SBX_CALLER=1", "SBX_TCP=" + tcp, "SBX_ADMIN=" + admin, "SBX_VICTIM=" + victim, "SBX_NETWORK=" + testNetwork}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("caller as uid %d: %v\n%s", nobody, err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "REPORT "); ok {
			var r callerReport
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			t.Logf("caller as uid %d saw %+v", nobody, r)
			return r
		}
	}
	t.Fatalf("caller printed no report:\n%s", out)
	return callerReport{}
}

// TestHelperUnprivilegedCaller is not a test: runAsNobody runs it as uid
// 65534. It tries what the attacker did, over TCP and over the
// admin socket, and reports each answer.
func TestHelperUnprivilegedCaller(t *testing.T) {
	if os.Getenv("SBX_CALLER") != "1" {
		return // run by runAsNobody only
	}
	tcp, admin := &http.Client{Timeout: 10 * time.Second}, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", os.Getenv("SBX_ADMIN"))
		}}}
	body := fmt.Sprintf(`{"network":%q,"sandboxID":%q,"ifName":"eth0","force":true}`, os.Getenv("SBX_NETWORK"), os.Getenv("SBX_VICTIM"))
	base := "http://" + os.Getenv("SBX_TCP")
	r := callerReport{UID: os.Getuid(), PID: os.Getpid(), Calls: map[string]callResult{
		"tcp pods":        call(tcp, "GET", base+schema.PathPods, ""),
		"tcp release":     call(tcp, "POST", base+schema.PathRelease, body),
		"tcp reconcile":   call(tcp, "POST", base+schema.PathReconcile, ""),
		"admin release":   call(admin, "POST", "http://admin"+schema.PathRelease, body),
		"admin reconcile": call(admin, "POST", "http://admin"+schema.PathReconcile, ""),
	}}
	out, _ := json.Marshal(r)
	fmt.Println("REPORT " + string(out))
}

func call(c *http.Client, method, url, body string) callResult {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return callResult{Err: err.Error()}
	}
	resp, err := c.Do(req)
	if err != nil {
		return callResult{Err: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return callResult{Code: resp.StatusCode, Body: string(b)}
}

// victimIntact checks that the victim still holds exactly its address,
// in the store and as the admin API reports it.
func victimIntact(t *testing.T, d *daemon.Daemon, admin *client.Client) {
	t.Helper()
	a, ok := d.Store().Lookup(datastore.Key{Network: testNetwork, SandboxID: victim, IfName: "eth0"})
	if !ok || a.Address.IP.String() != "198.18.0.1" {
		t.Fatalf("victim's assignment = %+v, %v; want 198.18.0.1", a, ok)
	}
	pods, err := admin.Pods(t.Context())
	if err != nil || len(pods.Pods) != 1 || pods.Pods[0].SandboxID != victim || pods.Pods[0].IP != "198.18.0.1" {
		t.Fatalf("pods = %+v, %v; want the victim alone with 198.18.0.1", pods, err)
	}
}

// The reproduction: a process running as another, unprivileged
// uid reads over TCP but can neither release nor reconcile, over TCP
// (refused) or the admin socket (it cannot even connect); the victim
// keeps its address, and the next pods never get it.
func TestUnprivilegedCallerCannotFreeALivePodsAddress(t *testing.T) {
	testsupport.RequireRoot(t)
	n, d, cni, admin, logs := startWithVictim(t)
	r := runAsNobody(t, d.IntrospectionAddr().String(), n.cfg.AdminSocketPath())
	if r.UID != nobody {
		t.Fatalf("caller ran as uid %d", r.UID)
	}
	if c := r.Calls["tcp pods"]; c.Code != 200 || !strings.Contains(c.Body, victim) || !strings.Contains(c.Body, `"ip": "198.18.0.1"`) {
		t.Errorf("GET /v1/pods as nobody = %+v; reads must keep working", c)
	}
	for _, name := range []string{"tcp release", "tcp reconcile"} {
		if c := r.Calls[name]; c.Code != http.StatusForbidden || !strings.Contains(c.Body, "admin socket "+n.cfg.AdminSocketPath()) {
			t.Errorf("%s as nobody = %+v; want 403 naming the admin socket", name, c)
		}
	}
	for _, name := range []string{"admin release", "admin reconcile"} {
		if c := r.Calls[name]; c.Code != 0 || !strings.Contains(c.Err, "permission denied") {
			t.Errorf("%s as nobody = %+v; want connect refused with permission denied", name, c)
		}
	}
	if got := logs.lines("refused a call that changes state on the TCP listener"); len(got) != 2 {
		t.Errorf("TCP refusals logged %d times, want 2: %q", len(got), got)
	}
	if got := logs.lines("released"); len(got) != 0 {
		t.Errorf("something was released: %q", got)
	}
	victimIntact(t, d, admin)
	for i := range 13 {
		id := fmt.Sprintf("next-%02d", i)
		n.addSandbox(id)
		if ip, err := cni.add(t.Context(), id); err != nil || ip == "198.18.0.1/28" {
			t.Fatalf("ADD %s = %q, %v; want another free address", id, ip, err)
		}
	}
	var werr *wire.Error
	if ip, err := cni.add(t.Context(), "one-too-many"); !errors.As(err, &werr) || werr.Code != wire.CodeResourceExhausted {
		t.Fatalf("ADD past the pool = %q, %v; want exhausted, never the victim's address", ip, err)
	}
}

// With the admin socket's directory and mode widened on purpose, the
// unprivileged caller connects, and SO_PEERCRED refuses it: 403, logged
// with its uid and pid, and nothing changes.
func TestAdminSocketRefusesOtherUIDsByPeerCredentials(t *testing.T) {
	testsupport.RequireRoot(t)
	n, d, _, admin, logs := startWithVictim(t)
	sock := n.cfg.AdminSocketPath()
	for path, mode := range map[string]os.FileMode{n.dir: 0o755, filepath.Dir(sock): 0o755, sock: 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	r := runAsNobody(t, d.IntrospectionAddr().String(), sock)
	for _, name := range []string{"admin release", "admin reconcile"} {
		c := r.Calls[name]
		if c.Code != http.StatusForbidden || !strings.Contains(c.Body, fmt.Sprintf("caller uid %d (pid %d) refused", nobody, r.PID)) {
			t.Errorf("%s as nobody on a widened socket = %+v; want 403 from the peer credential check", name, c)
		}
	}
	refused := logs.lines("REFUSED a caller on the admin socket", fmt.Sprintf("uid=%d", nobody), fmt.Sprintf("pid=%d", r.PID))
	if len(refused) != 2 {
		t.Errorf("refusals logged with uid and pid: %d, want 2\n%s", len(refused), strings.Join(logs.lines("admin"), "\n"))
	}
	victimIntact(t, d, admin)
	if res, err := admin.Reconcile(t.Context(), true); err != nil || res.Listed != 1 {
		t.Errorf("root's dry run on the admin socket = %+v, %v; want served", res, err)
	}
}
