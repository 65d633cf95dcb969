package cmd

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/gather"
	"github.com/stsdiag/stsdiag/openshift"
)

// defaultRequestTimeout bounds each request of the one-shot commands; wait and watch hold
// watches open and use none.
const defaultRequestTimeout = 30 * time.Second

// clients builds the API clients from the kubeconfig flags. Kubernetes types are read as
// protobuf; ImageStreams (often a CRD off OpenShift) as JSON. requestTimeout applies unless
// --request-timeout is set; 0 means none.
func clients(flags *genericclioptions.ConfigFlags, requestTimeout time.Duration) (gather.Clients, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return gather.Clients{}, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if config.Timeout == 0 {
		config.Timeout = requestTimeout
	}
	config.QPS, config.Burst = 50, 100
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
	return gather.Clients{Kube: kube, Image: image}, nil
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

// scopeOf is the scope of the arguments in the namespace of the flags.
func scopeOf(flags *genericclioptions.ConfigFlags, all bool, names []string) (gather.Scope, error) {
	ns, err := namespace(flags, all)
	return gather.Scope{Namespace: ns, Names: names}, err
}

// parseScopeFlags sets the OpenShift mode and label selector of a scope from their flags.
func parseScopeFlags(scope *gather.Scope, mode, selector string) error {
	var err error
	if scope.OpenShift, err = openshift.ParseMode(mode); err != nil {
		return err
	}
	if scope.Selector, err = labels.Parse(selector); err != nil {
		return fmt.Errorf("invalid --selector %q: %w", selector, err)
	}
	return nil
}

// requests counts the HTTP requests made when STSDIAG_REQUEST_STATS is set (for the benchmark).
var requests atomic.Int64

type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	return t.next.RoundTrip(r)
}

func countRequests(next http.RoundTripper) http.RoundTripper { return countingTransport{next: next} }
