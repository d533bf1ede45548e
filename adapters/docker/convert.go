package docker

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/sandboxipam/sandboxipam/adapters/internal/proc"
	"github.com/sandboxipam/sandboxipam/runtime"
)

// sandboxFacts is what a sandbox is built from, whether the Engine's
// answer was an inspection (GetSandbox) or a list entry plus cached
// inspection facts (ListSandboxes): both paths must build the same
// Sandbox.
type sandboxFacts struct {
	id, name    string
	labels      map[string]string
	running     bool
	pid         int
	createdAt   time.Time
	networkMode container.NetworkMode
	networks    map[string]*network.EndpointSettings
}

func (f sandboxFacts) sandbox() runtime.Sandbox {
	labels := maps.Clone(f.labels)
	sandbox := runtime.Sandbox{
		ID:          f.id,
		Name:        labels[labelPodName],
		Namespace:   labels[labelPodNamespace],
		UID:         labels[labelPodUID],
		Attempt:     attemptFromName(f.name),
		State:       runtime.StateNotReady,
		CreatedAt:   f.createdAt,
		HostNetwork: f.networkMode.IsHost(),
		IPs:         engineIPs(f.networks),
		Labels:      labels,
	}
	if f.running {
		// Dockershim, too, calls a sandbox ready while its container
		// runs, paused or restarting included.
		sandbox.State = runtime.StateReady
		if f.pid > 0 {
			sandbox.NetNS = fmt.Sprintf("/proc/%d/ns/net", f.pid)
		}
	}
	return sandbox
}

// factsFromInspect reads an inspected pause container.
func (a *Adapter) factsFromInspect(ctx context.Context, details *container.InspectResponse) sandboxFacts {
	facts := sandboxFacts{id: details.ID, name: details.Name}
	if details.Config != nil {
		facts.labels = details.Config.Labels
	}
	if created, err := time.Parse(time.RFC3339Nano, details.Created); err == nil {
		facts.createdAt = created.UTC()
	} else {
		a.log.WarnContext(ctx, "sandbox has an unparsable creation time", "id", details.ID, "created", details.Created)
	}
	if state := details.State; state != nil && state.Running {
		facts.running, facts.pid = true, state.Pid
	}
	if details.HostConfig != nil {
		facts.networkMode = details.HostConfig.NetworkMode
	}
	if details.NetworkSettings != nil {
		facts.networks = details.NetworkSettings.Networks
	}
	return facts
}

// factsFromSummary reads a list entry; the creation time (to the
// nanosecond) and the process ID come from an earlier inspection.
func factsFromSummary(summary *container.Summary, inspected inspection) sandboxFacts {
	facts := sandboxFacts{
		id:          summary.ID,
		labels:      summary.Labels,
		running:     isRunning(summary.State) || removingWhileRunning(summary, inspected),
		createdAt:   inspected.createdAt,
		networkMode: container.NetworkMode(summary.HostConfig.NetworkMode),
	}
	if len(summary.Names) > 0 {
		facts.name = summary.Names[0]
	}
	if facts.running {
		facts.pid = inspected.pid
	}
	if summary.NetworkSettings != nil {
		facts.networks = summary.NetworkSettings.Networks
	}
	return facts
}

// isRunning maps a list entry's state as inspection's State.Running does.
func isRunning(state container.ContainerState) bool {
	switch state {
	case container.StateRunning, container.StatePaused, container.StateRestarting:
		return true
	default:
		return false
	}
}

// removingWhileRunning reports whether a sandbox the list shows as
// "removing" still has its process: the list state says only that a
// removal began, while inspection (GetSandbox) says Running until the
// process has exited, and the process still holds the pod's network
// namespace and address. The process an earlier inspection found, still
// in the container's cgroup, answers as inspection would, so List and Get
// agree without an inspection per listing.
func removingWhileRunning(summary *container.Summary, inspected inspection) bool {
	return summary.State == container.StateRemoving && proc.InContainer(inspected.pid, summary.ID)
}

// attemptFromName parses the attempt from a dockershim sandbox name,
// "/k8s_POD_<pod>_<namespace>_<uid>_<attempt>". Pod names, namespaces
// and UIDs cannot contain "_", so the name has exactly six parts; any
// other name yields attempt 0.
func attemptFromName(name string) uint32 {
	parts := strings.Split(strings.TrimPrefix(name, "/"), "_")
	if len(parts) != 6 || parts[0] != "k8s" || parts[1] != "POD" {
		return 0
	}
	attempt, err := strconv.ParseUint(parts[5], 10, 32)
	if err != nil {
		return 0
	}
	return uint32(attempt)
}

// engineIPs returns the addresses Docker itself assigned, sorted.
// Dockershim sandboxes use --network none with CNI, so Docker records
// none and the list is empty (their addresses come from the network
// namespace, see netnsIPs); a sandbox on a Docker network has its
// addresses here.
func engineIPs(networks map[string]*network.EndpointSettings) []netip.Addr {
	var ips []netip.Addr
	for _, endpoint := range networks {
		if endpoint == nil {
			continue
		}
		for _, text := range []string{endpoint.IPAddress, endpoint.GlobalIPv6Address} {
			if ip, err := netip.ParseAddr(text); err == nil {
				ips = append(ips, ip)
			}
		}
	}
	return mergeIPs(ips, nil)
}
