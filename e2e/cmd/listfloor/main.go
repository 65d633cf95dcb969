// Command listfloor runs only the LISTs of `stsdiag check -A` (gather's resource table), the
// benchmark's floors:
//
//   - decoded: the LISTs decoded into the standard Go types by client-go, as check's clients
//     request them (protobuf for Kubernetes kinds, JSON for ImageStreams, paged by 500 as check
//     does), then dropped (gather.Floor);
//   - raw: the same requests, their bodies read and discarded, not decoded (ImageStream pages
//     only looked at for their continue token).
//
// It prints "listfloor: objects=N bytes=B requests=R" on stderr (objects only when decoded).
//
//	listfloor -mode decoded -openshift
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck/read"
)

const protobuf = "application/vnd.kubernetes.protobuf"

// paths are the LISTs of gather's resource table for all namespaces, as raw requests.
var paths = map[string]string{
	"statefulsets":           "/apis/apps/v1/statefulsets",
	"pods":                   "/api/v1/pods",
	"controllerrevisions":    "/apis/apps/v1/controllerrevisions",
	"persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
	"events":                 "/api/v1/events?fieldSelector=" + url.QueryEscape("type=Warning"),
	"storageclasses":         "/apis/storage.k8s.io/v1/storageclasses",
	"services":               "/api/v1/services",
	"nodes":                  "/api/v1/nodes",
	"namespaces":             "/api/v1/namespaces",
	"imagestreams":           "/apis/image.openshift.io/v1/imagestreams",
}

var requests atomic.Int64

type counting struct{ next http.RoundTripper }

func (t counting) RoundTrip(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	return t.next.RoundTrip(r)
}

func main() {
	mode := flag.String("mode", "decoded", "decoded or raw")
	openShift := flag.Bool("openshift", true, "list the image API's kinds too (namespaces, imagestreams), as check does where the image API is served")
	flag.Parse()
	if err := run(*mode, *openShift); err != nil {
		fmt.Fprintln(os.Stderr, "listfloor:", err)
		os.Exit(1)
	}
}

func run(mode string, openShift bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100 // check's
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return counting{next} })
	ctx := context.Background()
	switch mode {
	case "decoded":
		image, err := imageclient.NewForConfig(rest.CopyConfig(cfg))
		if err != nil {
			return err
		}
		proto := rest.CopyConfig(cfg)
		proto.ContentType = protobuf
		proto.AcceptContentTypes = protobuf + ",application/json"
		kube, err := kubernetes.NewForConfig(proto)
		if err != nil {
			return err
		}
		n, err := gather.Floor(ctx, gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}, openShift)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "listfloor: objects=%d bytes=0 requests=%d\n", n, requests.Load())
	case "raw":
		n, err := raw(ctx, cfg, openShift)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "listfloor: objects=0 bytes=%d requests=%d\n", n, requests.Load())
	default:
		return fmt.Errorf("-mode %q: want decoded or raw", mode)
	}
	return nil
}

// raw reads the bodies of the LISTs in parallel and returns their total size.
func raw(ctx context.Context, cfg *rest.Config, openShift bool) (int64, error) {
	names := gather.FloorResources()
	sort.Strings(names)
	for _, n := range names {
		if paths[n] == "" {
			return 0, fmt.Errorf("gather lists %s, which the raw floor does not know", n)
		}
	}
	if len(names) != len(paths) {
		return 0, fmt.Errorf("the raw floor knows %d kinds, gather lists %d: %v", len(paths), len(names), names)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, err
	}
	var total atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range names {
		if !openShift && (name == "namespaces" || name == "imagestreams") {
			continue
		}
		g.Go(func() error {
			if name == "imagestreams" {
				return pages(gctx, client, cfg.Host+paths[name], &total)
			}
			n, _, err := get(gctx, client, cfg.Host+paths[name], protobuf, false)
			total.Add(n)
			return err
		})
	}
	err = g.Wait()
	return total.Load(), err
}

// pages reads the ImageStreams in pages of 500 as check does (JSON: often a CRD).
func pages(ctx context.Context, client *http.Client, u string, total *atomic.Int64) error {
	cont := ""
	for {
		q := u + "?limit=500"
		if cont != "" {
			q += "&continue=" + url.QueryEscape(cont)
		}
		n, body, err := get(ctx, client, q, "application/json", true)
		total.Add(n)
		if err != nil {
			return err
		}
		var list struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return err
		}
		if cont = list.Metadata.Continue; cont == "" {
			return nil
		}
	}
}

// get reads one response body, discarded unless keep.
func get(ctx context.Context, client *http.Client, u, accept string, keep bool) (int64, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if keep {
		b, err := io.ReadAll(resp.Body)
		return int64(len(b)), b, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return n, nil, err
}
