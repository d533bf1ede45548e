// Command sandboxipam is the CNI plugin (network config "type":
// "sandboxipam"): it gets pod addresses from ipamd and wires pods up.
//
// The plugin lives for one CNI call: build it with CGO_ENABLED=0, as a
// static binary skips the dynamic loader at every exec.
//
// See docs/architecture.md for where this package sits and the life of an
// ADD, a DEL, a reconcile pass and a restart through it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/cni"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("sandboxipam"))
		return
	}
	cni.Main(context.Background(), "CNI plugin sandboxipam "+version.String())
}
