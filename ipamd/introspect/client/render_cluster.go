package client

import (
	"fmt"
	"io"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck/kubesnap"
)

// RenderClusterCheck prints each finding of `ipamctl check --cluster` in
// words, then what was compared.
func RenderClusterCheck(w io.Writer, r kubesnap.Result) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%-20s %s\n", f.Kind, f.Words); err != nil {
			return err
		}
	}
	verdict := "the cluster's pools, blocks, nodes and pods agree"
	if n := len(r.Findings); n > 0 {
		verdict = fmt.Sprintf("%d finding(s)", n)
	}
	if _, err := fmt.Fprintf(w, "%s: %d pool(s), %d block(s), %d node(s), %d pod(s) holding %d address(es) compared\n",
		verdict, r.Pools, r.Blocks, r.Nodes, r.Pods, r.Addresses); err != nil {
		return err
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}
