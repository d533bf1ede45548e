package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	deploy "github.com/sandboxipam/sandboxipam/deploy/kubernetes"
	"github.com/sandboxipam/sandboxipam/internal/release"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// requireUpgrade skips unless the upgrade tests were asked for (make
// e2e-upgrade): they build the previous release from the repository's
// history and run two clusters, so make e2e-kubernetes leaves them out.
func requireUpgrade(t *testing.T) {
	t.Helper()
	if os.Getenv("SANDBOXIPAM_E2E_UPGRADE") == "" {
		t.Skip("set SANDBOXIPAM_E2E_UPGRADE=1 (make e2e-upgrade) to upgrade and roll back the three-node cluster")
	}
}

// previousTree is the previous release's tree, as internal/release
// keeps it checked out by commit (one path across runs, so that go's build
// cache serves it). A clone without that history skips, and fails under
// CI=true, where the clone must be a full one.
func previousTree(t *testing.T) string {
	t.Helper()
	tree, err := release.Previous.Tree(context.Background(), testsupport.Root(t))
	if errors.Is(err, release.ErrHistoryAbsent) {
		testsupport.SkipOrFail(t, "cannot build the release to upgrade from: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// previousImage is the previous release's image archive, tagged ref,
// built by that tree's own builder (its cmd/mkimage, as its make image
// ran) with this process's Go environment, and cached by commit in
// image/ of the release's cache directory (internal/release.CacheDir,
// beside its tree and binaries): a commit's sources do not change, so a
// second run imports it at once.
func previousImage(t *testing.T, tree, ref string) string {
	t.Helper()
	cache, err := release.Previous.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "image")
	archive := filepath.Join(dir, "sandboxipam-image.oci.tar")
	// The archive names its image: a cache of another name is not this one.
	if got, err := os.ReadFile(filepath.Join(dir, "ref")); err == nil {
		if string(got) != ref {
			t.Fatalf("%s holds the image %s, the previous release's manifests name %s: remove it to rebuild", dir, got, ref)
		}
		t.Logf("previous release %s: image %s cached at %s", release.Previous.Version, ref, archive)
		return archive
	}
	// Built beside and renamed whole: an interrupted build leaves nothing
	// a later run would take for an image, and nothing else of the cache
	// (the tree, the binaries) is touched.
	tmp, err := os.MkdirTemp(cache, ".image.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	began := time.Now()
	cmd := exec.Command("go", "run", "./cmd/mkimage", "--out", tmp, "--ref", ref)
	cmd.Dir = tree
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release's image in %s: %v\n%s", tree, err, tail(out, 4096))
	}
	if err := os.WriteFile(filepath.Join(tmp, "ref"), []byte(ref), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "ref")); statErr != nil {
			t.Fatal(err)
		}
		// Another run built it meanwhile: that one serves.
	}
	t.Logf("previous release %s: image %s built by its own cmd/mkimage in %v, cached at %s",
		release.Previous.Version, ref, time.Since(began).Round(time.Second), archive)
	return archive
}

// releaseManifests are one release's manifests, rendered from its own
// tree, with the test's edits, in the order "kubectl apply" sends them.
type releaseManifests struct {
	version string
	objs    []map[string]any
	// image is the one image every container of the release names.
	image string
}

// The kinds a release's manifests may hold, in the order they are
// applied, and their API resources. Another kind fails the render: the
// test must learn to apply it.
var releaseKinds = []struct{ kind, resource string }{
	{"CustomResourceDefinition", "customresourcedefinitions"},
	{"ValidatingAdmissionPolicy", "validatingadmissionpolicies"},
	{"ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"},
	{"ServiceAccount", "serviceaccounts"},
	{"ClusterRole", "clusterroles"},
	{"ClusterRoleBinding", "clusterrolebindings"},
	{"Role", "roles"},
	{"RoleBinding", "rolebindings"},
	{"ConfigMap", "configmaps"},
	{"DaemonSet", "daemonsets"},
	{"Deployment", "deployments"},
}

// renderRelease renders the containerd overlay of the tree at root with
// the cluster test's components (routes; in pool mode pool and reclaimer
// too), from the tree's files on disk, as "kubectl apply -k" of an
// operator's kustomization naming them would, and makes the edits the
// pool test makes: ipamd's watermarks and return grace, the reclaimer's
// grace and intervals. The images stay as the release names them. The
// admission policies are applied with the rest: the ipamds of both
// releases write their blocks, Leases and Events through them.
func renderRelease(t *testing.T, version, root string, pool bool) releaseManifests {
	t.Helper()
	components := []string{"routes"}
	if pool {
		components = []string{"pool", "reclaimer", "routes"}
	}
	dir := t.TempDir()
	// kustomize takes no absolute path of a kustomization.
	rel := func(elem ...string) string {
		r, err := filepath.Rel(dir, filepath.Join(append([]string{root, "deploy", "kubernetes"}, elem...)...))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel("overlays", "containerd") + "\ncomponents:\n"
	for _, c := range components {
		k += "  - " + rel("components", c) + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("render %s's manifests from %s: %v", version, root, err)
	}
	m := releaseManifests{version: version}
	images := map[string]bool{}
	for _, res := range resources.Resources() {
		kind := res.GetKind()
		if !slices.ContainsFunc(releaseKinds, func(k struct{ kind, resource string }) bool { return k.kind == kind }) {
			t.Fatalf("%s's manifests hold a %s (%s): the upgrade test does not apply that kind", version, kind, res.GetName())
		}
		data, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "DaemonSet":
			data = editAs(t, data, func(ds *appsv1.DaemonSet) {
				spec := &ds.Spec.Template.Spec
				for i := range spec.Containers {
					if spec.Containers[i].Name == "ipamd" && pool {
						spec.Containers[i].Env = append(spec.Containers[i].Env,
							corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_LOWWATERMARK", Value: "4"},
							corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_HIGHWATERMARK", Value: "20"},
							corev1.EnvVar{Name: "IPAMD_IPSOURCE_POOL_RETURNGRACE", Value: "5s"})
					}
				}
				for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
					images[c.Image] = true
				}
			})
		case "Deployment":
			data = editAs(t, data, func(d *appsv1.Deployment) {
				spec := &d.Spec.Template.Spec
				for i := range spec.Containers {
					spec.Containers[i].Args = append(spec.Containers[i].Args,
						"--grace="+reclaimerGrace.String(), "--interval="+reclaimerInterval.String(), "--check-interval=10s")
					images[spec.Containers[i].Image] = true
				}
			})
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		m.objs = append(m.objs, obj)
	}
	if len(images) != 1 {
		t.Fatalf("%s's manifests name %d images (%v), want one", version, len(images), keys(images))
	}
	m.image = keys(images)[0]
	rank := func(o map[string]any) int {
		return slices.IndexFunc(releaseKinds, func(k struct{ kind, resource string }) bool { return k.kind == o["kind"] })
	}
	slices.SortStableFunc(m.objs, func(a, b map[string]any) int { return rank(a) - rank(b) })
	return m
}

// editAs decodes a rendered object into T, edits it and encodes it again
// without what encoding a typed object adds and a manifest never holds
// (status, a null creationTimestamp).
func editAs[T any](t *testing.T, data []byte, edit func(*T)) []byte {
	t.Helper()
	var v T
	if err := deploy.DecodeStrict(data, &v); err != nil {
		t.Fatal(err)
	}
	edit(&v)
	out, err := json.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if out, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	return out
}

// objectPath is the API path of a manifest's object.
func objectPath(obj map[string]any) (string, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	i := slices.IndexFunc(releaseKinds, func(k struct{ kind, resource string }) bool { return k.kind == kind })
	if i < 0 || apiVersion == "" || name == "" {
		return "", fmt.Errorf("no API path for %s %s (%s)", kind, name, apiVersion)
	}
	p := "/apis/" + apiVersion
	if apiVersion == "v1" {
		p = "/api/v1"
	}
	if ns != "" {
		p += "/namespaces/" + ns
	}
	return p + "/" + releaseKinds[i].resource + "/" + name, nil
}

// applyRelease applies every object of m as "kubectl apply
// --server-side --force-conflicts" does: one server-side apply each, in
// order, by one field manager, so that a field a release drops is dropped
// and a field "kubectl rollout undo" changed is taken back.
func (c *cluster) applyRelease(t *testing.T, m releaseManifests, kinds ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applied := 0
	for _, obj := range m.objs {
		if len(kinds) > 0 && !slices.Contains(kinds, obj["kind"].(string)) {
			continue
		}
		p, err := objectPath(obj)
		if err != nil {
			t.Fatal(err)
		}
		q := url.Values{"fieldManager": {"sandboxipam-e2e-upgrade"}, "force": {"true"}}
		if err := c.api.do(ctx, "PATCH", p+"?"+q.Encode(), "application/apply-patch+yaml", obj, nil); err != nil {
			t.Fatalf("apply %s's %s: %v", m.version, p, err)
		}
		applied++
	}
	c.logf(t, "%s's manifests applied (%d objects, image %s)", m.version, applied, m.image)
}

// installRelease installs m on the fresh cluster: in pool mode its CRDs
// first and, once the API server serves them, the IPPool; then the rest.
func (c *cluster) installRelease(t *testing.T, m releaseManifests, pool bool) {
	t.Helper()
	if pool {
		c.applyRelease(t, m, "CustomResourceDefinition")
		testsupport.WaitFor(t, time.Minute, "the API server serves IPPools and IPBlocks", func(ctx context.Context) error {
			var l struct{}
			if err := c.api.get(ctx, "/apis/sandboxipam.io/v1alpha1/ippools", &l); err != nil {
				return err
			}
			return c.api.get(ctx, ipblocksPath, &l)
		})
		p := map[string]any{
			"apiVersion": v1alpha1.Group + "/" + v1alpha1.Version, "kind": v1alpha1.IPPoolKind,
			"metadata": map[string]any{"name": "default"},
			"spec": map[string]any{
				"ipv4": map[string]any{"cidrs": []string{poolCIDRv4}, "blockSize": poolBlockV4},
				"ipv6": map[string]any{"cidrs": []string{poolCIDRv6}, "blockSize": poolBlockV6},
			},
		}
		if err := c.api.create(context.Background(), "/apis/sandboxipam.io/v1alpha1/ippools", p); err != nil {
			t.Fatal(err)
		}
	}
	c.applyRelease(t, m)
}

// kubectl runs kubectl (make conformance-tools builds it) against the
// cluster from the hub, where an operator's client would stand.
func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	argv := append([]string{"--net=" + c.hub, "--", conformanceBinary(t, "kubectl"), "--kubeconfig=" + c.cp.Kubeconfig}, args...)
	cmd := exec.Command("nsenter", argv...)
	// Its discovery cache goes under the test's directory, not $HOME.
	cmd.Env = append(os.Environ(), "HOME="+c.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// importImages imports the archives into every node's runtime and tags
// the image startCluster imported (e2eImageRef) as ref too: the nodes
// then hold this tree's image under the name its manifests give.
func (c *cluster) importImages(t *testing.T, ref string, archives ...string) {
	t.Helper()
	for _, n := range c.nodes {
		ctr := []string{"--address", n.ctrd.Address, "--namespace", n.ctrd.Namespace}
		run(t, "ctr", append(ctr, "images", "tag", "--force", e2eImageRef, ref)...)
		for _, a := range archives {
			run(t, "ctr", append(ctr, "images", "import", a)...)
		}
	}
}
