package daemon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/ipamd/daemon"
)

// A state or socket directory others can write is refused at start,
// naming the field: whoever writes there could swap the checkpoint ipamd
// trusts, or the socket the plugin and ipamctl connect to.
func TestStartRefusesDirectoriesOthersCanWrite(t *testing.T) {
	for field, dir := range map[string]func(n *node) string{
		"stateDir":                  func(n *node) string { return n.cfg.StateDir },
		"socket":                    func(n *node) string { return filepath.Dir(n.cfg.Socket) },
		"introspection.adminSocket": func(n *node) string { return filepath.Dir(n.cfg.AdminSocketPath()) },
	} {
		t.Run(field, func(t *testing.T) {
			n := newNode(t, "198.18.0.0/28")
			if field == "introspection.adminSocket" {
				n.cfg.Introspection.AdminSocket = filepath.Join(n.dir, "admin", "admin.sock")
			}
			path := dir(n)
			if err := os.MkdirAll(path, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o1777); err != nil {
				t.Fatal(err)
			}
			d := daemon.New(n.cfg, daemon.Options{})
			err := d.Start(t.Context())
			if err == nil {
				_ = d.Stop(t.Context())
			}
			if !errors.Is(err, daemon.ErrUnsafeDir) || !strings.HasPrefix(err.Error(), field+": "+path) {
				t.Fatalf("Start with %s open to all = %v; want ErrUnsafeDir naming %s", path, err, field)
			}
		})
	}
}
