package shared

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sandboxipam/sandboxipam/runtime"
	adapterpb "github.com/sandboxipam/sandboxipam/runtime/plugin/proto"
)

// ToProtoInfo is the plugin side's Info answer.
func ToProtoInfo(info runtime.Info) *adapterpb.InfoResponse {
	return &adapterpb.InfoResponse{
		AdapterName:    info.AdapterName,
		AdapterVersion: info.AdapterVersion,
		RuntimeName:    info.RuntimeName,
		RuntimeVersion: info.RuntimeVersion,
		Endpoint:       info.Endpoint,
	}
}

// FromProtoInfo is the host side's copy of an Info answer.
func FromProtoInfo(info *adapterpb.InfoResponse) runtime.Info {
	return runtime.Info{
		AdapterName:    info.GetAdapterName(),
		AdapterVersion: info.GetAdapterVersion(),
		RuntimeName:    info.GetRuntimeName(),
		RuntimeVersion: info.GetRuntimeVersion(),
		Endpoint:       info.GetEndpoint(),
	}
}

// states pairs each sandbox state with its wire value: the one table both
// directions read, so they cannot disagree. Any other value is unspecified
// on the wire and unknown in the runtime.
var states = [...]struct {
	native runtime.SandboxState
	wire   adapterpb.SandboxState
}{
	{runtime.StateReady, adapterpb.SandboxState_SANDBOX_STATE_READY},
	{runtime.StateNotReady, adapterpb.SandboxState_SANDBOX_STATE_NOT_READY},
}

func toProtoState(state runtime.SandboxState) adapterpb.SandboxState {
	for _, s := range states {
		if s.native == state {
			return s.wire
		}
	}
	return adapterpb.SandboxState_SANDBOX_STATE_UNSPECIFIED
}

func fromProtoState(state adapterpb.SandboxState) runtime.SandboxState {
	for _, s := range states {
		if s.wire == state {
			return s.native
		}
	}
	return runtime.StateUnknown
}

// ToProtoSandboxes allocates the messages in one block: a 10,000-sandbox
// listing is one allocation rather than 10,000.
func ToProtoSandboxes(sandboxes []runtime.Sandbox) []*adapterpb.Sandbox {
	block := make([]adapterpb.Sandbox, len(sandboxes))
	out := make([]*adapterpb.Sandbox, len(sandboxes))
	for i := range sandboxes {
		fillProtoSandbox(&block[i], &sandboxes[i])
		out[i] = &block[i]
	}
	return out
}

// ToProtoSandbox is the plugin side's message for one sandbox.
func ToProtoSandbox(sandbox *runtime.Sandbox) *adapterpb.Sandbox {
	out := &adapterpb.Sandbox{}
	fillProtoSandbox(out, sandbox)
	return out
}

func fillProtoSandbox(out *adapterpb.Sandbox, in *runtime.Sandbox) {
	out.Id = in.ID
	out.Name = in.Name
	out.Namespace = in.Namespace
	out.Uid = in.UID
	out.Attempt = in.Attempt
	out.State = toProtoState(in.State)
	out.CreatedAtSeconds = in.CreatedAt.Unix()
	out.CreatedAtNanos = int32(in.CreatedAt.Nanosecond())
	out.Netns = in.NetNS
	out.HostNetwork = in.HostNetwork
	if len(in.Labels) > 0 {
		out.Labels = make([]string, 0, 2*len(in.Labels))
		for key, value := range in.Labels {
			out.Labels = append(out.Labels, key, value)
		}
	}
	if len(in.IPs) > 0 {
		out.Ips = make([][]byte, len(in.IPs))
		for i, ip := range in.IPs {
			out.Ips[i] = ip.AsSlice()
		}
	}
}

// FromProtoSandboxes converts a whole listing or fails: a listing with a
// sandbox left out would read as "that pod is gone".
func FromProtoSandboxes(in []*adapterpb.Sandbox) ([]runtime.Sandbox, error) {
	ipCount := 0
	for _, sandbox := range in {
		ipCount += len(sandbox.GetIps())
	}
	ipBlock := make([]netip.Addr, 0, ipCount)
	out := make([]runtime.Sandbox, len(in))
	for i, sandbox := range in {
		var err error
		ipBlock, err = fillSandbox(&out[i], sandbox, ipBlock)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FromProtoSandbox is the host side's copy of one sandbox.
func FromProtoSandbox(in *adapterpb.Sandbox) (runtime.Sandbox, error) {
	var out runtime.Sandbox
	_, err := fillSandbox(&out, in, nil)
	return out, err
}

// fillSandbox decodes in into out, appending its IPs to ipBlock and
// slicing them from there. Empty Labels and IPs arrive as nil.
func fillSandbox(out *runtime.Sandbox, in *adapterpb.Sandbox, ipBlock []netip.Addr) ([]netip.Addr, error) {
	out.ID = in.GetId()
	out.Name = in.GetName()
	out.Namespace = in.GetNamespace()
	out.UID = in.GetUid()
	out.Attempt = in.GetAttempt()
	out.State = fromProtoState(in.GetState())
	out.CreatedAt = time.Unix(in.GetCreatedAtSeconds(), int64(in.GetCreatedAtNanos())).UTC()
	out.NetNS = in.GetNetns()
	out.HostNetwork = in.GetHostNetwork()
	if labels := in.GetLabels(); len(labels) > 0 {
		if len(labels)%2 != 0 {
			return ipBlock, fmt.Errorf("sandbox %s: %d label strings, want key-value pairs", out.ID, len(labels))
		}
		out.Labels = make(map[string]string, len(labels)/2)
		for i := 0; i < len(labels); i += 2 {
			out.Labels[labels[i]] = labels[i+1]
		}
	}
	if len(in.GetIps()) == 0 {
		return ipBlock, nil
	}
	start := len(ipBlock)
	for _, raw := range in.GetIps() {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return ipBlock, fmt.Errorf("sandbox %s: IP of %d bytes, want 4 or 16", out.ID, len(raw))
		}
		ipBlock = append(ipBlock, ip)
	}
	out.IPs = ipBlock[start:len(ipBlock):len(ipBlock)]
	return ipBlock, nil
}
