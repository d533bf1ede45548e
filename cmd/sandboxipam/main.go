// Command sandboxipam is the CNI plugin (network config "type":
// "sandboxipam"): it gets pod addresses from ipamd and wires pods up.
//
// The plugin lives for one CNI call: build it with CGO_ENABLED=0, as a
// static binary skips the dynamic loader at every exec.
package main

import (
	"context"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	cni.Main(context.Background(), "CNI plugin sandboxipam "+version.String())
}
