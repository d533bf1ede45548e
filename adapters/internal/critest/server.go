// Package critest serves the real CRI v1 RuntimeService wire protocol on a
// unix socket, answering the calls the adapters make (Version,
// ListPodSandbox, PodSandboxStatus) the way a given runtime does. It
// stands in for runtimes that cannot run on the test machine, cri-dockerd
// and CRI-O, so that their adapters' runtime-specific behaviour (the
// runtime name they expect, their default sockets, their not-found
// errors) is tested through a real gRPC connection.
package critest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Flavor is how one runtime answers.
type Flavor struct {
	// Version is the runtime's Version reply.
	Version *criv1.VersionResponse
	// NotFound is the error the runtime returns for an unknown sandbox.
	NotFound func(id string) error
	// StatusOfAppContainers makes PodSandboxStatus answer for an app
	// container's ID too, as cri-dockerd does: with id equal to the asked
	// one, its pod's metadata, state READY and the pod's IP. Only
	// ListPodSandbox tells sandboxes apart.
	StatusOfAppContainers bool
}

// CRIDockerd answers as cri-dockerd (and kubelet's dockershim before it):
// runtime name "docker", the Docker Engine's version and API version, and
// Docker's "No such container" error passed through with code Unknown.
func CRIDockerd() Flavor {
	return Flavor{
		Version: &criv1.VersionResponse{
			Version: "0.1.0", RuntimeName: "docker", RuntimeVersion: "20.10.24", RuntimeApiVersion: "1.41.0",
		},
		NotFound: func(id string) error {
			return status.Errorf(codes.Unknown, "Error: No such container: %s", id)
		},
		StatusOfAppContainers: true,
	}
}

// CRIO answers as CRI-O: runtime name "cri-o" and codes.NotFound.
func CRIO() Flavor {
	return Flavor{
		Version: &criv1.VersionResponse{
			Version: "0.1.0", RuntimeName: "cri-o", RuntimeVersion: "1.30.4", RuntimeApiVersion: "v1",
		},
		NotFound: func(id string) error {
			return status.Errorf(codes.NotFound, "could not find pod %q: PodSandbox with ID starting with %s not found: ID does not exist", id, id)
		},
	}
}

// Server is a CRI RuntimeService holding sandboxes in memory.
type Server struct {
	criv1.UnimplementedRuntimeServiceServer
	flavor Flavor

	mu        sync.Mutex
	sandboxes []*criv1.PodSandboxStatus
	// apps maps an app container's ID to its sandbox's ID.
	apps map[string]string
	// checkpointOnly holds the IDs of sandboxes whose pause container is
	// gone while the runtime's checkpoint keeps them.
	checkpointOnly map[string]bool
}

// NewServer returns an empty server answering as flavor.
func NewServer(flavor Flavor) *Server {
	return &Server{flavor: flavor}
}

// Add stores a sandbox; ListPodSandbox and PodSandboxStatus report it.
func (s *Server) Add(sandbox *criv1.PodSandboxStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sandboxes = append(s.sandboxes, proto.CloneOf(sandbox))
}

// AddAppContainer records an app container of a stored sandbox; only a
// StatusOfAppContainers flavor ever answers for it.
func (s *Server) AddAppContainer(sandboxID, containerID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == nil {
		s.apps = map[string]string{}
	}
	s.apps[containerID] = sandboxID
}

// LoseContainer makes a stored sandbox checkpoint-only, as cri-dockerd's
// are once the pause container is removed behind its back: ListPodSandbox
// still lists it, SANDBOX_NOTREADY, but only when the request has no
// filter at all (cri-dockerd reads its checkpoints only then), and
// PodSandboxStatus fails with the flavor's NotFound.
func (s *Server) LoseContainer(sandboxID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checkpointOnly == nil {
		s.checkpointOnly = map[string]bool{}
	}
	s.checkpointOnly[sandboxID] = true
	for _, sb := range s.sandboxes {
		if sb.GetId() == sandboxID {
			sb.State = criv1.PodSandboxState_SANDBOX_NOTREADY
		}
	}
}

// Remove forgets the sandbox with this ID, as the runtime does after
// RemovePodSandbox.
func (s *Server) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sandboxes = slices.DeleteFunc(s.sandboxes, func(sb *criv1.PodSandboxStatus) bool { return sb.GetId() == id })
}

// Serve listens on the unix socket at path and serves until stop is
// called. A stale socket file at path is replaced.
func (s *Server) Serve(path string) (stop func(), err error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	server := grpc.NewServer()
	criv1.RegisterRuntimeServiceServer(server, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.Serve(listener) // returns when stopped
	}()
	return func() { server.Stop(); <-done }, nil
}

// Version answers with the flavor's version.
func (s *Server) Version(context.Context, *criv1.VersionRequest) (*criv1.VersionResponse, error) {
	return proto.CloneOf(s.flavor.Version), nil
}

// ListPodSandbox lists the stored sandboxes that match the filter.
func (s *Server) ListPodSandbox(_ context.Context, request *criv1.ListPodSandboxRequest) (*criv1.ListPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	filter := request.GetFilter()
	reply := &criv1.ListPodSandboxResponse{}
	for _, sb := range s.sandboxes {
		if !matches(sb, filter) || (filter != nil && s.checkpointOnly[sb.GetId()]) {
			continue
		}
		reply.Items = append(reply.Items, &criv1.PodSandbox{
			Id: sb.GetId(), Metadata: sb.GetMetadata(), State: sb.GetState(), CreatedAt: sb.GetCreatedAt(),
			Labels: sb.GetLabels(), Annotations: sb.GetAnnotations(), RuntimeHandler: sb.GetRuntimeHandler(),
		})
	}
	return reply, nil
}

func matches(sb *criv1.PodSandboxStatus, filter *criv1.PodSandboxFilter) bool {
	if filter == nil {
		return true
	}
	if filter.GetId() != "" && !strings.HasPrefix(sb.GetId(), filter.GetId()) {
		return false
	}
	if filter.GetState() != nil && filter.GetState().GetState() != sb.GetState() {
		return false
	}
	for key, value := range filter.GetLabelSelector() {
		if sb.GetLabels()[key] != value {
			return false
		}
	}
	return true
}

// PodSandboxStatus resolves the ID as runtimes do, by a unique prefix,
// and answers with the stored status. A StatusOfAppContainers flavor
// answers for an app container with its pod's status under the
// container's ID; a checkpoint-only sandbox is not found.
func (s *Server) PodSandboxStatus(_ context.Context, request *criv1.PodSandboxStatusRequest) (*criv1.PodSandboxStatusResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := request.GetPodSandboxId()
	if sandboxID, ok := s.apps[id]; ok && s.flavor.StatusOfAppContainers {
		for _, sb := range s.sandboxes {
			if sb.GetId() == sandboxID {
				answer := proto.CloneOf(sb)
				answer.Id, answer.State = id, criv1.PodSandboxState_SANDBOX_READY
				return &criv1.PodSandboxStatusResponse{Status: answer}, nil
			}
		}
	}
	if s.checkpointOnly[id] {
		return nil, s.flavor.NotFound(id)
	}
	var found []*criv1.PodSandboxStatus
	for _, sb := range s.sandboxes {
		if sb.GetId() == id {
			found = []*criv1.PodSandboxStatus{sb}
			break
		}
		if id != "" && strings.HasPrefix(sb.GetId(), id) {
			found = append(found, sb)
		}
	}
	if len(found) != 1 {
		return nil, s.flavor.NotFound(id)
	}
	return &criv1.PodSandboxStatusResponse{Status: proto.CloneOf(found[0])}, nil
}

// Pod describes a sandbox for NewSandbox.
type Pod struct {
	Name, Namespace, UID string
	Attempt              uint32
	Ready                bool
	HostNetwork          bool
	IPs                  []string // primary first
}

// NewSandbox builds a sandbox status with a fresh 64-hex ID, shaped as
// runtimes report them.
func NewSandbox(pod Pod) *criv1.PodSandboxStatus {
	state := criv1.PodSandboxState_SANDBOX_NOTREADY
	if pod.Ready {
		state = criv1.PodSandboxState_SANDBOX_READY
	}
	networkMode := criv1.NamespaceMode_POD
	if pod.HostNetwork {
		networkMode = criv1.NamespaceMode_NODE
	}
	network := &criv1.PodSandboxNetworkStatus{}
	for i, ip := range pod.IPs {
		if i == 0 {
			network.Ip = ip
			continue
		}
		network.AdditionalIps = append(network.AdditionalIps, &criv1.PodIP{Ip: ip})
	}
	return &criv1.PodSandboxStatus{
		Id:        NewID(),
		Metadata:  &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: pod.UID, Attempt: pod.Attempt},
		State:     state,
		CreatedAt: time.Now().UnixNano(),
		Network:   network,
		Linux: &criv1.LinuxPodSandboxStatus{Namespaces: &criv1.Namespace{Options: &criv1.NamespaceOption{
			Network: networkMode, Pid: criv1.NamespaceMode_POD, Ipc: criv1.NamespaceMode_POD,
		}}},
		Labels: map[string]string{
			"io.kubernetes.pod.name": pod.Name, "io.kubernetes.pod.namespace": pod.Namespace, "io.kubernetes.pod.uid": pod.UID,
		},
	}
}

// NewID returns a random 64-hex-digit ID like the runtimes generate.
func NewID() string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(raw[:])
}
