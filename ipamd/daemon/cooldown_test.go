package daemon_test

import (
	"os"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// cooldown: 0s written in the file is no cooldown in the running daemon:
// the address a DEL released is the next one handed out, at once. The
// datastore reads an unset (zero) cooldown as its 30s default, so the
// daemon must pass the operator's zero as "none".
func TestWrittenZeroCooldownReachesTheStore(t *testing.T) {
	n := newNode(t, "198.18.0.0/30") // two addresses
	n.cfg.Cooldown = 0
	path := n.writeConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\ncooldown: 0s\n") {
		t.Fatalf("the config file does not say cooldown: 0s:\n%s", data)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.cfg = cfg
	d, cni, _ := startInProcess(t, n)
	if got := d.Store().Cooldown(); got != 0 {
		t.Fatalf("the store's cooldown = %s, want the 0s the file says", got)
	}
	waitReady(t, cni)
	ctx := t.Context()
	first, err := cni.add(ctx, "sandbox-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cni.add(ctx, "sandbox-b"); err != nil {
		t.Fatal(err)
	}
	if ok, err := cni.del(ctx, "sandbox-a"); err != nil || !ok {
		t.Fatalf("DEL sandbox-a = %v, %v", ok, err)
	}
	again, err := cni.add(ctx, "sandbox-c")
	if err != nil || again != first {
		t.Fatalf("ADD right after the DEL = %q, %v; want %s again (no cooldown)", again, err, first)
	}
}
