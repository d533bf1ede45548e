package cnitest

import (
	"testing"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/datastore"
)

// PodEnv is one pod attachment in namespaces the test made: the plugin
// runs in HostNS (standing in for the node), the pod lives in PodNS, and
// nothing touches the namespace the test itself runs in.
type PodEnv struct {
	Socket    string // ipamd's socket
	HostNS    string
	PodNS     string
	SandboxID string
}

// NewPodEnv creates both namespaces; it needs root.
func NewPodEnv(tb testing.TB, socket string) *PodEnv {
	tb.Helper()
	testsupport.RequireRoot(tb, "ip")
	return &PodEnv{
		Socket:    socket,
		HostNS:    NewNetns(tb, "host"),
		PodNS:     NewNetns(tb, "pod"),
		SandboxID: SandboxID(tb.Name()),
	}
}

// Call runs the plugin for the env's attachment (interface eth0).
func (e *PodEnv) Call(tb testing.TB, command string, config []byte) Outcome {
	tb.Helper()
	return Run(tb, Call{
		Command: command, HostNetns: e.HostNS, SandboxID: e.SandboxID, IfName: "eth0",
		Netns: NetnsPath(e.PodNS), Args: PodArgs(e.SandboxID), Config: config,
	})
}

// Key is the attachment's datastore key on network "podnet".
func (e *PodEnv) Key() datastore.Key {
	return datastore.Key{Network: "podnet", SandboxID: e.SandboxID, IfName: "eth0"}
}

// HostVeth is the name of the attachment's host-side veth.
func (e *PodEnv) HostVeth() string {
	return cni.HostVethName(cni.DefaultHostVethPrefix, e.SandboxID, "eth0")
}
