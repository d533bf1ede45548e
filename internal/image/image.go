package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrInvalidSpec: a Spec that cannot become an image; the message names
// the field.
var ErrInvalidSpec = errors.New("invalid image spec")

// Epoch is the modification time of every file and the creation time of
// every image this package builds, so that no byte depends on the clock.
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Entry is one file or directory in the image's layer.
type Entry struct {
	// Path is absolute inside the image, e.g. "/usr/bin/ipamd".
	Path string
	// Mode holds the permission bits (and sticky bit), e.g. 0o755.
	Mode int64
	// Dir makes the entry a directory; Content must then be empty.
	Dir bool
	// Content is a regular file's bytes.
	Content []byte
	// Link makes the entry a symbolic link to Link (Content must then be
	// empty): a multi-call binary's names cost one copy of it.
	Link string
}

// Spec describes a one-layer image on an empty base.
type Spec struct {
	// Entries are the layer's files and directories. Parent directories
	// that are not listed are added with mode 0755.
	Entries []Entry
	// Entrypoint and Cmd as in the OCI image config.
	Entrypoint, Cmd []string
	// Env as KEY=value; empty means PATH only.
	Env []string
	// Labels of the image config.
	Labels map[string]string
}

// Build returns the image Spec describes: OCI media types, gzip layer,
// linux on this machine's architecture.
func Build(spec Spec) (v1.Image, error) {
	layerTar, err := layerBytes(spec.Entries)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("build image: layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "sandboxipam internal/image"},
	})
	if err != nil {
		return nil, fmt.Errorf("build image: append layer: %w", err)
	}
	return configure(img, spec)
}

func configure(img v1.Image, spec Spec) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build image: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = runtime.GOARCH
	cf.OS = "linux"
	cf.Created = v1.Time{Time: Epoch}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = spec.Cmd
	cf.Config.Env = spec.Env
	if len(cf.Config.Env) == 0 {
		cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	}
	cf.Config.Labels = spec.Labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("build image: config: %w", err)
	}
	return img, nil
}

// layerBytes writes the layer tar: entries sorted by path, implied parent
// directories added, every header's owner, time and format fixed.
func layerBytes(entries []Entry) ([]byte, error) {
	byPath := map[string]Entry{}
	for i, e := range entries {
		clean := path.Clean(e.Path)
		if !strings.HasPrefix(e.Path, "/") || clean == "/" {
			return nil, fmt.Errorf("%w: entries[%d].path %q must be an absolute path below /", ErrInvalidSpec, i, e.Path)
		}
		if e.Dir && len(e.Content) > 0 {
			return nil, fmt.Errorf("%w: entries[%d] %q is a directory with content", ErrInvalidSpec, i, e.Path)
		}
		if e.Link != "" && (e.Dir || len(e.Content) > 0) {
			return nil, fmt.Errorf("%w: entries[%d] %q is a link with content", ErrInvalidSpec, i, e.Path)
		}
		if _, dup := byPath[clean]; dup {
			return nil, fmt.Errorf("%w: entries[%d].path %q appears twice", ErrInvalidSpec, i, e.Path)
		}
		e.Path = clean
		byPath[clean] = e
	}
	for p := range byPath {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if parent, ok := byPath[d]; ok && !parent.Dir {
				return nil, fmt.Errorf("%w: %q is a file but %q is below it", ErrInvalidSpec, d, p)
			}
			if _, ok := byPath[d]; !ok {
				byPath[d] = Entry{Path: d, Dir: true, Mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := writeEntry(tw, byPath[p]); err != nil {
			return nil, fmt.Errorf("build image: layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build image: layer: %w", err)
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e Entry) error {
	h := &tar.Header{
		Name:     strings.TrimPrefix(e.Path, "/"),
		Mode:     e.Mode,
		ModTime:  Epoch,
		Typeflag: tar.TypeReg,
		Size:     int64(len(e.Content)),
		// USTAR with no PAX records: nothing machine-dependent.
		Format: tar.FormatUSTAR,
	}
	if e.Dir {
		h.Name += "/"
		h.Typeflag = tar.TypeDir
	}
	if e.Link != "" {
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	if _, err := tw.Write(e.Content); err != nil {
		return fmt.Errorf("%s: %w", e.Path, err)
	}
	return nil
}
