// Command dupids is a deliberately broken adapter, built only by the
// conformance suite's own tests. It lists every sandbox twice, both entries
// alike, as an adapter that merges two sources (a listing and a cache, or
// two runtime namespaces) without de-duplicating would. ipamd keys each IP
// by sandbox ID, so two entries under one ID are two answers about who owns
// it. The suite must fail it on no-duplicate-ids, and only there.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

// dupIDs is the correct adapter with every listed sandbox repeated.
type dupIDs struct {
	*dockerlabels.Adapter
}

// ListSandboxes appends a copy of every sandbox after the listing.
func (d *dupIDs) ListSandboxes(ctx context.Context) ([]runtime.Sandbox, error) {
	sandboxes, err := d.Adapter.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	return append(sandboxes, sandboxes...), nil
}

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&dupIDs{Adapter: adapter})
}
