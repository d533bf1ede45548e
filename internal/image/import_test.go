package image_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

var (
	containerd = testenv.SharedContainerd(testenv.ContainerdOptions{})
	docker     = testenv.SharedDocker(testenv.DockerOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, containerd, docker))
}

// smallImage is the pause binary on its own: a real executable, small
// enough to build in every run.
func smallImage(t *testing.T) (img image.Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := testenv.BuildPause(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return image.Spec{
		Entries:    []image.Entry{{Path: "/usr/bin/pause", Mode: 0o755, Content: content}},
		Entrypoint: []string{"/usr/bin/pause"},
	}
}

func writeArchive(t *testing.T, spec image.Spec, ref string, oci bool) (path, digest, configDigest string) {
	t.Helper()
	img, err := image.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	c, _ := img.ConfigName()
	write, name := image.WriteDockerArchive, "docker.tar"
	if oci {
		write, name = image.WriteOCIArchive, "oci.tar"
	}
	path = filepath.Join(t.TempDir(), name)
	if err := image.WriteFile(path, img, ref, write); err != nil {
		t.Fatal(err)
	}
	return path, d.String(), c.String()
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestContainerdImportsOCIArchive: "ctr images import" names the image
// from the index annotations, with the manifest digest Build computed.
func TestContainerdImportsOCIArchive(t *testing.T) {
	c := containerd.Get(t)
	const ref = "localhost/sandboxipam/image-test:oci"
	path, digest, _ := writeArchive(t, smallImage(t), ref, true)
	ctr := []string{"--address", c.Address, "--namespace", c.Namespace}
	output(t, "ctr", append(ctr, "images", "import", path)...)
	t.Cleanup(func() { _ = exec.Command("ctr", append(ctr, "images", "rm", ref)...).Run() })
	got := output(t, "ctr", append(ctr, "images", "ls", "name=="+ref)...)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], digest) {
		t.Fatalf("ctr images ls after import:\n%s\nwant %s with digest %s", got, ref, digest)
	}
}

// TestDockerLoadsDockerArchive: "docker load" gives the image the config
// digest Build computed as its ID, under the tag.
func TestDockerLoadsDockerArchive(t *testing.T) {
	d := docker.Get(t)
	const ref = "localhost/sandboxipam/image-test:docker"
	path, _, configDigest := writeArchive(t, smallImage(t), ref, false)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fixture.LoadImageDocker(ctx, d.Host, f); err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(output(t, "/usr/bin/docker", "-H", d.Host, "image", "inspect", "--format", "{{.ID}}", ref))
	t.Cleanup(func() { _ = exec.Command("/usr/bin/docker", "-H", d.Host, "rmi", ref).Run() })
	if got != configDigest {
		t.Fatalf("docker image ID %s, want the config digest %s", got, configDigest)
	}
}
