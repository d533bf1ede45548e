// Package compat runs the previous release's binaries against this tree's,
// so that a change which would break the previous release reading what this
// one wrote, or the two talking over ipamd's socket, fails make test: an
// upgrade and a rollback (kubectl rollout undo) run both releases over one
// node's state, and for the length of a rollout a node's CNI plugin and
// the ipamd serving it may be of different releases.
//
// The previous release (internal/release Previous) is built from its own
// tree, read from this repository's git history, with its own go.mod, and
// cached by commit under ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/releases;
// this release's binaries are built as every test builds them
// (internal/testsupport). Each ipamd is the real binary (internal/ipamdproc)
// over a static pool, its runtime the release's own test adapter (a JSON
// state file), and every ADD, CHECK, DEL and STATUS goes through a real CNI
// plugin binary run as another plugin's IPAM plugin, which touches no
// network namespace: the tests need no root.
//
//   - checkpoint_test.go: this release's ipamd writes a state directory; the
//     previous release's ipamd starts on it and reports the same
//     assignments, answers a DEL and an ADD; this release's ipamd then
//     starts on what the previous one wrote.
//   - socket_test.go: the previous plugin against this ipamd and the
//     reverse, and a newer plugin's request (an unknown method or field)
//     refused by this ipamd, naming what it does not know.
//
// Both ipamds read one config file, written from this tree's config struct,
// which is stricter than a cluster needs (a rollback brings the previous
// release's ConfigMap back with its pod spec): when this release adds a
// config field the previous ipamd refuses, the previous ipamd's start fails
// here, naming it, and the test then writes that release's config apart.
//
// Without the previous release's commit in the repository (a shallow
// clone), the tests skip saying so; under CI=true they fail instead.
package compat
