// Package image assembles the stsdiag container image with go-containerregistry: an empty base,
// one layer with the binary, an OCI manifest and config.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultRepository is the documented name of the image; deploy/watch uses it.
const DefaultRepository = "ghcr.io/stsdiag/stsdiag"

// Path of the binary in the image, the entrypoint.
const Path = "/usr/local/bin/kubectl-stsdiag"

// NonRoot is the user the image runs as (the distroless nonroot user).
const NonRoot = "65532:65532"

// Options describe one image.
type Options struct {
	Binary            string // the static linux binary
	OS, Arch          string
	Tag               string
	Version, Revision string
	Created           time.Time
}

// Build returns the image: the binary at Path, entrypoint Path, user NonRoot.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := layerOf(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: o.Created},
		CreatedBy: "stsdiag release/ociimage: COPY kubectl-stsdiag " + Path}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = o.OS, o.Arch, v1.Time{Time: o.Created}
	cfg.Config = v1.Config{
		Entrypoint: []string{Path},
		User:       NonRoot,
		Env:        []string{"PATH=/usr/local/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "stsdiag",
			"org.opencontainers.image.source":   "https://github.com/stsdiag/stsdiag",
			"org.opencontainers.image.version":  o.Version,
			"org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// layerOf is a tar of the binary under usr/local/bin, root-owned, with fixed times.
func layerOf(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: Path[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes (or adds to) an OCI image layout directory, the image annotated with its name.
func WriteLayout(dir string, img v1.Image, tag string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return err
		}
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
}

// WriteTarball writes an image tarball that docker load and podman load read.
func WriteTarball(path string, img v1.Image, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(path, ref, img)
}
