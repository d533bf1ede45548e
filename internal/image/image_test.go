package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func testSpec() Spec {
	return Spec{
		Entries: []Entry{
			{Path: "/usr/bin/tool", Mode: 0o755, Content: []byte("#!binary")},
			{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Content: []byte("certs")},
			{Path: "/tmp", Dir: true, Mode: 0o1777},
			{Path: "/usr/bin/alias", Mode: 0o777, Link: "tool"},
		},
		Entrypoint: []string{"/usr/bin/tool"},
		Labels:     map[string]string{"a": "b"},
	}
}

func digestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestBuildIsReproducible(t *testing.T) {
	a, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	// Same entries in another order: same image.
	spec := testSpec()
	spec.Entries[0], spec.Entries[2] = spec.Entries[2], spec.Entries[0]
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(t, a) != digestOf(t, b) {
		t.Fatalf("same inputs, digests %s and %s", digestOf(t, a), digestOf(t, b))
	}
	// One byte more: another image.
	spec.Entries[1].Content = []byte("certs!")
	c, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(t, a) == digestOf(t, c) {
		t.Fatal("different content, same digest")
	}
	var ociA, ociB, dockA, dockB bytes.Buffer
	for _, w := range []struct {
		buf   *bytes.Buffer
		img   v1.Image
		write func(io.Writer, v1.Image, string) error
	}{{&ociA, a, WriteOCIArchive}, {&ociB, b, WriteOCIArchive}, {&dockA, a, WriteDockerArchive}, {&dockB, b, WriteDockerArchive}} {
		if err := w.write(w.buf, w.img, "localhost/x/y:t"); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(ociA.Bytes(), ociB.Bytes()) {
		t.Fatal("OCI archives of the same inputs differ")
	}
	if !bytes.Equal(dockA.Bytes(), dockB.Bytes()) {
		t.Fatal("docker archives of the same inputs differ")
	}
}

func TestBuildConfigAndLayer(t *testing.T) {
	img, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/bin/tool" {
		t.Errorf("entrypoint %q", got)
	}
	if !cf.Created.Time.Equal(Epoch) || cf.OS != "linux" || cf.Config.Labels["a"] != "b" {
		t.Errorf("config created %v os %q labels %v", cf.Created, cf.OS, cf.Config.Labels)
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(onlyLayer(t, img)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: owner %d:%d time %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		line := fmt.Sprintf("%s %o", h.Name, h.Mode)
		if h.Typeflag == tar.TypeSymlink {
			line += " -> " + h.Linkname
		}
		got = append(got, line)
	}
	want := []string{
		"etc/ 755", "etc/ssl/ 755", "etc/ssl/certs/ 755", "etc/ssl/certs/ca-certificates.crt 644",
		"tmp/ 1777", "usr/ 755", "usr/bin/ 755", "usr/bin/alias 777 -> tool", "usr/bin/tool 755",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("layer entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildRejectsBadSpec(t *testing.T) {
	cases := map[string][]Entry{
		"relative path":     {{Path: "usr/bin/x", Mode: 0o755}},
		"root":              {{Path: "/", Dir: true}},
		"duplicate":         {{Path: "/a"}, {Path: "/a/"}},
		"directory content": {{Path: "/d", Dir: true, Content: []byte("x")}},
		"file under file":   {{Path: "/a"}, {Path: "/a/b"}},
		"link with content": {{Path: "/l", Link: "x", Content: []byte("x")}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Build(Spec{Entries: entries}); !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err = %v, want ErrInvalidSpec", err)
			}
		})
	}
}

func TestArchivesRejectBadReference(t *testing.T) {
	img, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"", "UPPER/case:x", "localhost/x@sha256:abc"} {
		if err := WriteOCIArchive(io.Discard, img, ref); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("OCI %q: err = %v", ref, err)
		}
		if err := WriteDockerArchive(io.Discard, img, ref); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("docker %q: err = %v", ref, err)
		}
	}
}

// onlyLayer returns the uncompressed tar of img's one layer.
func onlyLayer(t *testing.T, img v1.Image) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// readTar returns the archive's regular files by name.
func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			content, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = content
		}
	}
}

func TestOCIArchiveLayout(t *testing.T) {
	img, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteOCIArchive(&buf, img, "localhost/sandboxipam/x:v1"); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, buf.Bytes())
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index has %d manifests", len(index.Manifests))
	}
	desc := index.Manifests[0]
	if desc.Digest.String() != digestOf(t, img) {
		t.Errorf("index names %s, image is %s", desc.Digest, digestOf(t, img))
	}
	if desc.Annotations["io.containerd.image.name"] != "localhost/sandboxipam/x:v1" || desc.Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("annotations %v", desc.Annotations)
	}
	// Every blob the manifest names is present, under its digest.
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]v1.Descriptor{m.Config, desc}, m.Layers...) {
		blob, ok := files["blobs/sha256/"+d.Digest.Hex]
		if !ok || int64(len(blob)) != d.Size {
			t.Errorf("blob %s: present %v, %d bytes, want %d", d.Digest, ok, len(blob), d.Size)
		}
	}
	if len(files) != 5 {
		t.Errorf("archive holds %d files, want oci-layout, index.json and 3 blobs", len(files))
	}
}

func TestDockerArchiveLoadsBack(t *testing.T) {
	img, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteDockerArchive(&buf, img, "localhost/sandboxipam/x:v1"); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	back, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, _ := img.ConfigName()
	gotCfg, err := back.ConfigName()
	if err != nil || gotCfg != wantCfg {
		t.Fatalf("config %s (%v), want %s", gotCfg, err, wantCfg)
	}
	var manifest []struct{ RepoTags []string }
	if err := json.Unmarshal(readTar(t, b)["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != "localhost/sandboxipam/x:v1" {
		t.Fatalf("manifest.json %+v", manifest)
	}
}
