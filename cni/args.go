package cni

import (
	"fmt"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// The CNI_ARGS keys the plugin reads; others are ignored, as runtimes add
// keys of their own (IgnoreUnknown, K8S_POD_NETWORK, ...).
const (
	argPodName          = "K8S_POD_NAME"
	argPodNamespace     = "K8S_POD_NAMESPACE"
	argPodUID           = "K8S_POD_UID"
	argInfraContainerID = "K8S_POD_INFRA_CONTAINER_ID"
)

// PodRef is the pod's identity from CNI_ARGS: metadata only, never a key.
type PodRef struct {
	Name, Namespace, UID string
}

// Args are the per-call inputs from the environment.
type Args struct {
	// SandboxID is CNI_CONTAINERID: the infra sandbox ID.
	SandboxID string
	// IfName is CNI_IFNAME, the interface name inside the pod.
	IfName string
	// Netns is CNI_NETNS, the path of the pod's network namespace.
	Netns string
	// Pod is from K8S_POD_NAME, K8S_POD_NAMESPACE and K8S_POD_UID.
	Pod PodRef
	// InfraContainerID is K8S_POD_INFRA_CONTAINER_ID, when given.
	InfraContainerID string
}

// ParseArgs reads CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS and CNI_ARGS
// ("K1=V1;K2=V2"). Errors are *types.Error with code 4 (invalid
// environment variables).
func ParseArgs(sandboxID, ifName, netnsPath, cniArgs string) (*Args, error) {
	a := &Args{SandboxID: sandboxID, IfName: ifName, Netns: netnsPath}
	if sandboxID != "" {
		if err := validateContainerID(sandboxID); err != nil {
			return nil, err
		}
	}
	if ifName != "" {
		if err := validateInterfaceName(ifName); err != nil {
			return nil, err
		}
	}
	if err := a.parseCNIArgs(cniArgs); err != nil {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "invalid CNI_ARGS", err.Error())
	}
	return a, nil
}

func (a *Args) parseCNIArgs(cniArgs string) error {
	if cniArgs == "" {
		return nil
	}
	for _, pair := range strings.Split(cniArgs, ";") {
		if pair == "" {
			continue
		}
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return fmt.Errorf("%q is not KEY=VALUE", pair)
		}
		switch key {
		case argPodName:
			a.Pod.Name = value
		case argPodNamespace:
			a.Pod.Namespace = value
		case argPodUID:
			a.Pod.UID = value
		case argInfraContainerID:
			a.InfraContainerID = value
		}
	}
	return nil
}

// ValidateForAdd checks what ADD needs beyond ParseArgs: the attachment
// key, the pod's name and namespace, and an infra container ID that agrees
// with CNI_CONTAINERID.
func (a *Args) ValidateForAdd() error {
	switch {
	case a.SandboxID == "":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_CONTAINERID must be set", "")
	case a.IfName == "":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_IFNAME must be set", "")
	case a.Pod.Name == "":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS must carry "+argPodName, "")
	case a.Pod.Namespace == "":
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS must carry "+argPodNamespace, "")
	case a.InfraContainerID != "" && a.InfraContainerID != a.SandboxID:
		return types.NewError(types.ErrInvalidEnvironmentVariables,
			argInfraContainerID+" differs from CNI_CONTAINERID; the infra sandbox ID is ambiguous",
			fmt.Sprintf("%s=%q, CNI_CONTAINERID=%q", argInfraContainerID, a.InfraContainerID, a.SandboxID))
	}
	return nil
}
