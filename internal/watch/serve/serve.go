// Package serve is the HTTP server of `stsdiag watch`: /metrics over TLS to a bearer token the
// API server authenticates (TokenReview) and authorizes for GET on the /metrics non-resource URL
// (SubjectAccessReview), or over plain HTTP to anyone when asked; /healthz and /readyz over plain
// HTTP for the kubelet's probes. It serves what it is given and knows nothing of diagnosis.
package serve

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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Options say where and how the endpoints are served (watch's --metrics-* and --health-addr).
type Options struct {
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
}

// Endpoints are what the server answers with.
type Endpoints struct {
	// Metrics is gathered for each GET of /metrics.
	Metrics prometheus.Gatherer
	// Healthy, if set, decides /healthz (the leader election's watchdog); nil: always ok.
	Healthy func(*http.Request) error
	// Ready decides /readyz.
	Ready func() bool
}

// Start serves the endpoints on o's addresses until stop is called. log receives one line per
// listener and each refused scrape.
func Start(ctx context.Context, o Options, e Endpoints, log io.Writer) (stop func(), err error) {
	if o.MetricsAddr != "" && o.MetricsAddr == o.HealthAddr && !o.MetricsInsecure {
		return nil, errors.New("/metrics over TLS and the plain /healthz and /readyz need two addresses")
	}
	health := probes(e)
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	if o.MetricsAddr != "" {
		metricsHandler := promhttp.HandlerFor(e.Metrics, promhttp.HandlerOpts{})
		if o.MetricsAddr == o.HealthAddr { // --metrics-insecure on one address: all three, plain
			health.Handle("/metrics", metricsHandler)
		} else {
			s, err := serveMetrics(ctx, o, metricsHandler, log)
			if err != nil {
				return nil, err
			}
			stops = append(stops, s)
		}
	}
	if o.HealthAddr != "" {
		listener, err := net.Listen("tcp", o.HealthAddr)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("--health-addr: %w", err)
		}
		stops = append(stops, serveOn(listener, health, log))
		if o.MetricsAddr == o.HealthAddr {
			fmt.Fprintf(log, "serving /metrics, /healthz and /readyz on %s (plain HTTP, no authentication)\n", listener.Addr())
		} else {
			fmt.Fprintf(log, "serving /healthz and /readyz on %s (plain HTTP)\n", listener.Addr())
		}
	}
	return stopAll, nil
}

// probes answers /healthz and /readyz.
func probes(e Endpoints) *http.ServeMux {
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if e.Healthy != nil {
			if err := e.Healthy(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if e.Ready() {
			fmt.Fprintln(w, "ok")
			return
		}
		http.Error(w, "informers not synced", http.StatusServiceUnavailable)
	})
	return health
}

// serveMetrics serves /metrics alone on o.MetricsAddr: over TLS behind the API server's
// authentication and authorization, or plain with MetricsInsecure.
func serveMetrics(ctx context.Context, o Options, handler http.Handler, log io.Writer) (stop func(), err error) {
	listener, what, err := metricsListener(ctx, o)
	if err != nil {
		return nil, err
	}
	if !o.MetricsInsecure {
		if handler, err = authorizeMetrics(o, handler, log); err != nil {
			_ = listener.Close() // the error to return is authorizeMetrics'
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	stop = serveOn(listener, mux, log)
	fmt.Fprintf(log, "serving /metrics on %s (%s)\n", listener.Addr(), what)
	return stop, nil
}

// metricsListener listens on o.MetricsAddr: plain with MetricsInsecure, else TLS as
// controller-runtime's metrics server does (pkg/metrics/server/server.go:273-333@v0.23.3): the
// key pair of MetricsCertDir, reloaded by its certwatcher when the Secret changes, else a
// self-signed certificate for localhost/127.0.0.1 made in memory at start (it encrypts; a scraper
// cannot verify it). HTTP/2 is off, as kubebuilder's scaffold does (CVE-2023-44487).
func metricsListener(ctx context.Context, o Options) (net.Listener, string, error) {
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
		pair, err := selfSigned()
		if err != nil {
			return nil, "", err
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

// selfSigned makes a certificate for localhost and 127.0.0.1, in memory.
func selfSigned() (tls.Certificate, error) {
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate for /metrics: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate for /metrics: %w", err)
	}
	return pair, nil
}

// authorizeMetrics puts the API server's delegated authentication and authorization in front of
// /metrics, as an aggregated API server or kube-rbac-proxy does: a request without a token, or
// with one the TokenReview rejects (or that cannot be reviewed) → 401, as the API server's own
// filter answers (pkg/endpoints/filters/authentication.go:73-78, k8s.io/apiserver@v0.35.4); a
// user who may not GET the /metrics non-resource URL → 403; a SubjectAccessReview that fails →
// 500. Decisions are cached (allow 5 min, deny 30 s, tokens 1 min), with the API server's
// retry back-off.
func authorizeMetrics(o Options, handler http.Handler, log io.Writer) (http.Handler, error) {
	authenticate, authorize, err := delegated(o.RESTConfig)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		res, ok, err := authenticate.AuthenticateRequest(req)
		if err != nil || !ok {
			if err != nil {
				fmt.Fprintf(log, "metrics: %s: unauthorized: %v\n", req.RemoteAddr, err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user := res.User.GetName()
		decision, reason, err := authorize.Authorize(req.Context(), authorizer.AttributesRecord{
			User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path})
		switch {
		case err != nil:
			fmt.Fprintf(log, "metrics: authorizing %s: %v\n", user, err)
			http.Error(w, fmt.Sprintf("Authorization for user %s failed", user), http.StatusInternalServerError)
		case decision != authorizer.DecisionAllow:
			fmt.Fprintf(log, "metrics: %s may not %s %s: %s\n", user, req.Method, req.URL.Path, reason)
			http.Error(w, fmt.Sprintf("Authorization denied for user %s", user), http.StatusForbidden)
		default:
			handler.ServeHTTP(w, req)
		}
	}), nil
}

// delegated builds the TokenReview authenticator and the SubjectAccessReview authorizer that
// authorizeMetrics asks, both as the identity of config.
func delegated(config *rest.Config) (authenticator.Request, authorizer.Authorizer, error) {
	if config == nil {
		return nil, nil, errors.New("secure /metrics needs a client of the API server")
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, nil, err
	}
	authn, err := authenticationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, nil, err
	}
	authz, err := authorizationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authorize, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       retry,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return authenticate, authorize, nil
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
