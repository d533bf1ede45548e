package reconcile

import (
	"sync"

	"github.com/sandboxipam/sandboxipam/ipamd/api/hostveth"
)

// vethNames memoizes hostveth.Name across passes for join.Join: a name
// is a SHA-256, and a pass joins every assignment and sandbox twice.
// Names not asked for during a pass are dropped at the next (sweep), so
// the memo holds about one pass's attachments.
type vethNames struct {
	prefix string

	mu        sync.Mutex
	cur, prev map[[2]string]string
}

func (v *vethNames) name(sandboxID, ifName string) string {
	k := [2]string{sandboxID, ifName}
	v.mu.Lock()
	defer v.mu.Unlock()
	if n, ok := v.cur[k]; ok {
		return n
	}
	n, ok := v.prev[k]
	if !ok {
		n = hostveth.Name(v.prefix, sandboxID, ifName)
	}
	if v.cur == nil {
		v.cur = map[[2]string]string{}
	}
	v.cur[k] = n
	return n
}

// sweep starts a pass: names the last pass used stay available once more.
func (v *vethNames) sweep() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.prev, v.cur = v.cur, nil
}
