// Package image builds container images without a registry or a Docker
// daemon, with github.com/google/go-containerregistry: one layer of files
// laid out from a Spec on an empty base, written as an OCI image archive
// (what "ctr images import" reads) or a docker-save archive (what
// "docker load" reads).
//
// Builds are reproducible: every tar entry has a fixed owner, mode and
// time, entries are sorted, parent directories are implied in one way,
// and the image's creation time is Epoch, so the same inputs always give
// the same layer, config and manifest digests.
//
// Project builds the sandboxipam image itself (ipamd, ipamctl, the CNI
// plugin and the portmap plugin it runs for hostPorts, the adapters,
// sandboxipam-install and Debian's CA bundle);
// internal/testenv uses Build for its pause image.
package image
