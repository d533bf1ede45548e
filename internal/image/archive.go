package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations containerd's importer reads to name an image from an OCI
// archive: its own full name first, else the OCI ref name.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// parseTag accepts a reference with a tag (no digest): both archive
// formats name images by tag. Strict, so "docker.io" is never implied
// silently for a mistyped domain.
func parseTag(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("%w: reference %q: %w", ErrInvalidSpec, ref, err)
	}
	return tag, nil
}

// WriteDockerArchive writes img tagged ref in the docker-save format
// (manifest.json, config, layers), which "docker load" and
// "ctr images import" accept.
func WriteDockerArchive(w io.Writer, img v1.Image, ref string) error {
	tag, err := parseTag(ref)
	if err != nil {
		return err
	}
	if err := tarball.Write(tag, img, w); err != nil {
		return fmt.Errorf("write docker archive: %w", err)
	}
	return nil
}

// WriteOCIArchive writes img tagged ref as a tar of an OCI image layout
// (oci-layout, index.json, blobs/sha256/...), which "ctr images import"
// accepts. The index names the image with both annotations containerd
// reads, so no --base-name is needed.
func WriteOCIArchive(w io.Writer, img v1.Image, ref string) error {
	tag, err := parseTag(ref)
	if err != nil {
		return err
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Annotations: map[string]string{
			annotationContainerdName: tag.Name(),
			annotationRefName:        tag.TagStr(),
		}}})
	files, err := layoutFiles(idx, img)
	if err != nil {
		return fmt.Errorf("write OCI archive: %w", err)
	}
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := writeLayoutFile(tw, f); err != nil {
			return fmt.Errorf("write OCI archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write OCI archive: %w", err)
	}
	return nil
}

// layoutFile is one entry of the OCI layout tar; open streams a blob so
// that a large layer is never held twice in memory.
type layoutFile struct {
	name string
	size int64
	open func() (io.ReadCloser, error)
	dir  bool
}

func bytesFile(name string, b []byte) layoutFile {
	return layoutFile{name: name, size: int64(len(b)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}}
}

// layoutFiles lists the layout in a fixed order: oci-layout, index.json,
// then the blobs (manifest, config, layers).
func layoutFiles(idx v1.ImageIndex, img v1.Image) ([]layoutFile, error) {
	layoutJSON, err := json.Marshal(map[string]string{"imageLayoutVersion": "1.0.0"})
	if err != nil {
		return nil, err
	}
	indexJSON, err := idx.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("manifest digest: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("config digest: %w", err)
	}
	files := []layoutFile{
		bytesFile("oci-layout", layoutJSON),
		bytesFile("index.json", indexJSON),
		{name: "blobs/", dir: true},
		{name: "blobs/sha256/", dir: true},
		bytesFile(blobName(manifestDigest), manifest),
		bytesFile(blobName(configDigest), config),
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("layer digest: %w", err)
		}
		size, err := l.Size()
		if err != nil {
			return nil, fmt.Errorf("layer size: %w", err)
		}
		files = append(files, layoutFile{name: blobName(digest), size: size, open: l.Compressed})
	}
	return files, nil
}

func blobName(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

func writeLayoutFile(tw *tar.Writer, f layoutFile) error {
	h := &tar.Header{Name: f.name, Mode: 0o644, ModTime: Epoch, Typeflag: tar.TypeReg, Size: f.size, Format: tar.FormatUSTAR}
	if f.dir {
		h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if f.dir {
		return nil
	}
	r, err := f.open()
	if err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	defer r.Close()
	if _, err := io.Copy(tw, r); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}
