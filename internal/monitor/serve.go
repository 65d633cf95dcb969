package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/stsdiag/stsdiag/internal/gather"
)

// ServeOptions are what `stsdiag watch` runs: the monitor, its HTTP endpoints and, optionally,
// leader election.
type ServeOptions struct {
	Clients gather.Clients
	Scope   gather.Scope
	Monitor Options
	// MetricsAddr serves /metrics, /healthz and /readyz ("" for none).
	MetricsAddr string
	// LeaderElect runs the monitor only while this process holds the Lease.
	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	// Identity of this process in the Lease.
	Identity string
	// Log receives one line per state change.
	Log io.Writer
}

// Lease timings: client-go's defaults for controllers (kube-controller-manager uses the same).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// Serve runs the monitor until ctx ends. With leader election it campaigns for the Lease, runs
// the monitor while leading and campaigns again after losing it; if the monitor itself fails,
// the Lease is released and the error returned (the Deployment restarts the process).
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	metrics := NewMetrics()
	var current atomic.Pointer[Controller]
	var healthz *leaderelection.HealthzAdaptor
	if o.LeaderElect {
		healthz = leaderelection.NewLeaderHealthzAdaptor(renewDeadline)
	}
	if o.MetricsAddr != "" {
		stop, err := serveHTTP(o.MetricsAddr, metrics, healthz, func() bool {
			if c := current.Load(); c != nil {
				return c.Ready()
			}
			return o.LeaderElect // a standby that has not led yet is ready to take over
		}, o.Log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if !o.LeaderElect {
		ctrl := New(o.Clients, o.Scope, o.Monitor, metrics)
		current.Store(ctrl)
		return ctrl.Run(ctx)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: o.LeaseName, Namespace: o.LeaseNamespace},
		Client:     o.Clients.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	var (
		mu     sync.Mutex
		runErr error
	)
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return runErr
	}
	for ctx.Err() == nil && failed() == nil {
		campaign, cancel := context.WithCancel(ctx)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			ReleaseOnCancel: true, Name: o.LeaseName, WatchDog: healthz,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) {
					fmt.Fprintf(o.Log, "%s leads (Lease %s/%s)\n", o.Identity, o.LeaseNamespace, o.LeaseName)
					ctrl := New(o.Clients, o.Scope, o.Monitor, metrics)
					current.Store(ctrl)
					if err := ctrl.Run(leading); err != nil && leading.Err() == nil {
						fmt.Fprintf(o.Log, "%s: the monitor failed, giving the Lease back: %v\n", o.Identity, err)
						mu.Lock()
						runErr = err
						mu.Unlock()
						cancel()
					}
				},
				OnStoppedLeading: func() {
					current.Store(nil)
					fmt.Fprintf(o.Log, "%s stopped leading\n", o.Identity)
				},
			},
		})
		if err != nil {
			cancel()
			return err
		}
		elector.Run(campaign)
		cancel()
	}
	return failed()
}

// serveHTTP serves /metrics, /healthz (the leader-election watchdog when electing) and /readyz.
func serveHTTP(addr string, metrics *Metrics, healthz *leaderelection.HealthzAdaptor, ready func() bool, log io.Writer) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if healthz != nil {
			if err := healthz.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready() {
			fmt.Fprintln(w, "ok")
			return
		}
		http.Error(w, "informers not synced", http.StatusServiceUnavailable)
	})
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(log, "metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(log, "serving /metrics, /healthz and /readyz on %s\n", listener.Addr())
	return func() {
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = server.Shutdown(shutdown)
	}, nil
}
