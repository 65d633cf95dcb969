// Command ociimage builds the container image of `stsdiag watch` without a container engine and
// without network: one layer holding the static kubectl-stsdiag binary on an empty base (no
// shell, no libc: the binary is built with CGO_ENABLED=0), written as an OCI image layout
// directory and as an image tarball that `docker load` / `podman load` read. Push it with e.g.
// `skopeo copy oci:bin/image docker://ghcr.io/stsdiag/stsdiag:v0.3.0` or `crane push`.
//
//	cd release && go run ./ociimage -binary ../bin/linux_amd64/kubectl-stsdiag -platform linux/amd64 \
//	    -tag ghcr.io/stsdiag/stsdiag:v0.3.0 -layout ../bin/image -tarball ../bin/image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stsdiag/stsdiag/release/internal/image"
)

func main() {
	var opts image.Options
	var platform, created string
	flag.StringVar(&opts.Binary, "binary", "", "the static linux kubectl-stsdiag binary")
	flag.StringVar(&platform, "platform", "linux/amd64", "os/arch of the binary")
	flag.StringVar(&opts.Tag, "tag", image.DefaultRepository+":dev", "the image's name")
	flag.StringVar(&opts.Version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&opts.Revision, "revision", "", "org.opencontainers.image.revision (git commit)")
	flag.StringVar(&created, "created", "", "creation time, RFC 3339 (default: $SOURCE_DATE_EPOCH, else the Unix epoch, for reproducible images)")
	layout := flag.String("layout", "", "write an OCI image layout to this directory")
	tarball := flag.String("tarball", "", "write an image tarball (docker load) to this file")
	flag.Parse()
	var ok bool
	if opts.OS, opts.Arch, ok = strings.Cut(platform, "/"); !ok {
		fail(fmt.Errorf("-platform %q: want os/arch", platform))
	}
	var err error
	if opts.Created, err = creationTime(created); err != nil {
		fail(err)
	}
	if opts.Binary == "" || (*layout == "" && *tarball == "") {
		fail(fmt.Errorf("-binary and at least one of -layout and -tarball are required"))
	}
	img, err := image.Build(opts)
	if err != nil {
		fail(err)
	}
	if *layout != "" {
		if err := image.WriteLayout(*layout, img, opts.Tag); err != nil {
			fail(err)
		}
	}
	if *tarball != "" {
		if err := image.WriteTarball(*tarball, img, opts.Tag); err != nil {
			fail(err)
		}
	}
	digest, err := img.Digest()
	if err != nil {
		fail(err)
	}
	fmt.Printf("%s %s (%s/%s)\n", opts.Tag, digest, opts.OS, opts.Arch)
}

func creationTime(s string) (time.Time, error) {
	if s != "" {
		return time.Parse(time.RFC3339, s)
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		var secs int64
		if _, err := fmt.Sscan(epoch, &secs); err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ociimage:", err)
	os.Exit(2)
}
