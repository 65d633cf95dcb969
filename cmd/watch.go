package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/monitor"
)

// WatchOptions are the flags and state of `stsdiag watch`.
type WatchOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces     bool
	Fix               bool
	Rollback          bool
	MinStuck          time.Duration
	MaxRepairsPerHour int
	MetricsAddr       string
	LeaderElect       bool
	LeaseNamespace    string
	LeaseName         string
	OpenShift         string
	NoConditions      bool
	diagnosis         *diagnosisFlags

	scope gather.Scope
}

const watchExample = `  # Report only: Events on StatefulSets and Prometheus metrics for every namespace
  kubectl stsdiag watch -A --metrics-addr :8080

  # Repair findings that held 2 minutes, at most 5 repairs per namespace and hour, one leader
  kubectl stsdiag watch -A --fix --min-stuck 2m --max-repairs-per-hour 5 --leader-elect`

// NewWatchCommand builds `stsdiag watch`.
func NewWatchCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WatchOptions{configFlags: configFlags, IOStreams: streams, diagnosis: newDiagnosisFlags()}
	c := &cobra.Command{
		Use:   "watch [-n NAMESPACE | -A] [--fix] [--min-stuck 2m] [--max-repairs-per-hour N] [--metrics-addr :8080] [--leader-elect]",
		Short: "Diagnose continuously (in-cluster service): Events, metrics and opt-in repairs",
		Long: `watch runs check continuously from shared informers: after the initial sync it makes no
periodic LISTs and re-diagnoses only the StatefulSets an event touched. Each new finding becomes
a Kubernetes Event on its StatefulSet (reason = the finding's code) and a metric. An error finding
that held for --min-stuck also sets the kstatus condition Stalled=True (reason = the code) on
the StatefulSet's status, which Flux, Helm, kpt and Argo CD (deploy/argocd) read; it turns False
once no error finding is left (--no-conditions: never).

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
	f.BoolVar(&o.Rollback, "rollback", false, "With --fix: roll a failing new template (CurrentRevisionFailing) back to the earlier revision whose pods are Ready")
	f.DurationVar(&o.MinStuck, "min-stuck", 2*time.Minute, "How long a finding must hold before it is repaired")
	f.IntVar(&o.MaxRepairsPerHour, "max-repairs-per-hour", 10, "Repair actions allowed per namespace and hour (0: unbounded)")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "Address of /metrics, /healthz and /readyz (empty: none)")
	f.BoolVar(&o.LeaderElect, "leader-elect", false, "Work only while holding the Lease")
	f.StringVar(&o.LeaseNamespace, "leader-elect-namespace", "", "Namespace of the Lease (default: $POD_NAMESPACE, else the current namespace)")
	f.StringVar(&o.LeaseName, "leader-elect-name", "stsdiag-watch", "Name of the Lease")
	f.StringVar(&o.OpenShift, "openshift", "auto", "Use the OpenShift image API: auto (if served), always or never")
	f.BoolVar(&o.NoConditions, "no-conditions", false, "Do not set the kstatus Stalled condition on StatefulSets whose error finding held for --min-stuck")
	o.diagnosis.AddFlags(c)
	return c
}

// Complete fills in the scope and the Lease namespace.
func (o *WatchOptions) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("watch takes no arguments")
	}
	var err error
	if o.scope, err = scopeOf(o.configFlags, o.AllNamespaces, nil); err != nil {
		return err
	}
	if o.LeaseNamespace == "" {
		o.LeaseNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.LeaseNamespace == "" {
		if o.LeaseNamespace, err = namespace(o.configFlags, false); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the flags.
func (o *WatchOptions) Validate() error {
	if err := o.diagnosis.Validate(); err != nil {
		return err
	}
	if o.MinStuck < 0 || o.MaxRepairsPerHour < 0 {
		return errors.New("--min-stuck and --max-repairs-per-hour must not be negative")
	}
	if o.Rollback && !o.Fix {
		return errors.New("--rollback needs --fix")
	}
	return parseScopeFlags(&o.scope, o.OpenShift, "")
}

// Run serves the monitor (monitor.Serve) until SIGTERM.
func (o *WatchOptions) Run(ctx context.Context) error {
	c, err := clients(o.configFlags, 0)
	if err != nil {
		return withCode(ExitError, err)
	}
	identity, _ := os.Hostname()
	err = monitor.Serve(ctx, monitor.ServeOptions{
		Clients: c, Scope: o.scope,
		Monitor: monitor.Options{Fix: o.Fix, Rollback: o.Rollback, MinStuck: o.MinStuck, MaxRepairsPerHour: o.MaxRepairsPerHour, Log: o.ErrOut,
			Diagnosis: o.diagnosis.opts, NoConditions: o.NoConditions},
		MetricsAddr: o.MetricsAddr,
		LeaderElect: o.LeaderElect, LeaseNamespace: o.LeaseNamespace, LeaseName: o.LeaseName,
		Identity: fmt.Sprintf("%s_%d", identity, os.Getpid()),
		Log:      o.ErrOut,
	})
	if err != nil {
		return withCode(ExitError, err)
	}
	return nil
}
