//go:build tools

// Package tools pins the CNI reference plugins that sandboxipam ships
// beside its own: portmap, which the sandboxipam plugin runs for a pod
// with hostPorts, so that kubelet's hostPorts reach their pods. It is a module of
// its own so that the main module never links a plugin it only installs;
// make build and the image build it from here (internal/image names the
// package), at the version go.mod pins.
package tools

import _ "github.com/containernetworking/plugins/plugins/meta/portmap"
