package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// TestDockerStartsPrivately checks the shared dockerd: it answers on its
// own socket, has the pause image, runs a container in its own cgroup
// parent, and keeps its state under Dir.
func TestDockerStartsPrivately(t *testing.T) {
	d := docker.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	images, err := cli.ImageList(ctx, image.ListOptions{})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	if len(images) != 1 || !slices.Equal(images[0].RepoTags, []string{fixture.DefaultPauseImage}) {
		t.Fatalf("images = %+v, want exactly %s", images, fixture.DefaultPauseImage)
	}
	if got := filepath.Dir(d.Socket); got != d.Dir {
		t.Errorf("socket %s is not under %s", d.Socket, d.Dir)
	}
	info, err := cli.Info(ctx)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.DockerRootDir != filepath.Join(d.Dir, "data") {
		t.Errorf("DockerRootDir = %s, want %s", info.DockerRootDir, filepath.Join(d.Dir, "data"))
	}
	assertContainerInCgroupParent(ctx, t, cli, d)
}

func assertContainerInCgroupParent(ctx context.Context, t *testing.T, cli *client.Client, d *testenv.Docker) {
	t.Helper()
	f, err := fixture.NewDocker(ctx, fixture.DockerConfig{Host: d.Host})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer func() {
		if err := f.Cleanup(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}()
	id, err := f.CreatePlainContainer(ctx, "testenv-plain")
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !inspect.State.Running {
		t.Fatalf("container %s not running: %+v", id, inspect.State)
	}
	procs := filepath.Join("/sys/fs/cgroup/pids", d.CgroupParent, id, "cgroup.procs")
	data, err := os.ReadFile(procs)
	if err != nil {
		t.Fatalf("container cgroup: %v", err)
	}
	if pids := strings.Fields(string(data)); len(pids) != 1 || pids[0] != strconv.Itoa(inspect.State.Pid) {
		t.Errorf("%s holds %v, want the pause process %d", procs, pids, inspect.State.Pid)
	}
	if err := f.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, id); err == nil {
		t.Errorf("container %s still exists after Cleanup", id)
	}
}
