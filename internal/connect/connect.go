// Package connect builds the API clients a command works with: those of the kubeconfig's
// context, with the command's request profile (each request's timeout, client-go's client-side
// rate limit), and each member's of a fleet (fleet.go). Kubernetes types are read as protobuf
// and decoded slim (slimpb); ImageStreams, often a CRD off OpenShift, as JSON.
package connect

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Clients are the API clients of one cluster, as the use cases take them.
type Clients = gather.Clients

// DefaultRequestTimeout bounds each request of the one-shot commands; wait and watch hold
// watches open and use none.
const DefaultRequestTimeout = 30 * time.Second

// Profile is how a command uses the API: each request's timeout (0: none; --request-timeout
// wins), client-go's client-side rate limit, and the User-Agent it sends.
type Profile struct {
	Timeout   time.Duration
	QPS       float32
	Burst     int
	UserAgent string
}

// New builds the API clients of the kubeconfig flags' context.
func New(flags *genericclioptions.ConfigFlags, p Profile) (Clients, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return Clients{}, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ForConfig(config, p)
}

// ForConfig builds the API clients of a rest.Config (a kubeconfig context's, a ClusterProfile's).
func ForConfig(config *rest.Config, p Profile) (Clients, error) {
	config = rest.CopyConfig(config)
	if config.Timeout == 0 {
		config.Timeout = p.Timeout
	}
	config.QPS, config.Burst = p.QPS, p.Burst
	config.UserAgent = p.UserAgent
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		config.Wrap(countRequests)
	}
	image, err := imageclient.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return Clients{}, err
	}
	protoConfig := rest.CopyConfig(config)
	protoConfig.ContentType = "application/vnd.kubernetes.protobuf"
	protoConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(protoConfig)
	if err != nil {
		return Clients{}, err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return Clients{}, err
	}
	// Gathering's LISTs and WATCHes decode only what diagnosis reads; repairs write through kube.
	slim, err := slimpb.NewClientset(protoConfig, kube)
	if err != nil {
		return Clients{}, err
	}
	// What only ownership matters of (check -A's ControllerRevisions, gather.Triage) is LISTed
	// as PartialObjectMetadata: the server sends no revision data (protobuf, as metadata.ConfigFor
	// asks).
	meta, err := metadata.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return Clients{}, err
	}
	return Clients{Clients: read.Clients{Kube: kube, Image: image, Dynamic: dyn}, Read: slim, Metadata: meta}, nil
}

// Events is the client watch posts its Events through, with its own rate limit: 1000/s (burst
// 2000), so Events at the rate findings appear (the bench drives 500 a second) wait neither
// behind the informers' requests nor behind a limit below that rate; the server's API Priority
// and Fairness still bounds the load.
func Events(flags *genericclioptions.ConfigFlags, userAgent string) (typedcorev1.EventsGetter, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	config.QPS, config.Burst = 1000, 2000
	config.UserAgent = userAgent
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		config.Wrap(countRequests)
	}
	c, err := typedcorev1.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Namespace returns the namespace in scope: "" with -A, else -n or the kubeconfig's.
func Namespace(flags *genericclioptions.ConfigFlags, all bool) (string, error) {
	if all {
		return "", nil
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// AllContexts lists the contexts of the kubeconfig, sorted.
func AllContexts(flags *genericclioptions.ConfigFlags) ([]string, error) {
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, errors.New("--all-contexts: the kubeconfig has no contexts")
	}
	sort.Strings(names)
	return names, nil
}

// requests counts the HTTP requests made when STSDIAG_REQUEST_STATS is set (for the benchmark),
// and responseBytes the bytes of their response bodies as read (after the transport's gzip
// decoding: what the API server sends uncompressed).
var requests, responseBytes atomic.Int64

// RequestStats are the HTTP requests made and their response bytes, when STSDIAG_REQUEST_STATS
// is set.
func RequestStats() (n, bytes int64) { return requests.Load(), responseBytes.Load() }

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	resp, err := t.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = countingBody{resp.Body}
	}
	return resp, err
}

// countingBody adds what is read of a response body to responseBytes.
type countingBody struct{ io.ReadCloser }

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	responseBytes.Add(int64(n))
	return n, err
}

func countRequests(next http.RoundTripper) http.RoundTripper { return countingTransport{next: next} }
