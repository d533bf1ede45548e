package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sandboxipam/sandboxipam/internal/version"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// DefaultRef is the sandboxipam image's reference, tagged with the release
// this tree becomes (version.Release: an image tag cannot hold a commit's
// "+"). The "localhost/" domain keeps runtimes from normalising it to
// docker.io and so from ever trying to pull it; deploy/kubernetes names the
// same reference (internal/release's tests keep the three equal).
const DefaultRef = "localhost/sandboxipam/sandboxipam:" + version.Release

// DefaultCABundle is where Debian's ca-certificates package puts the bundle
// that Go's crypto/x509 reads; the aws IP source needs it to reach EC2.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// binary is one command of the image: where its main package is, and
// where it lives inside the image. module, when set, is the directory
// (relative to the module root) of the pinned tools module the package
// is built from, and versionVar the variable its version is linked into,
// as the package's own project stamps it.
type binary struct {
	pkg, path          string
	module, versionVar string
}

// projectBinaries lists the image's commands. ipamd finds its adapters in
// the "adapters" directory beside itself, one for each row of ipamd's
// adapter table; the CNI plugin is kept apart because
// sandboxipam-install copies it to the node, not runs it.
func projectBinaries() []binary {
	bins := []binary{
		{pkg: "./cmd/ipamd", path: "/usr/bin/ipamd"},
		{pkg: "./cmd/ipamctl", path: "/usr/bin/ipamctl"},
		{pkg: "./cmd/sandboxipam-install", path: "/usr/bin/sandboxipam-install"},
		{pkg: "./cmd/sandboxipam-reclaimer", path: "/usr/bin/sandboxipam-reclaimer"},
		{pkg: "./cmd/sandboxipam", path: CNIPluginPath},
		// Chained after sandboxipam in the conflist ipamd writes
		// (cni.portMap), for hostPorts; installed beside it.
		{pkg: "github.com/containernetworking/plugins/plugins/meta/portmap", path: PortMapPath,
			module: "tools/cni-plugins", versionVar: "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion"},
	}
	for _, a := range config.Adapters() {
		bins = append(bins, binary{pkg: "./" + a.Cmd, path: AdapterDir + "/" + a.Binary})
	}
	return bins
}

// AdapterDir is the directory of the adapters' binaries inside the image:
// "adapters" beside /usr/bin/ipamd, where ipamd looks by default.
const AdapterDir = "/usr/bin/adapters"

// CNIPluginPath is the CNI plugin inside the image, the source the init
// container installs into the node's CNI binary directory.
const CNIPluginPath = "/usr/lib/sandboxipam/cni/sandboxipam"

// PortMapPath is the CNI reference portmap plugin inside the image,
// installed beside CNIPluginPath (sandboxipam-install keeps a different
// portmap the node already has).
const PortMapPath = "/usr/lib/sandboxipam/cni/portmap"

// BuildProjectBinaries compiles every command of the image, static and
// reproducible (CGO_ENABLED=0, -trimpath, no VCS stamp, stripped), from
// the module at moduleRoot into outDir, laid out as in the image.
func BuildProjectBinaries(ctx context.Context, moduleRoot, outDir string) error {
	for _, b := range projectBinaries() {
		if err := buildBinary(ctx, moduleRoot, outDir, b); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
	}
	return nil
}

// BuildPortMap builds the image's portmap plugin alone, as
// BuildProjectBinaries builds it, into outDir laid out as in the image,
// and returns its path: for tests that map hostPorts through it.
func BuildPortMap(ctx context.Context, moduleRoot, outDir string) (string, error) {
	for _, b := range projectBinaries() {
		if b.path == PortMapPath {
			if err := buildBinary(ctx, moduleRoot, outDir, b); err != nil {
				return "", fmt.Errorf("build %s: %w", b.pkg, err)
			}
			return filepath.Join(outDir, filepath.FromSlash(b.path)), nil
		}
	}
	return "", fmt.Errorf("the image has no binary at %s", PortMapPath)
}

func buildBinary(ctx context.Context, moduleRoot, outDir string, b binary) error {
	out := filepath.Join(outDir, filepath.FromSlash(b.path))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	dir := filepath.Join(moduleRoot, filepath.FromSlash(b.module))
	ldflags := "-s -w"
	if b.versionVar != "" {
		version, err := goOutput(ctx, dir, "list", "-f", "{{.Module.Version}}", b.pkg)
		if err != nil {
			return err
		}
		ldflags += " -X " + b.versionVar + "=" + version
	}
	_, err := goOutput(ctx, dir, "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", out, b.pkg)
	return err
}

// goOutput runs the go command in dir, static (CGO_ENABLED=0), and
// returns its trimmed standard output.
func goOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
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
