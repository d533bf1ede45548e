package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The images of the conformance suite, never pulled: each node imports
// them. agnhostRef is exactly the name the v1.37.2 framework's image
// manifest (test/utils/image/manifest.go) gives, so that its pods find it;
// CoreDNS is ours to name, under "localhost/" as the project's image.
// upstreamPauseRef is the pause image the manifest names, which the
// service latency test runs as a Deployment's container: the project's
// pause (cmd/pause, as testenv builds it for the sandboxes) under that name.
const (
	agnhostRef       = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
	upstreamPauseRef = "registry.k8s.io/pause:3.10.2"
	corednsRef       = "localhost/sandboxipam/coredns:v1.15.0"
)

// conformanceArchives are the archives every node imports.
type conformanceArchives struct{ agnhost, coredns, glibcDNS, pause string }

// buildConformanceImages builds agnhost's and CoreDNS's images into dir
// with internal/image, as the project's own image is built.
func buildConformanceImages(t *testing.T, dir string) conformanceArchives {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := agnhostSpec(conformanceBinary(t, "agnhost"))
	if err != nil {
		t.Fatal(err)
	}
	out := conformanceArchives{agnhost: filepath.Join(dir, "agnhost.oci.tar"), coredns: filepath.Join(dir, "coredns.oci.tar"),
		glibcDNS: filepath.Join(dir, "glibc-dns-testing.oci.tar")}
	writeImage(t, spec, agnhostRef, out.agnhost)
	glibc, err := glibcDNSSpec()
	if err != nil {
		t.Fatal(err)
	}
	writeImage(t, glibc, glibcDNSRef, out.glibcDNS)
	coredns, err := os.ReadFile(corednsBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	writeImage(t, image.Spec{
		Entries:    []image.Entry{{Path: "/coredns", Mode: 0o755, Content: coredns}},
		Entrypoint: []string{"/coredns"},
	}, corednsRef, out.coredns)
	return out
}

func writeImage(t *testing.T, spec image.Spec, ref, path string) {
	t.Helper()
	img, err := image.Build(spec)
	if err != nil {
		t.Fatalf("image %s: %v", ref, err)
	}
	if err := image.WriteFile(path, img, ref, image.WriteOCIArchive); err != nil {
		t.Fatalf("image %s: %v", ref, err)
	}
}

// conformanceBinary is one of the binaries tools/kubernetes/build.sh
// caches for the conformance suite (agnhost, e2e.test, kube-proxy,
// kubectl, busybox, netcat).
func conformanceBinary(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(cacheDir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: build it with make conformance-tools (tools/kubernetes/build.sh %s)", err, name)
	}
	return p
}

// corednsBinary is the CoreDNS tools/coredns/build.sh caches.
func corednsBinary(t *testing.T) string {
	t.Helper()
	out, err := runCtx(context.Background(), filepath.Join(testsupport.Root(t), "tools", "coredns", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(strings.TrimSpace(out), "coredns")
}

// agnhostSpec lays out agnhost's image as its Dockerfile does (the binary
// at /, agnhost-2 beside it, porter's certificate, /uploads), with the
// tools the tests run in its containers: the upstream image takes them
// from Alpine (busybox's sh and applets, OpenBSD's nc, curl, bind-tools'
// dig); here they are Debian's (busybox-static and netcat-openbsd as
// tools/kubernetes unpacks them, the host's curl, dash, dig and getent; the
// DNS tests' musl prober runs dig and getent in it), each with the shared
// libraries it loads.
// /bin/sh is dash, not busybox: Debian's static busybox shell runs its own
// applets before PATH, and its nc has no -u, -t or -v.
func agnhostSpec(agnhost string) (image.Spec, error) {
	cache := cacheDir()
	entries := []image.Entry{{Path: "/agnhost-2", Mode: 0o777, Link: "agnhost"},
		{Path: "/uploads", Dir: true, Mode: 0o755}, {Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home:/bin/sh\n")},
		{Path: "/etc/group", Mode: 0o644, Content: []byte("root:x:0:root\ngroup-defined-in-image:x:50000:user-defined-in-image\n")}}
	files := map[string]string{"/agnhost": agnhost, "/bin/busybox": filepath.Join(cache, "busybox"),
		"/usr/bin/nc": filepath.Join(cache, "netcat"), "/usr/bin/curl": "/usr/bin/curl", "/bin/sh": "/bin/dash",
		"/usr/bin/dig": "/usr/bin/dig", "/usr/bin/getent": "/usr/bin/getent"}
	porter, err := agnhostSource("porter")
	if err != nil {
		return image.Spec{}, err
	}
	files["/localhost.crt"], files["/localhost.key"] = filepath.Join(porter, "localhost.crt"), filepath.Join(porter, "localhost.key")
	for _, bin := range []string{"/usr/bin/nc", "/usr/bin/curl", "/bin/sh", "/usr/bin/dig", "/usr/bin/getent"} {
		libs, err := sharedLibraries(files[bin])
		if err != nil {
			return image.Spec{}, err
		}
		for _, l := range libs {
			files[l] = l
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b, err := os.ReadFile(files[p])
		if err != nil {
			return image.Spec{}, fmt.Errorf("agnhost image: %w", err)
		}
		entries = append(entries, image.Entry{Path: p, Mode: 0o755, Content: b})
	}
	applets, err := busyboxApplets(files["/bin/busybox"])
	if err != nil {
		return image.Spec{}, err
	}
	for _, a := range applets {
		entries = append(entries, image.Entry{Path: "/bin/" + a, Mode: 0o777, Link: "busybox"})
	}
	return image.Spec{Entries: entries, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}}, nil
}

// agnhostSource is a directory of test/images/agnhost in the module
// tools/kubernetes pins.
func agnhostSource(sub string) (string, error) {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(root, "tools", "kubernetes")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find k8s.io/kubernetes: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "test", "images", "agnhost", sub), nil
}

// lddLine matches a library ldd resolved ("libc.so.6 => /lib/.../libc.so.6
// (0x...)") or the dynamic loader ("/lib64/ld-linux-x86-64.so.2 (0x...)").
var lddLine = regexp.MustCompile(`^\s*(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)$`)

// sharedLibraries are the files ldd says bin loads, by the paths it loads
// them from.
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		if m := lddLine.FindStringSubmatch(line); m != nil {
			libs = append(libs, m[1])
		}
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd %s: no library: %s", bin, out)
	}
	return libs, nil
}

// busyboxApplets are the names busybox answers to, but nc and sh: the
// image's are OpenBSD's nc and dash (agnhostSpec).
func busyboxApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	return slices.DeleteFunc(strings.Fields(string(out)), func(a string) bool {
		return a == "nc" || a == "sh" || a == "busybox"
	}), nil
}

// importConformanceImages imports the archives into node n's runtime, as
// startNode imports the project's image.
func (n *clusterNode) importConformanceImages(t *testing.T, a conformanceArchives) {
	t.Helper()
	for _, archive := range []string{a.agnhost, a.coredns, a.glibcDNS, a.pause} {
		run(t, "ctr", "--address", n.ctrd.Address, "--namespace", n.ctrd.Namespace, "images", "import", archive)
	}
}
