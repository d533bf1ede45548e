package kubesnap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandboxipam/sandboxipam/cluster/clustercheck"
	"github.com/sandboxipam/sandboxipam/ipamd/introspect/schema"
)

// What the node reads ask: the DaemonSet's pods (their label), the
// container ipamd runs in, and the command an operator runs there by hand
// (README: kubectl exec ... -c ipamd -- ipamctl pods).
const (
	IpamdSelector  = "app.kubernetes.io/name=sandboxipam"
	IpamdContainer = "ipamd"
)

// heldCommand is what runs in each node's ipamd container.
var heldCommand = []string{"ipamctl", "pods", "-o", "json"}

// Bounds of the node reads: how many at once, and how much output one may
// send (a node of 250 pods sends about 200 KiB).
const (
	parallelReads = 8
	maxHeldOutput = 16 << 20
)

// Exec runs argv in container of pod namespace/name and returns its
// stdout; its error carries what the command wrote to stderr.
type Exec func(ctx context.Context, namespace, pod, container string, argv []string) ([]byte, error)

// NodeReads is how the check asks each node's ipamd what it holds.
type NodeReads struct {
	// Exec runs the command in an ipamd pod (RemoteExec: pods/exec).
	Exec Exec
	// Timeout bounds each node's read; a node slower than it is not
	// compared, and says so.
	Timeout time.Duration
}

// CheckNodes is Check that also asks each Node's ipamd what it holds
// (ReadNodes) and joins that with the API's view.
func CheckNodes(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, reads NodeReads) (Result, error) {
	s, notes, err := Read(ctx, cs, dyn)
	if err != nil {
		return Result{}, err
	}
	if err := ReadNodes(ctx, cs, reads, &s); err != nil {
		return Result{}, err
	}
	r := clustercheck.Compare(s)
	return Result{Report: r, Notes: notes}, nil
}

// ReadNodes asks the ipamd of every Node of s what it holds, through
// reads.Exec in the node's running ipamd pod, and records each answer, or
// why there is none, in s. Listing the ipamd pods failing is an error.
func ReadNodes(ctx context.Context, cs kubernetes.Interface, reads NodeReads, s *clustercheck.Snapshot) error {
	s.FromNodes = true
	byNode := map[string]*corev1.Pod{}
	err := each(ctx, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = IpamdSelector
		return cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
	}, func(obj runtime.Object) {
		p := obj.(*corev1.Pod)
		if ipamdRunning(p) && (byNode[p.Spec.NodeName] == nil || byNode[p.Spec.NodeName].CreationTimestamp.Before(&p.CreationTimestamp)) {
			byNode[p.Spec.NodeName] = p
		}
	})
	if err != nil {
		return fmt.Errorf("list ipamd pods (%s): %w", IpamdSelector, err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallelReads)
	for _, n := range s.Nodes {
		p := byNode[n.Name]
		if p == nil {
			s.NotRead(n.Name, fmt.Sprintf("no running ipamd pod on it (label %s, container %s)", IpamdSelector, IpamdContainer))
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			held, err := readHeld(ctx, reads, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.NotRead(n.Name, err.Error())
				return
			}
			s.AddHeld(n.Name, p.Namespace+"/"+p.Name, held)
		})
	}
	wg.Wait()
	return nil
}

// ipamdRunning: the pod's ipamd container runs.
func ipamdRunning(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == IpamdContainer && c.State.Running != nil {
			return true
		}
	}
	return false
}

// readHeld runs `ipamctl pods -o json` in p's ipamd container.
func readHeld(ctx context.Context, reads NodeReads, p *corev1.Pod) (schema.Pods, error) {
	var v schema.Pods
	if reads.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, reads.Timeout)
		defer cancel()
	}
	where := fmt.Sprintf("%s in pod %s/%s (container %s)", strings.Join(heldCommand, " "), p.Namespace, p.Name, IpamdContainer)
	out, err := reads.Exec(ctx, p.Namespace, p.Name, IpamdContainer, heldCommand)
	if err != nil {
		return v, fmt.Errorf("%s: %w", where, err)
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return v, fmt.Errorf("%s: its answer is not ipamd's pods: %w", where, err)
	}
	return v, nil
}

// RemoteExec runs commands through the API server's pods/exec, as kubectl
// exec does: WebSocket first, then SPDY (an API server before 1.29 knows
// no WebSocket exec). kubectl falls back only when the upgrade fails, so
// as never to run a command twice; here it falls back on any error: the
// only command run is a read (ipamctl pods), and telling an upgrade
// failure apart needs k8s.io/streaming, which the module does not require
// directly. It needs create on pods/exec.
func RemoteExec(cfg *rest.Config, cs kubernetes.Interface) Exec {
	return func(ctx context.Context, namespace, pod, container string, argv []string) ([]byte, error) {
		u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(error) bool { return true })
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		stdout, stderr := &limitedBuffer{max: maxHeldOutput}, &limitedBuffer{max: 64 << 10}
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
		if err != nil {
			return nil, fmt.Errorf("exec: %w%s", err, stderrWords(stderr.String()))
		}
		return stdout.Bytes(), nil
	}
}

func stderrWords(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return ": " + s
}

// errTooLong: a command's output passed limitedBuffer's bound.
var errTooLong = errors.New("output too long")

// limitedBuffer is a buffer that refuses to grow past max.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("%w: more than %d bytes", errTooLong, b.max)
	}
	return b.Buffer.Write(p)
}

var _ io.Writer = (*limitedBuffer)(nil)
