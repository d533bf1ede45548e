// Package ipamdproc starts the real ipamd binary for tests, as an operator
// runs it: a config file marshalled from ipamd/config's struct (never a
// YAML template, so a renamed or removed field fails to compile rather
// than to start), its own process group, so that a SIGKILL takes the
// adapter plugin down with it, and its output appended to a log file.
//
// internal/scenario, ipamd/daemon's binary tests and cni/e2e's benchmarks
// all start ipamd through it; each waits for the readiness it needs with
// Process.WaitReady, which gives up at once when ipamd exits.
package ipamdproc
