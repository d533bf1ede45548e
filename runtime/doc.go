// Package runtime is the contract between ipamd and the container runtimes
// it asks which pod sandboxes still exist.
//
// A pod's IP is recorded under its infra sandbox ID: the ID the CNI plugin
// receives as CNI_CONTAINERID (and K8S_POD_INFRA_CONTAINER_ID). Only the
// container runtime knows that ID, and every runtime exposes it differently,
// so each runtime gets an adapter that implements RuntimeAdapter. Adapters
// run as separate plugin binaries (see package runtime/plugin); ipamd only
// ever sees this interface.
//
// Every adapter obeys five rules, and the conformance suite checks each:
//
//  1. Sandbox.ID is the full-length infra sandbox ID, byte for byte what the
//     runtime passes to the CNI plugin: no "docker://" scheme, no
//     12-character short form, never the ID of an application container.
//  2. A failure to reach or read the runtime is an error (ErrUnavailable),
//     never an empty list. An empty list means "no pods", and ipamd would
//     release every IP on it.
//  3. Sandboxes that are stopped but not removed are listed as NotReady:
//     they still own their IP.
//  4. Containers that are not Kubernetes pod sandboxes are never listed.
//  5. Context deadlines are honoured, and calls are safe concurrently.
//
// The errors in this package are the only ones callers branch on; they
// survive the plugin boundary, so errors.Is works on the host exactly as it
// does in process.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package runtime
