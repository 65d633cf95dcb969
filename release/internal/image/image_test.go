package image_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stsdiag/stsdiag/release/internal/image"
)

// TestBuild: the image holds exactly the binary at its entrypoint, runs as non-root, and reads
// back from both the OCI layout and the tarball with the same digest; the build is reproducible.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl-stsdiag")
	if err := os.WriteFile(bin, []byte("\x7fELF fake binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := image.Options{Binary: bin, OS: "linux", Arch: "arm64", Tag: image.DefaultRepository + ":v0.3.0", Version: "v0.3.0",
		Revision: "abc", Created: time.Unix(1700000000, 0).UTC()}
	img, err := image.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := image.Build(opts)
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("not reproducible: %s vs %s", d1, d2)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" || len(cfg.Config.Entrypoint) != 1 ||
		cfg.Config.Entrypoint[0] != "/usr/local/bin/kubectl-stsdiag" || cfg.Config.Labels["org.opencontainers.image.version"] != "v0.3.0" {
		t.Errorf("config %+v", cfg)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[h.Name] = string(body)
		if h.Name == "usr/local/bin/kubectl-stsdiag" && (h.Mode != 0o755 || h.Uid != 0) {
			t.Errorf("binary mode %o uid %d", h.Mode, h.Uid)
		}
	}
	if len(files) != 4 || files["usr/local/bin/kubectl-stsdiag"] != "\x7fELF fake binary" {
		t.Errorf("layer files %v", files)
	}

	lay := filepath.Join(dir, "layout")
	if err := image.WriteLayout(lay, img, opts.Tag); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	index, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil || len(manifest.Manifests) != 1 || manifest.Manifests[0].Digest != d1 ||
		manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != opts.Tag {
		t.Fatalf("layout index %+v %v", manifest, err)
	}

	tb := filepath.Join(dir, "image.tar")
	if err := image.WriteTarball(tb, img, opts.Tag); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	lcfg, _ := loaded.ConfigFile()
	if lcfg.Config.Entrypoint[0] != "/usr/local/bin/kubectl-stsdiag" {
		t.Errorf("tarball config %+v", lcfg.Config)
	}
}
