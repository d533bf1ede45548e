// Package ipamdgrpc holds the gRPC service of ipamd's CNI-facing API,
// generated from service.proto.
package ipamdgrpc
