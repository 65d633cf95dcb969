package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/stsdiag/stsdiag/monitor"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/snapshot"
)

// WatchOptions are the flags and state of `stsdiag watch`.
type WatchOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces     bool
	Fix               bool
	MinStuck          time.Duration
	MaxRepairsPerHour int
	MetricsAddr       string
	LeaderElect       bool
	LeaseNamespace    string
	LeaseName         string
	OpenShift         string

	scope snapshot.Scope
}

const watchExample = `  # Report only: Events on StatefulSets and Prometheus metrics for every namespace
  kubectl stsdiag watch -A --metrics-addr :8080

  # Repair findings that held 2 minutes, at most 5 repairs per namespace and hour, one leader
  kubectl stsdiag watch -A --fix --min-stuck 2m --max-repairs-per-hour 5 --leader-elect`

// NewWatchCommand builds `stsdiag watch`.
func NewWatchCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WatchOptions{configFlags: configFlags, IOStreams: streams}
	c := &cobra.Command{
		Use:   "watch [-n NAMESPACE | -A] [--fix] [--min-stuck 2m] [--max-repairs-per-hour N] [--metrics-addr :8080] [--leader-elect]",
		Short: "Diagnose continuously (in-cluster service): Events, metrics and opt-in repairs",
		Long: `watch runs check continuously from shared informers: after the initial sync it makes no
periodic LISTs and re-diagnoses only the StatefulSets an event touched. Each new finding becomes
a Kubernetes Event on its StatefulSet (reason = the finding's code) and a metric.

With --fix it repairs findings that held for --min-stuck through the same code path as fix (the
same preconditions and never-delete rules), at most --max-repairs-per-hour per namespace, and
records an Event per repair. Serves /metrics, /healthz and /readyz on --metrics-addr. With
--leader-elect only the holder of a Lease works, so two replicas never both repair. It stops
cleanly on SIGTERM.`,
		Example: watchExample,
		RunE:    runE(o),
	}
	f := c.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Watch StatefulSets in all namespaces")
	f.BoolVar(&o.Fix, "fix", false, "Repair findings that held for --min-stuck")
	f.DurationVar(&o.MinStuck, "min-stuck", 2*time.Minute, "How long a finding must hold before it is repaired")
	f.IntVar(&o.MaxRepairsPerHour, "max-repairs-per-hour", 10, "Repair actions allowed per namespace and hour (0: unbounded)")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "Address of /metrics, /healthz and /readyz (empty: none)")
	f.BoolVar(&o.LeaderElect, "leader-elect", false, "Work only while holding the Lease")
	f.StringVar(&o.LeaseNamespace, "leader-elect-namespace", "", "Namespace of the Lease (default: $POD_NAMESPACE, else the current namespace)")
	f.StringVar(&o.LeaseName, "leader-elect-name", "stsdiag-watch", "Name of the Lease")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	return c
}

// Complete fills in the scope.
func (o *WatchOptions) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("watch takes no arguments")
	}
	ns, _, err := namespace(o.configFlags, o.AllNamespaces)
	if err != nil {
		return err
	}
	mode, err := openshift.ParseMode(o.OpenShift)
	if err != nil {
		return err
	}
	o.scope = snapshot.Scope{Namespace: ns, OpenShift: mode}
	if o.LeaseNamespace == "" {
		o.LeaseNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.LeaseNamespace == "" {
		if o.LeaseNamespace, _, err = namespace(o.configFlags, false); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the flags.
func (o *WatchOptions) Validate() error {
	if o.MinStuck < 0 || o.MaxRepairsPerHour < 0 {
		return errors.New("--min-stuck and --max-repairs-per-hour must not be negative")
	}
	return nil
}

// Run serves health and metrics and runs the monitor (as leader, with --leader-elect) until
// SIGTERM.
func (o *WatchOptions) Run(ctx context.Context) error {
	c, _, err := clients(o.configFlags, 0)
	if err != nil {
		return withCode(ExitError, err)
	}
	metrics := monitor.NewMetrics()
	monitorOptions := monitor.Options{Fix: o.Fix, MinStuck: o.MinStuck, MaxRepairsPerHour: o.MaxRepairsPerHour, Log: o.ErrOut}
	var current atomic.Pointer[monitor.Controller]
	ctrl := monitor.New(c, o.scope, monitorOptions, metrics)
	current.Store(ctrl)
	var standby atomic.Bool
	if o.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if current.Load().Ready() || standby.Load() {
				fmt.Fprintln(w, "ok")
				return
			}
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
		})
		listener, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return withCode(ExitError, fmt.Errorf("--metrics-addr: %w", err))
		}
		server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = server.Serve(listener) }()
		defer func() {
			shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
			defer done()
			_ = server.Shutdown(shutdown)
		}()
		fmt.Fprintf(o.ErrOut, "serving /metrics, /healthz and /readyz on %s\n", listener.Addr())
	}
	if !o.LeaderElect {
		if err := ctrl.Run(ctx); err != nil {
			return withCode(ExitError, err)
		}
		return nil
	}
	identity, _ := os.Hostname()
	identity = fmt.Sprintf("%s_%d", identity, os.Getpid())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: o.LeaseName, Namespace: o.LeaseNamespace},
		Client:     c.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	standby.Store(true)
	var runErr error
	// Losing the Lease (e.g. the API server was away longer than the renew deadline) stops the
	// monitor; it then campaigns again with a fresh one, so two never run at once.
	for ctx.Err() == nil && runErr == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true, Name: o.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					fmt.Fprintf(o.ErrOut, "%s leads (Lease %s/%s)\n", identity, o.LeaseNamespace, o.LeaseName)
					ctrl := monitor.New(c, o.scope, monitorOptions, metrics)
					current.Store(ctrl)
					runErr = ctrl.Run(ctx)
				},
				OnStoppedLeading: func() { fmt.Fprintf(o.ErrOut, "%s stopped leading\n", identity) },
			},
		})
	}
	if runErr != nil {
		return withCode(ExitError, runErr)
	}
	return nil
}
