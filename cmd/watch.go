package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientfeatures "k8s.io/client-go/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/connect"
	"github.com/stsdiag/stsdiag/internal/watch"
)

// watchGCPercent is watch's GOGC unless the environment sets one.
const watchGCPercent = 50

// setGCPercent sets watchGCPercent as Go's GC percent, unless GOGC is set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(watchGCPercent)
	}
}

// watchFlags are the flags of `stsdiag watch`, as typed.
type watchFlags struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Scope             *scopeFlags
	Hold              *holdFlags
	Settle            settleFlag
	Diagnosis         *diagnosisFlags
	Fix               bool
	Rollback          bool
	Disruption        string
	MaxRepairsPerHour int
	MetricsAddr       string
	MetricsInsecure   bool
	MetricsCertDir    string
	HealthAddr        string
	LeaderElect       bool
	LeaseNamespace    string
	LeaseName         string
	NoConditions      bool
	// Prometheus is where the analyses of canaries declared by annotations are measured.
	Prometheus prometheusFlags
}

// watchOptions are what `stsdiag watch` runs with, parsed and checked.
type watchOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	serve watch.ServeOptions
}

const watchExample = `  # Report only: Events on StatefulSets and Prometheus metrics for every namespace
  kubectl stsdiag watch -A --metrics-addr :8443 --metrics-cert-dir /etc/stsdiag/metrics-tls

  # Repair findings that held 2 minutes, at most 5 repairs per namespace and hour, one leader
  kubectl stsdiag watch -A --fix --hold 2m --max-repairs-per-hour 5 --leader-elect`

// newWatchCommand builds `stsdiag watch`.
func newWatchCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newWatchFlags(configFlags, streams).command()
}

func newWatchFlags(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *watchFlags {
	return &watchFlags{configFlags: configFlags, IOStreams: streams, Scope: newScopeFlags(configFlags), Hold: &holdFlags{},
		Diagnosis: newDiagnosisFlags(), MaxRepairsPerHour: 10, MetricsAddr: ":8443", HealthAddr: ":8081", LeaseName: "stsdiag-watch"}
}

func (f *watchFlags) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "watch [-n NAMESPACE | -A] [--fix] [--hold 2m] [--max-repairs-per-hour N] [--metrics-addr :8443] [--health-addr :8081] [--leader-elect]",
		Short: "Diagnose continuously (in-cluster service): Events, metrics and opt-in repairs",
		Long: `watch runs check continuously from shared informers: after the initial sync it makes no
periodic LISTs and re-diagnoses only the StatefulSets an event touched. Each new finding becomes
a Kubernetes Event on its StatefulSet (reason = the finding's code) and a metric. An error finding
that held for --hold also sets the kstatus condition Stalled=True (reason = the code) on
the StatefulSet's status, which Flux, Helm, kpt and Argo CD (deploy/argocd) read; it turns False
once no error finding is left (--no-conditions: never).

With --fix it repairs findings that held for --hold through the same code path as fix (the
same preconditions and never-delete rules), at most --max-repairs-per-hour per namespace, and
records an Event per repair. It removes at most one pod per StatefulSet per pass, and no further
pod of it until the removed one is back and Ready (--disruption=evict: through the Eviction API).
Serves /metrics over TLS on --metrics-addr to a bearer token the
API server authenticates (TokenReview) and authorizes for GET on the non-resource URL /metrics
(SubjectAccessReview): no token 401, not allowed 403. The certificate is tls.crt/tls.key of
--metrics-cert-dir (reloaded when it changes), else self-signed at start. /healthz and /readyz
are plain HTTP on --health-addr. --metrics-insecure serves /metrics over plain HTTP to anyone
(on --health-addr's listener too if both addresses are equal). With
--leader-elect only the holder of a Lease works, so two replicas never both repair. It takes no
NAME arguments and no -l (it watches a namespace or the cluster) and works in one cluster. It
stops cleanly, exit 0, on SIGTERM or SIGINT: a service's normal end.

A StatefulSet annotated stsdiag.io/canary-steps is rolled out step by step as canary does
(docs/canary.md); with stsdiag.io/canary-analysis (a ConfigMap holding an Argo Rollouts
AnalysisTemplate) or stsdiag.io/canary-analysis-template each step whose pods held healthy is
also measured in Prometheus: Successful steps forward, Failed rolls the template back,
Inconclusive or Error pauses (docs/watch.md). --prometheus, --prometheus-token-file,
--prometheus-ca-file and --prometheus-insecure-skip-tls-verify say how to reach Prometheus, as
for canary --analysis.`,
		Example: watchExample,
		Args:    cobra.NoArgs,
		RunE:    runE(f.ToOptions),
	}
	f.Scope.AddFlags(c)
	fs := c.Flags()
	fs.BoolVar(&f.Fix, "fix", false, "Repair findings that held for --hold")
	fs.BoolVar(&f.Rollback, "rollback", false, "With --fix: roll a failing new template (CurrentRevisionFailing) back to the earlier revision whose pods are Ready")
	fs.StringVar(&f.Disruption, "disruption", string(apiv1.DisruptionDelete), "With --fix: "+disruptionUsage)
	f.Hold.AddFlags(c, 2*time.Minute, "min-stuck", "How long a finding must hold before it is repaired and sets Stalled")
	fs.IntVar(&f.MaxRepairsPerHour, "max-repairs-per-hour", f.MaxRepairsPerHour, "Repair actions allowed per namespace and hour (0: unbounded)")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", f.MetricsAddr, "Address of /metrics, TLS with authentication and authorization unless --metrics-insecure (empty: none)")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", "", "Directory of tls.crt and tls.key for /metrics (empty or without them: self-signed)")
	fs.BoolVar(&f.MetricsInsecure, "metrics-insecure", false, "Serve /metrics over plain HTTP without authentication")
	fs.StringVar(&f.HealthAddr, "health-addr", f.HealthAddr, "Address of /healthz and /readyz, plain HTTP (empty: none)")
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "Work only while holding the Lease")
	fs.StringVar(&f.LeaseNamespace, "leader-elect-namespace", "", "Namespace of the Lease (default: $POD_NAMESPACE, else the current namespace)")
	fs.StringVar(&f.LeaseName, "leader-elect-name", f.LeaseName, "Name of the Lease")
	fs.BoolVar(&f.NoConditions, "no-conditions", false, "Do not set the kstatus Stalled condition on StatefulSets whose error finding held for --hold")
	f.Settle.AddFlags(c)
	f.Diagnosis.AddFlags(c)
	f.Prometheus.AddFlags(c)
	return c
}

// ToOptions checks and parses the flags (cobra.NoArgs has refused NAME arguments).
func (f *watchFlags) ToOptions(args []string) (*watchOptions, error) {
	if f.MaxRepairsPerHour < 0 {
		return nil, errors.New("--max-repairs-per-hour must not be negative")
	}
	if f.Rollback && !f.Fix {
		return nil, errors.New("--rollback needs --fix")
	}
	disruption, err := parseDisruption(f.Disruption)
	if err != nil {
		return nil, err
	}
	scope, err := f.Scope.ToScope(args)
	if err != nil {
		return nil, err
	}
	diagnosis, err := f.Diagnosis.ToOptions()
	if err != nil {
		return nil, err
	}
	hold, err := f.Hold.ToDuration()
	if err != nil {
		return nil, err
	}
	steady, err := f.Settle.ToDuration()
	if err != nil {
		return nil, err
	}
	if f.MetricsAddr != "" && f.MetricsAddr == f.HealthAddr && !f.MetricsInsecure {
		return nil, errors.New("--metrics-addr and --health-addr must differ unless --metrics-insecure (/metrics is TLS, the probes plain HTTP)")
	}
	if f.MetricsInsecure && f.MetricsCertDir != "" {
		return nil, errors.New("--metrics-cert-dir needs TLS; drop --metrics-insecure")
	}
	leaseNamespace, err := f.leaseNamespace()
	if err != nil {
		return nil, err
	}
	dialer, err := f.Prometheus.Dialer(f.configFlags)
	if err != nil {
		return nil, err
	}
	identity, err := os.Hostname()
	if err != nil {
		identity = "stsdiag" // the process ID below still tells replicas apart on one host
	}
	o := &watchOptions{configFlags: f.configFlags, IOStreams: f.IOStreams, serve: watch.ServeOptions{
		Scope: scope.Scope,
		Watch: watch.Options{Fix: f.Fix, Rollback: f.Rollback, Disruption: disruption, Hold: hold, Steady: steady, MaxRepairsPerHour: f.MaxRepairsPerHour, Log: f.ErrOut,
			Diagnosis: diagnosis, NoConditions: f.NoConditions, Prometheus: dialer.Querier, PrometheusOverride: f.Prometheus.Address != ""},
		HTTP: watch.HTTPOptions{MetricsAddr: f.MetricsAddr, MetricsInsecure: f.MetricsInsecure, MetricsCertDir: f.MetricsCertDir, HealthAddr: f.HealthAddr},
		Log:  f.ErrOut,
	}}
	if f.LeaderElect {
		o.serve.Lease = &watch.Lease{Namespace: leaseNamespace, Name: f.LeaseName, Identity: fmt.Sprintf("%s_%d", identity, os.Getpid())}
	}
	return o, nil
}

// leaseNamespace is --leader-elect-namespace, else $POD_NAMESPACE, else the current namespace.
func (f *watchFlags) leaseNamespace() (string, error) {
	if f.LeaseNamespace != "" {
		return f.LeaseNamespace, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	return connect.Namespace(f.configFlags, false)
}

// listInformers are client-go's feature gates with WatchListClient off: client-go 1.35 fills an
// informer by a watch-list stream by default (features/known_features.go:101-104@v0.35.4); at
// 100k pods here watch's caches synced in 15.7 s that way and in 4.8 s by LISTs, the decoded-LIST
// floor of the same run being 4.5 s (docs/development.md#performance).
// KUBE_FEATURE_WatchListClient, when set, still decides.
type listInformers struct{ clientfeatures.Gates }

func (g listInformers) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		if _, set := os.LookupEnv("KUBE_FEATURE_WatchListClient"); !set {
			return false
		}
	}
	return g.Gates.Enabled(f)
}

var listInformersOnce sync.Once

// complete builds the clients (following's profile; Events through their own, eventsClient)
// and, for /metrics' TokenReviews and SubjectAccessReviews, the REST config of the same identity.
// client-go's feature gates are set first: informers LIST (listInformers).
func (o *watchOptions) complete() (err error) {
	listInformersOnce.Do(func() { clientfeatures.ReplaceFeatureGates(listInformers{clientfeatures.FeatureGates()}) })
	if o.serve.Clients, err = newClients(o.configFlags, following); err != nil {
		return err
	}
	if o.serve.Watch.Events, err = eventsClient(o.configFlags); err != nil {
		return err
	}
	if !o.serve.HTTP.MetricsInsecure && o.serve.HTTP.MetricsAddr != "" {
		if o.serve.HTTP.RESTConfig, err = o.configFlags.ToRESTConfig(); err != nil {
			return err
		}
		o.serve.HTTP.RESTConfig.UserAgent = "kubectl-stsdiag/" + version
	}
	return nil
}

// Run serves watch (watch.Serve) until SIGTERM.
func (o *watchOptions) Run(ctx context.Context) error {
	// In a container with a memory limit, the Go heap is held to 90% of it (unless GOMEMLIMIT or
	// AUTOMEMLIMIT say otherwise): watch's informer caches are most of its heap, and Go's default
	// goal of twice the live heap would otherwise exceed a limit the caches fit in.
	if limit, err := memlimit.Set(memlimit.WithRatio(0.9)); err == nil && limit > 0 && limit < math.MaxInt64 {
		fmt.Fprintf(o.ErrOut, "stsdiag watch: Go memory limit %d MiB\n", limit>>20)
	}
	// Unless GOGC says otherwise, the heap grows watchGCPercent past what is live between two
	// collections, not Go's 100%: most of watch's heap is its caches, live as long as it runs,
	// so at 100% the heap was twice the caches while they filled (docs/watch.md#memory).
	// Prometheus lowers it for the same reason (75 unless GOGC is set, since v2.53.0:
	// prometheus/prometheus#14176, #14285).
	setGCPercent()
	if err := watch.Serve(ctx, o.serve); err != nil {
		return withCode(ExitError, err)
	}
	return nil
}
