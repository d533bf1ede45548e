// Command adapter-docker-minimal is the example third-party runtime
// adapter: a go-plugin binary that ipamd (or the conformance runner)
// launches and that reports dockershim pod sandboxes from Docker Engine.
//
//	go build -o adapter-docker-minimal ./examples/adapter-docker-minimal
//	conformance run --adapter ./adapter-docker-minimal --fixture docker \
//	    --endpoint unix:///var/run/docker.sock
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandboxipam/sandboxipam/examples/adapter-docker-minimal/dockerlabels"
	"github.com/sandboxipam/sandboxipam/runtime/plugin"
)

func main() {
	endpoint := flag.String("endpoint", dockerlabels.DefaultEndpoint, "Docker Engine API address")
	flag.Parse()
	adapter, err := dockerlabels.New(*endpoint)
	if err != nil {
		// stdout belongs to the plugin handshake: errors go to stderr.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(adapter)
}
