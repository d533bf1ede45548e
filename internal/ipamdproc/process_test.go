package ipamdproc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// WriteConfig refuses a config ipamd would refuse, naming the field, and
// writes one that ipamd's loader reads back unchanged.
func TestWriteConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf", "ipamd.yaml")
	cfg := config.DefaultConfig()
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	if err := WriteConfig(path, cfg); err == nil || !strings.Contains(err.Error(), "ipSource.type") {
		t.Fatalf("WriteConfig without ipSource.type = %v, want an error naming ipSource.type", err)
	}
	cfg.IPSource.Type = config.SourceStatic
	cfg.IPSource.Static.CIDRs = []string{"198.18.0.0/28"}
	if err := WriteConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.IPSource.Type != config.SourceStatic || got.StateDir != cfg.StateDir || strings.Join(got.IPSource.Static.CIDRs, ",") != "198.18.0.0/28" {
		t.Errorf("loaded back ipSource.type %q, stateDir %q, cidrs %v; want static, %q, [198.18.0.0/28]",
			got.IPSource.Type, got.StateDir, got.IPSource.Static.CIDRs, cfg.StateDir)
	}
}

// A process that exits ends the wait at once with ErrExited, not at the
// deadline, and the port the test holds is taken back.
func TestWaitReadyGivesUpWhenIPAMDExits(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testsupport.SkipOrFail(t, "no sh to stand in for ipamd: %v", err)
	}
	dir := t.TempDir()
	// A stand-in that reads its arguments as ipamd would and exits 3.
	fake := filepath.Join(dir, "ipamd")
	script := "#!" + sh + "\necho \"ipamd $*\"\nexit 3\n"
	if err := writeExecutable(fake, script); err != nil {
		t.Fatal(err)
	}
	port := testsupport.ReservePort(t)
	p, err := Start(fake, filepath.Join(dir, "ipamd.yaml"), filepath.Join(dir, "ipamd.log"), port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testsupport.WaitDeadline)
	defer cancel()
	calls := 0
	err = p.WaitReady(ctx, "the stand-in to be ready", func(context.Context) error {
		calls++
		return errors.New("not yet")
	})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("WaitReady = %v, want ErrExited with exit status 3", err)
	}
	if want := "ipamd --config " + filepath.Join(dir, "ipamd.yaml"); !strings.Contains(p.LogTail(1), want) {
		t.Errorf("log tail %q, want %q", p.LogTail(1), want)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill after exit: %v", err)
	}
	if l, err := net.Listen("tcp", port.Addr); err == nil {
		l.Close()
		t.Errorf("port %s is free after Kill, want it held again for the next run", port.Addr)
	}
	t.Logf("ready polled %d times before the exit was seen", calls)
}

func writeExecutable(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o755)
}
