package cri

import (
	"context"
	"maps"
	"net/netip"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/runtime"
)

// sandboxFromStatus converts a CRI sandbox status. The list item, when
// given, supplies what an old runtime may leave out of the status.
func (a *Adapter) sandboxFromStatus(ctx context.Context, status *criv1.PodSandboxStatus, item *criv1.PodSandbox) runtime.Sandbox {
	metadata := status.GetMetadata()
	if metadata == nil {
		metadata = item.GetMetadata()
	}
	labels := status.GetLabels()
	if labels == nil {
		labels = item.GetLabels()
	}
	createdAt := status.GetCreatedAt()
	if createdAt == 0 {
		createdAt = item.GetCreatedAt()
	}
	return runtime.Sandbox{
		ID:          status.GetId(),
		Name:        metadata.GetName(),
		Namespace:   metadata.GetNamespace(),
		UID:         metadata.GetUid(),
		Attempt:     metadata.GetAttempt(),
		State:       stateFromCRI(status.GetState()),
		CreatedAt:   time.Unix(0, createdAt).UTC(),
		HostNetwork: status.GetLinux().GetNamespaces().GetOptions().GetNetwork() == criv1.NamespaceMode_NODE,
		IPs:         a.podIPs(ctx, status),
		Labels:      maps.Clone(labels),
	}
}

func stateFromCRI(state criv1.PodSandboxState) runtime.SandboxState {
	if state == criv1.PodSandboxState_SANDBOX_READY {
		return runtime.StateReady
	}
	return runtime.StateNotReady
}

// podIPs parses the primary and additional pod IPs; a runtime that stores
// garbage there gets a warning, not a failed listing.
func (a *Adapter) podIPs(ctx context.Context, status *criv1.PodSandboxStatus) []netip.Addr {
	network := status.GetNetwork()
	raw := make([]string, 0, 1+len(network.GetAdditionalIps()))
	if ip := network.GetIp(); ip != "" {
		raw = append(raw, ip)
	}
	for _, extra := range network.GetAdditionalIps() {
		if ip := extra.GetIp(); ip != "" {
			raw = append(raw, ip)
		}
	}
	if len(raw) == 0 {
		return nil
	}
	ips := make([]netip.Addr, 0, len(raw))
	for _, text := range raw {
		ip, err := netip.ParseAddr(text)
		if err != nil {
			a.log.WarnContext(ctx, "sandbox has an unparsable IP", "id", status.GetId(), "ip", text)
			continue
		}
		ips = append(ips, ip)
	}
	return ips
}
