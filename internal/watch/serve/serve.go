package watch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/stsdiag/stsdiag/internal/gather"
)

// ServeOptions are what `stsdiag watch` runs: the monitor, its HTTP endpoints and, optionally,
// leader election.
type ServeOptions struct {
	Clients gather.Clients
	Scope   gather.Scope
	Monitor Options
	// MetricsAddr serves /metrics ("" for none): over TLS, to a bearer token that the API server
	// authenticates (TokenReview) and authorizes for GET on the /metrics non-resource URL
	// (SubjectAccessReview), unless MetricsInsecure.
	MetricsAddr string
	// MetricsInsecure serves /metrics over plain HTTP to anyone (the behaviour before TLS).
	MetricsInsecure bool
	// MetricsCertDir holds tls.crt and tls.key (a mounted Secret, reloaded when it changes);
	// "" or a directory without them: a self-signed certificate made at start.
	MetricsCertDir string
	// RESTConfig reaches the API server for TokenReviews and SubjectAccessReviews (secure /metrics).
	RESTConfig *rest.Config
	// HealthAddr serves /healthz and /readyz over plain HTTP for the kubelet's probes ("" for
	// none). Equal to MetricsAddr only with MetricsInsecure: one listener serves all three.
	HealthAddr string
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
	stop, err := serveHTTP(ctx, o, metrics, healthz, func() bool {
		if c := current.Load(); c != nil {
			return c.Ready()
		}
		return o.LeaderElect // a standby that has not led yet is ready to take over
	})
	if err != nil {
		return err
	}
	defer stop()
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

// serveHTTP serves /metrics on o.MetricsAddr and /healthz (the leader-election watchdog when
// electing) and /readyz on o.HealthAddr.
func serveHTTP(ctx context.Context, o ServeOptions, metrics *Metrics, healthz *leaderelection.HealthzAdaptor, ready func() bool) (stop func(), err error) {
	if o.MetricsAddr != "" && o.MetricsAddr == o.HealthAddr && !o.MetricsInsecure {
		return nil, errors.New("/metrics over TLS and the plain /healthz and /readyz need two addresses")
	}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if healthz != nil {
			if err := healthz.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready() {
			fmt.Fprintln(w, "ok")
			return
		}
		http.Error(w, "informers not synced", http.StatusServiceUnavailable)
	})
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	var metricsHandler http.Handler = promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})
	if o.MetricsAddr != "" {
		if o.MetricsAddr == o.HealthAddr { // --metrics-insecure on one address: all three, plain
			health.Handle("/metrics", metricsHandler)
		} else {
			listener, what, err := metricsListener(ctx, o)
			if err != nil {
				return nil, err
			}
			if !o.MetricsInsecure {
				if metricsHandler, err = authorizeMetrics(o, metricsHandler); err != nil {
					_ = listener.Close() // the error to return is authorizeMetrics'
					return nil, err
				}
			}
			mux := http.NewServeMux()
			mux.Handle("/metrics", metricsHandler)
			stops = append(stops, serveOn(listener, mux, o.Log))
			fmt.Fprintf(o.Log, "serving /metrics on %s (%s)\n", listener.Addr(), what)
		}
	}
	if o.HealthAddr != "" {
		listener, err := net.Listen("tcp", o.HealthAddr)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("--health-addr: %w", err)
		}
		stops = append(stops, serveOn(listener, health, o.Log))
		if o.MetricsAddr == o.HealthAddr {
			fmt.Fprintf(o.Log, "serving /metrics, /healthz and /readyz on %s (plain HTTP, no authentication)\n", listener.Addr())
		} else {
			fmt.Fprintf(o.Log, "serving /healthz and /readyz on %s (plain HTTP)\n", listener.Addr())
		}
	}
	return stopAll, nil
}

// metricsListener listens on o.MetricsAddr: plain with MetricsInsecure, else TLS as
// controller-runtime's metrics server does (pkg/metrics/server/server.go:273-333@v0.23.3): the
// key pair of MetricsCertDir, reloaded by its certwatcher when the Secret changes, else a
// self-signed certificate for localhost/127.0.0.1 made in memory at start (it encrypts; a scraper
// cannot verify it). HTTP/2 is off, as kubebuilder's scaffold does (CVE-2023-44487).
func metricsListener(ctx context.Context, o ServeOptions) (net.Listener, string, error) {
	if o.MetricsInsecure {
		l, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return nil, "", fmt.Errorf("--metrics-addr: %w", err)
		}
		return l, "plain HTTP, no authentication", nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	what := "TLS, self-signed certificate"
	certPath, keyPath := filepath.Join(o.MetricsCertDir, "tls.crt"), filepath.Join(o.MetricsCertDir, "tls.key")
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	switch {
	case o.MetricsCertDir == "" || (os.IsNotExist(certErr) && os.IsNotExist(keyErr)):
		cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
		if err != nil {
			return nil, "", fmt.Errorf("self-signed certificate for /metrics: %w", err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, "", fmt.Errorf("self-signed certificate for /metrics: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	default:
		watcher, err := certwatcher.New(certPath, keyPath)
		if err != nil {
			return nil, "", fmt.Errorf("--metrics-cert-dir: %w", err)
		}
		go func() { _ = watcher.Start(ctx) }()
		cfg.GetCertificate = watcher.GetCertificate
		what = "TLS, certificate of " + o.MetricsCertDir
	}
	l, err := net.Listen("tcp", o.MetricsAddr)
	if err != nil {
		return nil, "", fmt.Errorf("--metrics-addr: %w", err)
	}
	return tls.NewListener(l, cfg), what + ", bearer token authorized by the API server", nil
}

// authorizeMetrics puts the API server's delegated authentication and authorization in front of
// /metrics, as an aggregated API server or kube-rbac-proxy does: a request without a token, or
// with one the TokenReview rejects (or that cannot be reviewed) → 401, as the API server's own
// filter answers (pkg/endpoints/filters/authentication.go:73-78, k8s.io/apiserver@v0.35.4); a
// user who may not GET the /metrics non-resource URL → 403; a SubjectAccessReview that fails →
// 500. Decisions are cached (allow 5 min, deny 30 s, tokens 1 min), with the API server's
// retry back-off.
func authorizeMetrics(o ServeOptions, handler http.Handler) (http.Handler, error) {
	if o.RESTConfig == nil {
		return nil, errors.New("secure /metrics needs a client of the API server")
	}
	httpClient, err := rest.HTTPClientFor(o.RESTConfig)
	if err != nil {
		return nil, err
	}
	authn, err := authenticationv1.NewForConfigAndClient(o.RESTConfig, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1.NewForConfigAndClient(o.RESTConfig, httpClient)
	if err != nil {
		return nil, err
	}
	// The API server's DefaultAuthWebhookRetryBackoff (pkg/server/options/authentication.go:46,
	// k8s.io/apiserver@v0.35.4), not imported: that package pulls in the whole server.
	retry := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authenticate, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  authn,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      retry,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authorize, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       retry,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		res, ok, err := authenticate.AuthenticateRequest(req)
		if err != nil || !ok {
			if err != nil {
				fmt.Fprintf(o.Log, "metrics: %s: unauthorized: %v\n", req.RemoteAddr, err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user := res.User.GetName()
		decision, reason, err := authorize.Authorize(req.Context(), authorizer.AttributesRecord{
			User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path})
		switch {
		case err != nil:
			fmt.Fprintf(o.Log, "metrics: authorizing %s: %v\n", user, err)
			http.Error(w, fmt.Sprintf("Authorization for user %s failed", user), http.StatusInternalServerError)
		case decision != authorizer.DecisionAllow:
			fmt.Fprintf(o.Log, "metrics: %s may not %s %s: %s\n", user, req.Method, req.URL.Path, reason)
			http.Error(w, fmt.Sprintf("Authorization denied for user %s", user), http.StatusForbidden)
		default:
			handler.ServeHTTP(w, req)
		}
	}), nil
}

func serveOn(listener net.Listener, handler http.Handler, log io.Writer) (stop func()) {
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ErrorLog: stdlog.New(log, "", 0)}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(log, "HTTP server on %s: %v\n", listener.Addr(), err)
		}
	}()
	return func() {
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = server.Shutdown(shutdown)
	}
}
