package pool_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/kubeenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/ipsource/pool"
	"github.com/sandboxipam/sandboxipam/ipamd/kubeclient"
)

// ipamd's token writes Events only about its own Node and IPBlocks, as
// ipamd on its node (issue 44, path 8). With components/pool's RBAC and
// policies on a real API server, node A's token is refused: a
// ForeignBlock Event on Node B as B's ipamd, one on Node B as A's, one on
// Node A as B's ipamd or under B's UID, a Reclaimed Event on B's IPBlock
// as the reclaimer or as A's ipamd, and a patch of the reclaimer's
// Event. A's Events about its Node and its IPBlock pass, and so do those
// the pool source's own recorder writes.
func TestNodeTokenWritesOnlyItsOwnEvents(t *testing.T) {
	env := clusterfixture.StartWith(t, kubeenv.Options{Dir: t.TempDir(), Authorization: "RBAC"})
	t.Cleanup(env.API.Stop)
	env.InstallPoolCRDs(t)
	env.Pool(t, "default", 26, "198.18.0.0/24")
	a, b := env.Node(t, "node-a"), env.Node(t, "node-b")
	applyPoolComponent(t, env)
	kcA, err := kubeclient.FromConfig(env.BoundToken(t, "kube-system", "sandboxipam", "ipamd-a", a.Name))
	if err != nil {
		t.Fatal(err)
	}
	aBlock := env.Block(t, "default", "198.18.0.0/26", a.Name, a.UID)
	bBlock := env.Block(t, "default", "198.18.0.64/26", b.Name, b.UID)
	ctx, asA, admin := t.Context(), kcA.EventsV1().Events("default"), env.Client.EventsV1().Events("default")

	nodeRef := func(n *corev1.Node, uid types.UID) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: uid}
	}
	blockRef := func(bl v1alpha1.IPBlock) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: v1alpha1.Group + "/" + v1alpha1.Version, Kind: v1alpha1.IPBlockKind, Name: bl.Name}
	}
	const ipamd, reclaimer = pool.ReportingController, "sandboxipam.io/reclaimer"
	instA, instB := pool.ReportingInstance(a.Name), pool.ReportingInstance(b.Name)
	reporter := "the token of node node-a may write only Events reported by sandboxipam.io/ipamd as sandboxipam.io/ipamd-node-a"
	about := "the token of node node-a may write Events only about Node node-a and its IPBlocks"
	for _, at := range []struct {
		what               string
		regarding          corev1.ObjectReference
		reason, ctrl, inst string
		want               string
	}{
		// The two: each fails more than one rule; the API server
		// names the first it finds.
		{"ForeignBlock on Node B as B's ipamd", nodeRef(b, b.UID), pool.EventForeignBlock, ipamd, instB, "the token of node node-a may write "},
		{"Reclaimed on B's IPBlock as the reclaimer", blockRef(bBlock), "Reclaimed", reclaimer, reclaimer + "-x", "the token of node node-a may write "},
		{"ForeignBlock on Node B as A's ipamd", nodeRef(b, b.UID), pool.EventForeignBlock, ipamd, instA, about},
		{"ForeignBlock on Node A under B's UID", nodeRef(a, b.UID), pool.EventForeignBlock, ipamd, instA, about},
		{"ForeignBlock on Node A as B's ipamd", nodeRef(a, a.UID), pool.EventForeignBlock, ipamd, instB, reporter},
		{"Reclaimed on B's IPBlock as A's ipamd", blockRef(bBlock), "Reclaimed", ipamd, instA,
			"the token of node node-a may write Events only about its own IPBlocks: IPBlock 198.18.0.64-26 is held by node node-b"},
	} {
		e := event(at.regarding, at.reason, at.ctrl, at.inst)
		if strings.HasSuffix(at.want, " ") {
			refusedPrefix(t, at.what, createEvent(ctx, asA, e), at.want)
			continue
		}
		refused(t, at.what, createEvent(ctx, asA, e), at.want)
	}
	// The reclaimer's Event, patched by A's token: judged by the old one.
	// It breaks two policies (the reporter, and B's IPBlock), and which of
	// them the API server names first is its own choice: both start so.
	theirs, err := admin.Create(ctx, event(blockRef(bBlock), "Reclaimed", reclaimer, reclaimer+"-x"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What client-go's recorder patches into a repeated Event.
	series := []byte(`{"series":{"count":2,"lastObservedTime":"` + metav1.NowMicro().UTC().Format(metav1.RFC3339Micro) + `"}}`)
	refusedPrefix(t, "patching the reclaimer's Event", func(dryRun bool) error {
		_, err := asA.Patch(ctx, theirs.Name, types.MergePatchType, series, metav1.PatchOptions{DryRun: dry(dryRun)})
		return err
	}, "the token of node node-a may write ")

	accepted(t, "A's Event on Node A", createEvent(ctx, asA, event(nodeRef(a, a.UID), pool.EventFenced, ipamd, instA)))
	accepted(t, "A's Event on its IPBlock", createEvent(ctx, asA, event(blockRef(aBlock), pool.EventForeignBlock, ipamd, instA)))
	recordedByThePoolSource(t, ctx, kcA, admin, a)
}

// recordedByThePoolSource records an Event on node's Node through the
// pool source's own recorder, with node's token, and waits until the API
// server holds it, reported as ipamd on that node.
func recordedByThePoolSource(t *testing.T, ctx context.Context, kc *kubeclient.Client, admin eventsclient.EventInterface, node *corev1.Node) {
	t.Helper()
	rec, stop, err := pool.NewRecorder(ctx, kc, node.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rec.Eventf(&corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}, nil,
		corev1.EventTypeWarning, pool.EventFenced, pool.EventFenced, "recorded by the pool source's recorder")
	testsupport.Wait(t, "the pool source's Event on Node "+node.Name, func() (bool, string) {
		l, err := admin.List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + node.Name + ",reason=" + pool.EventFenced})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range l.Items {
			if e.Note == "recorded by the pool source's recorder" {
				return e.ReportingController == pool.ReportingController && e.ReportingInstance == pool.ReportingInstance(node.Name),
					e.ReportingController + " " + e.ReportingInstance
			}
		}
		return false, "not recorded"
	})
}

// event is an Event of the events.k8s.io API, as client-go's recorder
// makes them.
func event(regarding corev1.ObjectReference, reason, controller, instance string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(regarding.Kind) + "-", Namespace: "default"},
		EventTime:  metav1.NowMicro(), Regarding: regarding, Reason: reason, Action: reason, Type: corev1.EventTypeWarning,
		Note: reason + " by " + instance, ReportingController: controller, ReportingInstance: instance,
	}
}

func createEvent(ctx context.Context, events eventsclient.EventInterface, e *eventsv1.Event) edit {
	return func(dryRun bool) error {
		_, err := events.Create(ctx, e, metav1.CreateOptions{DryRun: dry(dryRun)})
		return err
	}
}

// refusedPrefix is refused for an edit that breaks more than one rule: the
// message starts with prefix, whichever rule the API server reports.
func refusedPrefix(t *testing.T, what string, e edit, prefix string) {
	t.Helper()
	is := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "denied request: "+prefix)
	}
	testsupport.Wait(t, "the API server to refuse "+what, func() (bool, string) {
		err := e(true)
		return is(err), errString(err)
	})
	if err := e(false); !is(err) {
		t.Fatalf("%s: %v, want Forbidden: %s...", what, err, prefix)
	}
}
