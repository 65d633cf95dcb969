package cmd

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync/atomic"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/openshift"
	"github.com/stsdiag/stsdiag/internal/stuck"
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
	if requestTimeout == 0 {
		// wait and watch run for long; watch posts an Event per new finding through this client.
		// At 50/s a stream of findings faster than that queues behind the limiter (Events seconds
		// late, then dropped once the recorder's 1000-event queue is full). The server's API
		// Priority and Fairness still bounds the load.
		config.QPS, config.Burst = 200, 400
	}
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
	return gather.Clients{Kube: kube, Image: image, Dynamic: dyn}, nil
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

// diagnosisFlags are the thresholds and controller assumptions of the diagnosis, the same on
// every command that diagnoses.
type diagnosisFlags struct {
	opts         stuck.Options
	featureGates string
}

func newDiagnosisFlags() *diagnosisFlags { return &diagnosisFlags{opts: stuck.DefaultOptions()} }

func (d *diagnosisFlags) AddFlags(c *cobra.Command) {
	f := c.Flags()
	f.DurationVar(&d.opts.TerminatingAfter, "terminating-threshold", d.opts.TerminatingAfter,
		"Report a StatefulSet, or a pod past its grace period, still terminating after this long (an owner recreated meanwhile: at once)")
	f.DurationVar(&d.opts.NotReadyAfter, "not-ready-threshold", d.opts.NotReadyAfter,
		"Report a pod Running but not Ready (failing readiness probe) for longer than this as stuck at startup (0: never)")
	f.StringVar(&d.featureGates, "feature-gates", "",
		"Feature gates of the cluster's kube-controller-manager when they differ from its release's defaults, e.g. MaxUnavailableStatefulSet=false")
}

func (d *diagnosisFlags) Validate() error {
	if d.opts.TerminatingAfter < 0 || d.opts.NotReadyAfter < 0 {
		return errors.New("--terminating-threshold and --not-ready-threshold must not be negative")
	}
	gates, err := stuck.ParseFeatureGates(d.featureGates)
	if err != nil {
		return err
	}
	d.opts.FeatureGates = gates
	return nil
}

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

// fleetContexts resolves --contexts and --all-contexts (every context of the kubeconfig).
func fleetContexts(flags *genericclioptions.ConfigFlags, contexts []string, all bool) ([]string, error) {
	if all {
		return allContexts(flags)
	}
	return contexts, nil
}

// contextTarget is one context of a fleet: its clients, and the base scope (names, selector,
// OpenShift mode) in that context's namespace (-n, else the context's own).
func contextTarget(flags *genericclioptions.ConfigFlags, name string, allNamespaces bool, base gather.Scope, timeout time.Duration) (gather.Clients, gather.Scope, error) {
	ctxFlags := flagsForContext(flags, name)
	c, err := clients(ctxFlags, timeout)
	if err != nil {
		return gather.Clients{}, gather.Scope{}, fmt.Errorf("context %s: %w", name, err)
	}
	scope, err := scopeOf(ctxFlags, allNamespaces, base.Names)
	if err != nil {
		return gather.Clients{}, gather.Scope{}, fmt.Errorf("context %s: %w", name, err)
	}
	scope.Selector, scope.OpenShift = base.Selector, base.OpenShift
	return c, scope, nil
}
