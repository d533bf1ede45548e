package main

import (
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/cluster/api/ipamdlease"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
)

// confirm-node-gone, against a real API server: refused while the Node
// exists under the blocks' UID; without --yes it writes nothing; with
// --yes every block of the node carries the confirmation, and no other
// node's block does.
func TestConfirmNodeGoneAgainstARealAPIServer(t *testing.T) {
	env := clusterfixture.Start(t, t.TempDir())
	t.Cleanup(env.API.Stop)
	kc := env.API.Kubeconfig
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	gone, other := env.Node(t, "gone"), env.Node(t, "other")
	env.Block(t, "default", "198.18.0.0/26", "gone", gone.UID)
	env.Block(t, "default", "198.18.0.128/26", "gone", gone.UID)
	env.Block(t, "default", "198.18.0.64/26", "other", other.UID)

	out, code := runCheck(t, "confirm-node-gone", "gone", "--kubeconfig", kc, "--yes")
	if code != 1 || !strings.Contains(out, "node gone: the Node exists with that UID "+string(gone.UID)+": the API server hears it") {
		t.Fatalf("confirm while the Node exists: exit %d, want 1 naming the Node:\n%s", code, out)
	}
	env.DeleteNode(t, "gone")
	out, code = runCheck(t, "confirm-node-gone", "gone", "--kubeconfig", kc)
	want := "node gone (UID " + string(gone.UID) + "): 2 IPBlock(s)\n" +
		"  198.18.0.0-26 (198.18.0.0/26)\n    the reclaimer's decision: not available\n" +
		"  198.18.0.128-26 (198.18.0.128/26)\n    the reclaimer's decision: not available\n"
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "nothing written") {
		t.Fatalf("confirm without --yes: exit %d, want 0 showing\n%s\ngot:\n%s", code, want, out)
	}
	wantConfirmed(t, env, map[string]string{})
	out, code = runCheck(t, "confirm-node-gone", "gone", "--kubeconfig", kc, "--yes")
	if code != 0 || !strings.Contains(out, "confirmed: "+ipamdlease.ConfirmNodeGoneAnnotation+"="+string(gone.UID)+" written on 2 block(s)") {
		t.Fatalf("confirm --yes: exit %d:\n%s", code, out)
	}
	wantConfirmed(t, env, map[string]string{"198.18.0.0/26": string(gone.UID), "198.18.0.128/26": string(gone.UID)})
}

// wantConfirmed checks which blocks carry the confirmation, by CIDR.
func wantConfirmed(t *testing.T, env *clusterfixture.Env, want map[string]string) {
	t.Helper()
	blocks, err := clusterfixture.Blocks(t.Context(), env.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for cidr, b := range blocks {
		if v, ok := b.Annotations[ipamdlease.ConfirmNodeGoneAnnotation]; ok {
			got[cidr] = v
		}
	}
	if len(got) != len(want) {
		t.Fatalf("confirmed blocks %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("confirmed blocks %v, want %v", got, want)
		}
	}
}
