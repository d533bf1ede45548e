package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// lookalike is a string a runtime resolves to a sandbox although it is not
// the sandbox's full ID.
type lookalike struct {
	what, value string
}

// lookalikes returns what Docker (and, for prefixes, every CRI runtime)
// resolves to the sandbox with this ID: its 12-character short form, a
// longer proper prefix, the ID in other letter case, the pod's name and
// the sandbox's own name in the runtime.
func lookalikes(id, podName, sandboxName string) []lookalike {
	out := []lookalike{
		{"its 12-character short ID", id[:min(shortIDLength, len(id)-1)]},
		{"a longer proper prefix", id[:len(id)-1]},
		{"the ID in upper case", strings.ToUpper(id)},
		{"the pod's name", podName},
	}
	if sandboxName != "" {
		out = append(out, lookalike{"the sandbox's name in the runtime", sandboxName})
	}
	return out
}

func checkGetFullIDOnly(ctx context.Context, s *session) error {
	shared, err := s.sharedPods(ctx)
	if err != nil {
		return err
	}
	pod := shared.multi
	if len(pod.SandboxID) < 2 {
		return fmt.Errorf("fixture %s returned sandbox ID %q, too short to take a prefix of", s.fixture.Name(), pod.SandboxID)
	}
	for _, l := range lookalikes(pod.SandboxID, pod.Spec.Name, pod.SandboxName) {
		if l.value == pod.SandboxID {
			continue // an ID with no letters has no other case
		}
		sb, err := s.get(ctx, l.value)
		if !errors.Is(err, runtime.ErrNotFound) {
			return mismatch(fmt.Sprintf("GetSandbox(%q), %s of sandbox %s, did not report ErrNotFound: "+
				"ipamd would believe a pod exists under a key it never recorded", l.value, l.what, pod.SandboxID),
				"an error wrapping runtime.ErrNotFound", describeGet(sb, err))
		}
	}
	return nil
}
