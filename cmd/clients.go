package cmd

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

// defaultRequestTimeout bounds each request of the one-shot commands; wait and watch hold
// watches open and use none.
const defaultRequestTimeout = 30 * time.Second

// profile is how a command uses the API: each request's timeout (0: none; --request-timeout
// wins) and client-go's client-side rate limit.
type profile struct {
	timeout time.Duration
	qps     float32
	burst   int
}

var (
	// reads: check and explain, one-shot and read-only. A triaged check -A makes 9 requests plus
	// 4 per namespace it reads deep (250 at 150k pods of the bench's realistic mix): at 50/s after
	// a burst of 100 the limiter, not the server, set its time (docs/development.md). The burst
	// covers such a read; the server's API Priority and Fairness still bounds the load.
	reads = profile{timeout: defaultRequestTimeout, qps: 200, burst: 400}
	// dryRuns: preflight, one-shot, reads and dry runs only: a bounded number of requests per
	// StatefulSet of the input (about 3, and a LIST per namespace and kind), sent at once.
	dryRuns = profile{timeout: defaultRequestTimeout, qps: 500, burst: 1000}
	// writes: fix, one-shot, deletes and patches: kubectl's own pace.
	writes = profile{timeout: defaultRequestTimeout, qps: 50, burst: 100}
	// following: wait, canary and watch run for long and hold watches open; watch writes Stalled
	// conditions and repairs through this client (its Events through eventsClient). At 50/s a
	// stream of changes faster than that queues behind the limiter.
	following = profile{qps: 200, burst: 400}
)

// newClients builds the API clients from the kubeconfig flags. Kubernetes types are read as
// protobuf (gathering's decoded slim, slimpb); ImageStreams (often a CRD off OpenShift) as JSON.
func newClients(flags *genericclioptions.ConfigFlags, p profile) (gather.Clients, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return gather.Clients{}, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return clientsFor(config, p)
}

// clientsFor builds the API clients of a rest.Config (a kubeconfig context's, a ClusterProfile's).
func clientsFor(config *rest.Config, p profile) (gather.Clients, error) {
	config = rest.CopyConfig(config)
	if config.Timeout == 0 {
		config.Timeout = p.timeout
	}
	config.QPS, config.Burst = p.qps, p.burst
	config.UserAgent = "kubectl-stsdiag/" + version
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		config.Wrap(countRequests)
	}
	image, err := imageclient.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return gather.Clients{}, err
	}
	protoConfig := rest.CopyConfig(config)
	protoConfig.ContentType = "application/vnd.kubernetes.protobuf"
	protoConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(protoConfig)
	if err != nil {
		return gather.Clients{}, err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return gather.Clients{}, err
	}
	// Gathering's LISTs and WATCHes decode only what diagnosis reads; repairs write through kube.
	slim, err := slimpb.NewClientset(protoConfig, kube)
	if err != nil {
		return gather.Clients{}, err
	}
	// What only ownership matters of (check -A's ControllerRevisions, gather.Triage) is LISTed
	// as PartialObjectMetadata: the server sends no revision data (protobuf, as metadata.ConfigFor
	// asks).
	meta, err := metadata.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return gather.Clients{}, err
	}
	return gather.Clients{Clients: read.Clients{Kube: kube, Image: image, Dynamic: dyn}, Read: slim, Metadata: meta}, nil
}

// eventsClient is the client watch posts its Events through, with its own rate limit: 1000/s
// (burst 2000), so Events at the rate findings appear (the bench drives 500 a second) wait
// neither behind the informers' requests nor behind a limit below that rate; the server's API
// Priority and Fairness still bounds the load.
func eventsClient(flags *genericclioptions.ConfigFlags) (typedcorev1.EventsGetter, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	config.QPS, config.Burst = 1000, 2000
	config.UserAgent = "kubectl-stsdiag/" + version
	if os.Getenv("STSDIAG_REQUEST_STATS") != "" {
		config.Wrap(countRequests)
	}
	c, err := typedcorev1.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// namespace returns the namespace in scope: "" with -A, else -n or the kubeconfig's.
func namespace(flags *genericclioptions.ConfigFlags, all bool) (string, error) {
	if all {
		return "", nil
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// requests counts the HTTP requests made when STSDIAG_REQUEST_STATS is set (for the benchmark),
// and responseBytes the bytes of their response bodies as read (after the transport's gzip
// decoding: what the API server sends uncompressed).
var requests, responseBytes atomic.Int64

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

// allContexts lists the contexts of the kubeconfig, sorted.
func allContexts(flags *genericclioptions.ConfigFlags) ([]string, error) {
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

// flagsForContext copies the kubeconfig flags with another context.
func flagsForContext(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(false)
	copyString := func(dst, src *string) {
		if src != nil && dst != nil {
			*dst = *src
		}
	}
	copyString(out.KubeConfig, flags.KubeConfig)
	copyString(out.Namespace, flags.Namespace)
	copyString(out.Timeout, flags.Timeout)
	copyString(out.Impersonate, flags.Impersonate)
	if flags.ImpersonateGroup != nil {
		*out.ImpersonateGroup = append([]string(nil), *flags.ImpersonateGroup...)
	}
	*out.Context = name
	return out
}

// contextTarget is one context of a fleet: its clients, and the base scope (names, selector,
// OpenShift mode) in that context's namespace (-n, else the context's own). Errors do not name
// the context: the caller does.
func contextTarget(flags *genericclioptions.ConfigFlags, name string, allNamespaces bool, base gather.Scope, p profile) (gather.Clients, gather.Scope, error) {
	ctxFlags := flagsForContext(flags, name)
	c, err := newClients(ctxFlags, p)
	if err != nil {
		return gather.Clients{}, gather.Scope{}, err
	}
	scope := base
	if scope.Namespace, err = namespace(ctxFlags, allNamespaces); err != nil {
		return gather.Clients{}, gather.Scope{}, err
	}
	return c, scope, nil
}
