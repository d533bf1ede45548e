// Package adapterpb is the generated protobuf and gRPC code for the
// runtime adapter wire protocol (adapter.proto, package
// sandboxipam.adapter.v1). Regenerate it with `make generate`; only package
// plugin should import it.
package adapterpb
