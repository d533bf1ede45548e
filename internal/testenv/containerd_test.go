package testenv_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/conformance/fixture"
)

func TestContainerdAnswersCRI(t *testing.T) {
	c := containerd.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	version, err := criapi.NewRuntimeServiceClient(conn).Version(ctx, &criapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if version.GetRuntimeName() != "containerd" {
		t.Errorf("runtime name %q, want containerd", version.GetRuntimeName())
	}
	t.Logf("containerd %s, CRI %s", version.GetRuntimeVersion(), version.GetRuntimeApiVersion())
	images, err := criapi.NewImageServiceClient(conn).ListImages(ctx, &criapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, img := range images.GetImages() {
		tags = append(tags, img.GetRepoTags()...)
	}
	if !slices.Equal(tags, []string{fixture.DefaultPauseImage}) || c.PauseImage != fixture.DefaultPauseImage {
		t.Errorf("CRI images %v (PauseImage %s), want exactly %s", tags, c.PauseImage, fixture.DefaultPauseImage)
	}
	for _, path := range []string{c.Address, c.CNIConfDir, c.CNIBinDir, c.NetNSPath} {
		if filepath.Dir(path) != c.Dir && filepath.Dir(filepath.Dir(path)) != c.Dir {
			t.Errorf("%s is not under %s", path, c.Dir)
		}
	}
	if c.Endpoint != "unix://"+c.Address || c.Namespace != "k8s.io" {
		t.Errorf("Endpoint %s Namespace %s", c.Endpoint, c.Namespace)
	}
}
