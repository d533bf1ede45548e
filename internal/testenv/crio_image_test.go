package testenv_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// An image loaded from a docker-save archive is in CRI-O's store at once,
// under the ref it was loaded as, as an operator's image on a node
// without a registry (the standalone kubelet test loads the project's).
func TestCRIOLoadImage(t *testing.T) {
	testenv.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := shortDir(t, "sbxipam-img-crio-")
	c, err := testenv.StartCRIO(ctx, testenv.CRIOOptions{Dir: dir})
	if errors.Is(err, testenv.ErrUnavailable) {
		testsupport.SkipOrFail(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	const ref = "localhost/sandboxipam/loaded:test"
	archive, err := testenv.BuildPauseImage(ctx, shortDir(t, "sbxipam-img-"), ref)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	images := criapi.NewImageServiceClient(conn)
	status := func() *criapi.Image {
		st, err := images.ImageStatus(ctx, &criapi.ImageStatusRequest{Image: &criapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatalf("ImageStatus %s: %v", ref, err)
		}
		return st.GetImage()
	}
	if img := status(); img != nil {
		t.Fatalf("%s is in the store before it was loaded: %v", ref, img)
	}
	if err := c.LoadImage(ctx, archive, ref); err != nil {
		t.Fatal(err)
	}
	// The same content as the pause image: one image, both tags.
	if img := status(); img == nil || !slices.Contains(img.RepoTags, ref) {
		t.Fatalf("ImageStatus after LoadImage = %v; want it tagged %s", img, ref)
	}
}
