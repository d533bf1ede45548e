package containerd

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/containerd/containerd/v2/core/containers"
)

// Annotations the CRI plugin writes into every sandbox's OCI spec.
const (
	annotationSandboxName      = "io.kubernetes.cri.sandbox-name"
	annotationSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	annotationSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	// annotationSandboxAttempt is written by newer containerd releases
	// only; older ones keep the attempt in the metadata extension.
	annotationSandboxAttempt = "io.kubernetes.cri.sandbox-attempt"
	// metadataExtension is the container extension holding the CRI
	// plugin's sandbox metadata: the CRI config and the pod IPs.
	metadataExtension = "io.cri-containerd.sandbox.metadata"
)

// sandboxSpec is the part of the OCI runtime spec the adapter reads.
// Decoding only these fields keeps a listing of many sandboxes cheap.
type sandboxSpec struct {
	Annotations map[string]string `json:"annotations"`
	Linux       *struct {
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
	} `json:"linux"`
}

// networkNamespacePath returns the spec's network namespace path, or nil
// when the spec has no network namespace at all: the sandbox shares the
// node's (host network), which is how the CRI plugin lays out a
// hostNetwork pod.
func (s sandboxSpec) networkNamespacePath() *string {
	if s.Linux == nil {
		return nil
	}
	for _, namespace := range s.Linux.Namespaces {
		if namespace.Type == "network" {
			return &namespace.Path
		}
	}
	return nil
}

func parseSpec(record *containers.Container) (sandboxSpec, error) {
	var spec sandboxSpec
	if record.Spec == nil {
		return spec, fmt.Errorf("container %s has no spec", record.ID)
	}
	if err := json.Unmarshal(record.Spec.GetValue(), &spec); err != nil {
		return spec, fmt.Errorf("decode spec of container %s (%s): %w", record.ID, record.Spec.GetTypeUrl(), err)
	}
	return spec, nil
}

// sandboxMetadata is the part of the CRI plugin's sandbox metadata the
// adapter reads. The plugin stores it as versioned JSON.
type sandboxMetadata struct {
	Metadata struct {
		IP            string   `json:"IP"`
		AdditionalIPs []string `json:"AdditionalIPs"`
		Config        struct {
			Metadata struct {
				Attempt uint32 `json:"attempt"`
			} `json:"metadata"`
		} `json:"Config"`
	} `json:"Metadata"`
}

func parseMetadata(record *containers.Container) (*sandboxMetadata, error) {
	extension, ok := record.Extensions[metadataExtension]
	if !ok || extension == nil {
		return nil, fmt.Errorf("container %s has no %s extension", record.ID, metadataExtension)
	}
	var metadata sandboxMetadata
	if err := json.Unmarshal(extension.GetValue(), &metadata); err != nil {
		return nil, fmt.Errorf("decode %s of container %s: %w", metadataExtension, record.ID, err)
	}
	return &metadata, nil
}

// podIPs returns the IPs the CRI plugin recorded; none when the metadata
// is missing or the sandbox has no pod network.
func (m *sandboxMetadata) podIPs() []netip.Addr {
	if m == nil {
		return nil
	}
	var ips []netip.Addr
	for _, text := range append([]string{m.Metadata.IP}, m.Metadata.AdditionalIPs...) {
		if ip, err := netip.ParseAddr(text); err == nil {
			ips = append(ips, ip)
		}
	}
	return ips
}

// attempt prefers the spec annotation and falls back to the CRI config
// kept in the metadata extension.
func attempt(spec sandboxSpec, metadata *sandboxMetadata) uint32 {
	if text, ok := spec.Annotations[annotationSandboxAttempt]; ok {
		if value, err := strconv.ParseUint(text, 10, 32); err == nil {
			return uint32(value)
		}
	}
	if metadata == nil {
		return 0
	}
	return metadata.Metadata.Config.Metadata.Attempt
}
