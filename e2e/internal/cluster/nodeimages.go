package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Images the real node's registry serves, built from e2e/internal/cluster/nodeimages: nothing is
// pulled from outside this machine, the sandbox image included.
const (
	// AppImage serves HTTP, exits with a code after a log line, or waits (see nodeimages/app).
	AppImage = "app:1.0"
	// AppImage2 is the same image under a second tag: a new template that differs only in its
	// image (canary --image), its behaviour still set by the arguments.
	AppImage2 = "app:1.1"
	// PauseImage is containerd's sandbox_image.
	PauseImage = "pause:3.10"
)

const nodeImagesPkg = "github.com/stsdiag/stsdiag/e2e/internal/cluster/nodeimages/"

// localRegistry is an in-process OCI registry (go-containerregistry's pkg/registry) on 127.0.0.1.
type localRegistry struct {
	host string // 127.0.0.1:PORT
	srv  *http.Server
}

// startRegistry serves a registry on 127.0.0.1:5000, or on a free port if 5000 is taken.
func startRegistry(logPath string) (*localRegistry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:5000")
	if err != nil {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.Close()
		return nil, err
	}
	r := &localRegistry{host: l.Addr().String(), srv: &http.Server{
		Handler:           registry.New(registry.Logger(log.New(logFile, "", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}}
	r.srv.RegisterOnShutdown(func() { logFile.Close() })
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *localRegistry) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// pushImages builds the static Go programs of nodeimages and pushes each as a one-layer image.
func (r *localRegistry) pushImages(ctx context.Context, workDir string) error {
	images := []struct {
		prog string
		tags []string
	}{{"app", []string{AppImage, AppImage2}}, {"pause", []string{PauseImage}}}
	for _, im := range images {
		bin := filepath.Join(workDir, im.prog)
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, nodeImagesPkg+im.prog)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", im.prog, err, out)
		}
		img, err := singleBinaryImage(bin, "/"+im.prog)
		if err != nil {
			return fmt.Errorf("image %s: %w", im.prog, err)
		}
		for _, tag := range im.tags {
			ref, err := name.NewTag(r.host+"/"+tag, name.Insecure)
			if err != nil {
				return err
			}
			if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
		}
	}
	return nil
}

// singleBinaryImage is an image of one layer holding the binary at path, its entrypoint.
func singleBinaryImage(bin, path string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path[1:], Mode: 0o755, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, errors.New("no config file")
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config = v1.Config{Entrypoint: []string{path}}
	return mutate.ConfigFile(img, cfg)
}
