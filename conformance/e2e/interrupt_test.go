package e2e_test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// TestInterruptCleansUp sends the runner SIGINT while the scale check is
// creating pods, and requires exit status 1, the check reported as
// interrupted, and not one of the run's containers left behind, in its own
// namespace or in kube-system (every fourth scale pod is there, beside
// other runs' pods, told apart by the run's name suffix).
func TestInterruptCleansUp(t *testing.T) {
	t.Parallel()
	d := docker.Get(t)
	namespace := "conformance-interrupt"
	docker, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()

	var stdout bytes.Buffer
	cmd := exec.CommandContext(t.Context(), binary(t, "conformance"), append([]string{"run",
		"--adapter", binary(t, "adapter-docker-minimal"), "--focus", "^scale-listing$", "--scale", "100",
		"--namespace", namespace}, dockerFixtureArgs(d)...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	suffix := runSuffix(t, docker, namespace)
	waitForContainers(t, docker, "kube-system", suffix)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit = %v, want exit status 1\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "SKIP  scale-listing") || !strings.Contains(stdout.String(), "interrupted") {
		t.Errorf("output does not report the interrupted check:\n%s", stdout.String())
	}
	if left := namespaceContainers(t, docker, namespace, ""); len(left) != 0 {
		t.Errorf("%d containers left behind in %s after Ctrl-C: %v", len(left), namespace, left)
	}
	if left := namespaceContainers(t, docker, "kube-system", suffix); len(left) != 0 {
		t.Errorf("%d of the run's containers left behind in kube-system after Ctrl-C: %v", len(left), left)
	}
}

// runSuffix waits for the run's first pod in namespace and returns the
// suffix every pod name of the run ends with ("-" and the run's ID).
func runSuffix(t *testing.T, docker *client.Client, namespace string) string {
	t.Helper()
	waitForContainers(t, docker, namespace, "")
	for _, c := range podContainers(t, docker, namespace) {
		name := c.Labels["io.kubernetes.pod.name"]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			return name[i:]
		}
	}
	t.Fatalf("no pod of namespace %s carries a run suffix", namespace)
	return ""
}

// waitForContainers polls until the run has created a container in
// namespace of a pod whose name ends with suffix; the test's own deadline
// bounds it.
func waitForContainers(t *testing.T, docker *client.Client, namespace, suffix string) {
	t.Helper()
	testsupport.Eventually(t, "the run creating a pod in "+namespace, func() bool {
		return len(namespaceContainers(t, docker, namespace, suffix)) > 0
	})
}

// namespaceContainers returns the IDs of every container, running or not,
// of a pod in namespace whose name ends with suffix.
func namespaceContainers(t *testing.T, docker *client.Client, namespace, suffix string) []string {
	t.Helper()
	var ids []string
	for _, c := range podContainers(t, docker, namespace) {
		if strings.HasSuffix(c.Labels["io.kubernetes.pod.name"], suffix) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// podContainers lists every container, running or not, of a pod in
// namespace.
func podContainers(t *testing.T, docker *client.Client, namespace string) []container.Summary {
	t.Helper()
	list, err := docker.ContainerList(t.Context(), container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", "io.kubernetes.pod.namespace="+namespace)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}
