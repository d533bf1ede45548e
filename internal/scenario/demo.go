package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// Demo walks a newcomer through the seed bug's scenario on real parts,
// saying in plain words what happens and showing ipamctl's view.
type Demo struct {
	BinDir string    // make build's bin/
	Dir    string    // work directory; empty: a fresh one under /tmp
	Out    io.Writer // narration
}

// Run runs the demo and cleans up everything it started.
func (d Demo) Run(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the demo starts a private containerd and needs root")
	}
	d.say("Installing containerd, runc and the CNI plugins from Debian's packages if they are missing...")
	if err := testenv.EnsurePackages(ctx); err != nil {
		return err
	}
	dir := d.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("/tmp", "sbx-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	d.say("Starting a private containerd (its own root, sockets and network namespace) whose CNI config")
	d.say("calls the sandboxipam plugin, and ipamd with the containerd adapter as a plugin process...")
	node, err := StartNode(ctx, Options{Dir: dir, BinDir: d.BinDir, Grace: 2 * time.Second})
	if err != nil {
		return err
	}
	defer func() {
		d.say("\nCleaning up: removing the pods, stopping ipamd and containerd.")
		node.Stop(context.WithoutCancel(ctx))
	}()
	return d.scenario(ctx, node)
}

// scenario runs the demo's steps in order; each narrates itself.
func (d Demo) scenario(ctx context.Context, node *Node) error {
	var pods []fixture.Pod
	steps := []func() error{
		func() (err error) { pods, err = d.createPods(ctx, node); return err },
		func() error { return d.crashAndRestart(ctx, node) },
		func() error { return d.deletePod(ctx, node, pods[0]) },
		func() error { return d.loseDEL(ctx, node, pods[1]) },
		func() error { return d.reconcileReleases(ctx, node, pods[1]) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (d Demo) createPods(ctx context.Context, node *Node) ([]fixture.Pod, error) {
	d.step("1. Three pods are created through CRI, as kubelet would. For each, containerd runs the")
	d.say("   sandboxipam CNI plugin with CNI_CONTAINERID = the pod's infra sandbox ID; ipamd records")
	d.say("   the address under exactly that ID.")
	var pods []fixture.Pod
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		pod, err := node.Pods.CreatePod(ctx, fixture.PodSpec{Name: name, Namespace: "shop", UID: "uid-" + name, Containers: []string{"app"}})
		if err != nil {
			return nil, err
		}
		inside, err := node.AddressInPod(ctx, pod.SandboxID)
		if err != nil {
			return nil, err
		}
		d.say("   pod %s: sandbox %s, eth0 inside the pod has %s", name, pod.SandboxID, inside)
		pods = append(pods, pod)
	}
	return pods, d.ctl(ctx, node, "pods")
}

func (d Demo) crashAndRestart(ctx context.Context, node *Node) error {
	d.step("2. ipamd is killed with SIGKILL (a crash, an OOM kill, an upgrade gone wrong) and started again.")
	d.say("   The bug's daemon rebuilt its state from the Kubernetes API and recorded app container IDs")
	d.say("   here. ipamd reloads its checkpoint and asks the runtime, through the adapter, which sandboxes exist.")
	if err := node.IPAMD.Kill(); err != nil {
		return err
	}
	if err := node.IPAMD.Start(ctx); err != nil {
		return err
	}
	return d.ctl(ctx, node, "pods")
}

func (d Demo) deletePod(ctx context.Context, node *Node, pod fixture.Pod) error {
	d.step("3. Pod web-0 is deleted. containerd's CNI DEL carries the sandbox ID; ipamd finds the")
	d.say("   assignment under that ID and releases the address (the bug answered \"unknown pod\" here).")
	if err := node.Pods.RemovePod(ctx, pod); err != nil {
		return err
	}
	return d.ctl(ctx, node, "pods")
}

func (d Demo) loseDEL(ctx context.Context, node *Node, pod fixture.Pod) error {
	d.step("4. ipamd goes down again, and pod web-1 is deleted meanwhile. Its CNI DEL cannot reach ipamd:")
	if err := node.IPAMD.Kill(); err != nil {
		return err
	}
	if err := node.Pods.StopPod(ctx, pod); err != nil {
		d.say("   containerd says: %s", firstLine(err.Error()))
	}
	d.say("   The pod is then force-removed, so that DEL never reaches ipamd.")
	return node.LoseDEL(ctx, pod)
}

func (d Demo) reconcileReleases(ctx context.Context, node *Node, gone fixture.Pod) error {
	d.step("5. ipamd starts again. Its reconciler lists the sandboxes through the adapter; web-1's sandbox")
	d.say("   is gone, so once its assignment is older than the grace period, its address is released.")
	if err := node.IPAMD.Start(ctx); err != nil {
		return err
	}
	if err := d.waitReleased(ctx, node, gone.SandboxID); err != nil {
		return err
	}
	for _, args := range [][]string{{"adapter"}, {"pods"}, {"pool"}} {
		if err := d.ctl(ctx, node, args...); err != nil {
			return err
		}
	}
	d.step("Only web-2's address is still assigned, under web-2's sandbox ID, exactly as the runtime says:")
	view, err := node.SandboxIPs(ctx)
	if err != nil {
		return err
	}
	for id, ip := range view {
		d.say("   runtime: sandbox %s has %s", id, ip)
	}
	return nil
}

func (d Demo) waitReleased(ctx context.Context, node *Node, sandboxID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return testsupport.Poll(ctx, "the reconciler releasing sandbox "+sandboxID, func(ctx context.Context) error {
		pods, err := node.IPAMD.Client().Pods(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods.Pods {
			if p.SandboxID == sandboxID {
				return errors.New("still assigned")
			}
		}
		return nil
	})
}

func (d Demo) ctl(ctx context.Context, node *Node, args ...string) error {
	out, err := node.IPAMD.RunCtl(ctx, args...)
	if err != nil {
		return err
	}
	d.say("\n   $ ipamctl %s", strings.Join(args, " "))
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		d.say("   %s", line)
	}
	return nil
}

func (d Demo) step(format string, args ...any) {
	fmt.Fprintln(d.Out)
	d.say(format, args...)
}

func (d Demo) say(format string, args ...any) {
	fmt.Fprintf(d.Out, format+"\n", args...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
