package image

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultRef is the sandboxipam image's reference. The "localhost/" domain
// keeps runtimes from normalising it to docker.io and so from ever trying
// to pull it; deploy/kubernetes names the same reference.
const DefaultRef = "localhost/sandboxipam/sandboxipam:dev"

// DefaultCABundle is where Debian's ca-certificates package puts the bundle
// that Go's crypto/x509 reads; the aws IP source needs it to reach EC2.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// binary is one command of the image: where its main package is, and
// where it lives inside the image.
type binary struct {
	pkg, path string
}

// projectBinaries lists the image's commands. ipamd finds its adapters in
// the "adapters" directory beside itself; the CNI plugin is kept apart
// because sandboxipam-install copies it to the node, not runs it.
func projectBinaries() []binary {
	return []binary{
		{"./cmd/ipamd", "/usr/bin/ipamd"},
		{"./cmd/ipamctl", "/usr/bin/ipamctl"},
		{"./cmd/sandboxipam-install", "/usr/bin/sandboxipam-install"},
		{"./cmd/sandboxipam-reclaimer", "/usr/bin/sandboxipam-reclaimer"},
		{"./cmd/sandboxipam", CNIPluginPath},
		{"./cmd/adapters/containerd", "/usr/bin/adapters/containerd"},
		{"./cmd/adapters/crio", "/usr/bin/adapters/crio"},
		{"./cmd/adapters/docker", "/usr/bin/adapters/docker"},
		{"./cmd/adapters/dockershim", "/usr/bin/adapters/dockershim"},
	}
}

// CNIPluginPath is the CNI plugin inside the image, the source the init
// container installs into the node's CNI binary directory.
const CNIPluginPath = "/usr/lib/sandboxipam/cni/sandboxipam"

// BuildProjectBinaries compiles every command of the image, static and
// reproducible (CGO_ENABLED=0, -trimpath, no VCS stamp, stripped), from
// the module at moduleRoot into outDir, laid out as in the image.
func BuildProjectBinaries(ctx context.Context, moduleRoot, outDir string) error {
	for _, b := range projectBinaries() {
		out := filepath.Join(outDir, filepath.FromSlash(b.path))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, b.pkg)
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w: %s", b.pkg, err, msg)
		}
	}
	return nil
}

// ProjectSpec lays out the image from binaries built by
// BuildProjectBinaries into binDir, and the CA bundle at caBundle.
func ProjectSpec(binDir, caBundle string) (Spec, error) {
	var entries []Entry
	for _, b := range projectBinaries() {
		content, err := os.ReadFile(filepath.Join(binDir, filepath.FromSlash(b.path)))
		if err != nil {
			return Spec{}, fmt.Errorf("project image: %w", err)
		}
		entries = append(entries, Entry{Path: b.path, Mode: 0o755, Content: content})
	}
	certs, err := os.ReadFile(caBundle)
	if err != nil {
		return Spec{}, fmt.Errorf("project image: CA certificates (Debian: apt-get install ca-certificates): %w", err)
	}
	entries = append(entries,
		Entry{Path: DefaultCABundle, Mode: 0o644, Content: certs},
		// Mount points runtimes expect, and a scratch directory.
		Entry{Path: "/dev", Dir: true, Mode: 0o755},
		Entry{Path: "/proc", Dir: true, Mode: 0o555},
		Entry{Path: "/sys", Dir: true, Mode: 0o555},
		Entry{Path: "/tmp", Dir: true, Mode: 0o1777},
	)
	return Spec{
		Entries:    entries,
		Entrypoint: []string{"/usr/bin/ipamd"},
		Env:        []string{"PATH=/usr/bin", "SSL_CERT_FILE=" + DefaultCABundle},
		Labels: map[string]string{
			"org.opencontainers.image.title":  "sandboxipam",
			"org.opencontainers.image.source": "https://github.com/sandboxipam/sandboxipam",
		},
	}, nil
}

// Archives are the files BuildProjectArchives wrote.
type Archives struct {
	// Digest is the image manifest's digest, the same in both archives.
	Digest string
	// OCI and Docker are the paths of the two archives.
	OCI, Docker string
}

// BuildProjectArchives builds the binaries into binDir, the image from
// them and caBundle, and writes outDir/sandboxipam-image.oci.tar and
// outDir/sandboxipam-image.docker.tar, each tagged ref.
func BuildProjectArchives(ctx context.Context, moduleRoot, binDir, caBundle, ref, outDir string) (Archives, error) {
	if err := BuildProjectBinaries(ctx, moduleRoot, binDir); err != nil {
		return Archives{}, err
	}
	spec, err := ProjectSpec(binDir, caBundle)
	if err != nil {
		return Archives{}, err
	}
	img, err := Build(spec)
	if err != nil {
		return Archives{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Archives{}, fmt.Errorf("project image: digest: %w", err)
	}
	a := Archives{
		Digest: digest.String(),
		OCI:    filepath.Join(outDir, "sandboxipam-image.oci.tar"),
		Docker: filepath.Join(outDir, "sandboxipam-image.docker.tar"),
	}
	if err := WriteFile(a.OCI, img, ref, WriteOCIArchive); err != nil {
		return Archives{}, err
	}
	if err := WriteFile(a.Docker, img, ref, WriteDockerArchive); err != nil {
		return Archives{}, err
	}
	return a, nil
}

// WriteFile writes an archive of img to path through a temporary file, so
// an interrupted build never leaves a truncated archive that an import
// would half-accept.
func WriteFile(path string, img v1.Image, ref string, write func(io.Writer, v1.Image, string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp, img, ref); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
