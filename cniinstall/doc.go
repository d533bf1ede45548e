// Package cniinstall puts the CNI plugin and its conflist on a node the way
// a DaemonSet must: atomically, so that the container runtime, which may
// exec the plugin or read the config directory at any moment, never sees a
// half-written file.
//
// Every write goes to a hidden temporary file beside its destination (same
// directory, so the same filesystem), is fsynced, renamed over the
// destination, and the directory is fsynced, so that after a crash the
// destination holds either the old file or the new one. The temporary
// names start with a dot and end in ".tmp": libcni loads only *.conf,
// *.conflist and *.json from the config directory, so a runtime never
// parses a conflist that is still being written.
//
// The conflist is written by ipamd once it is ready to answer ADD, and
// removed by the DaemonSet's preStop hook (cmd/sandboxipam-install), so a
// node without a running ipamd reports its network NotReady instead of
// failing every pod's ADD, as aws-node does.
package cniinstall
