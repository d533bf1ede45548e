// Package e2e runs the sandboxipam CNI plugin binary against the real
// ipamd daemon (package ipamd/daemon, in-process, without a runtime
// adapter) in network namespaces the tests create, and benchmarks CNI
// ADD+DEL as processes against containernetworking's host-local and ptp
// plugins on the same machine in the same run.
//
// It holds tests only; it is a package of its own so that the plugin's
// unit tests in package cni never link the daemon.
package e2e
