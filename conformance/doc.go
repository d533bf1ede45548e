// Package conformance proves that a runtime adapter binary obeys the five
// rules of the adapter contract (see package runtime) against a real
// container runtime.
//
// The suite is modelled on csi-test's sanity package: a Config with
// documented defaults, one check per behaviour, each with a stable ID, a
// one-line statement and the rule it verifies. The same checks run two ways:
//
//   - conformancetest.Run(t, cfg) from a Go test, one t.Run per check, so an
//     adapter's own tests can call the suite (a package of its own, so that
//     this one does not import testing);
//   - RunChecks(ctx, cfg, reporter) from the conformance binary, which turns
//     the returned Report into text, JUnit XML or JSON.
//
// With Config.Benchmark set, RunChecks measures instead (as critest
// -benchmark does): ListSandboxes and GetSandbox latency percentiles with
// Config.Scale pods, and the adapter's memory, without pass or fail.
//
// The adapter is always launched through runtime/plugin/host.Launch, the same
// go-plugin path ipamd uses, so what passes here is what ipamd will see:
// typed errors must survive the process boundary, and deadlines must cross it.
//
// Real pods come from a fixture.Fixture (Docker or CRI). Every resource a
// check creates (pods, plain containers, extra adapter processes, sockets)
// is recorded and released in reverse order when the check ends, also when it
// fails or the run is interrupted. A check whose fixture lacks a capability
// is skipped with "X not supported" rather than failed.
//
// Every check finds a pod in a listing by its exact sandbox ID and by
// nothing else: the seed bug lists a pod under another ID with the right
// name, UID and attempt, so a lookup that fell back to those would pass it.
// Where the pod is listed under another ID (its app container's, a prefix,
// a scheme), the failure says which; that is all the fallback does.
//
// The run's pods live in two namespaces, Config.Namespace and
// SystemNamespace (kube-system, where CoreDNS runs on the pod network), and
// every identity, listing, get and freshness check covers both: an adapter
// blind to the kube-* namespaces fails. In each namespace one pod is
// dual-stack and one IPv6-only beside IPv4-only ones, as far as the
// fixture gives them (fixture.PodSpec.IPFamilies), and the checks that
// compare addresses (pod-ips-match, list-get-agree,
// recreated-pod-own-identity) compare each family the runtime recorded on
// its own: an adapter that reports a dual-stack pod's IPv4 address alone,
// or another pod's IPv6 one, fails. One check makes a pod again under
// an earlier pod's namespace and name with a new UID, as a StatefulSet
// does: an adapter that remembers pods by name fails it.
//
// Each check looks only at the pods of its own run, so the suite can run
// against a node that has other pods, and several runs can share a runtime.
// Read-only checks share a few pods created once per run (sharedPods);
// checks that stop, remove or restart pods create their own. A fixture
// that owns its runtime (fixture.RuntimeControl) also lets the suite stop
// and start the runtime under the adapter.
package conformance
