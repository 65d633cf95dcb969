package serve_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/stsdiag/stsdiag/internal/watch/serve"
)

// fakeReviewer answers TokenReviews (token "good" and "nobody" are users "scraper" and
// "nobody") and SubjectAccessReviews (only "scraper" may GET /metrics), and records the SARs.
func fakeReviewer(t *testing.T, sars *[]authorizationv1.SubjectAccessReviewSpec) *httptest.Server {
	t.Helper()
	var mu atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			_ = json.NewDecoder(r.Body).Decode(&tr)
			users := map[string]string{"good": "scraper", "nobody": "nobody"}
			if u, ok := users[tr.Spec.Token]; ok {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
			}
			_ = json.NewEncoder(w).Encode(tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			_ = json.NewDecoder(r.Body).Decode(&sar)
			*sars = append(*sars, sar.Spec)
			n := sar.Spec.NonResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "scraper" && n != nil && n.Path == "/metrics" && n.Verb == "get"
			_ = json.NewEncoder(w).Encode(sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metrics is a registry with one series, stsdiag_test_total: what /metrics serves.
func metrics() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "stsdiag_test_total", Help: "A series for the test."}))
	return r
}

// start serves o's endpoints, ready at once, until the test ends.
func start(t *testing.T, o serve.Options) {
	t.Helper()
	stop, err := serve.Start(context.Background(), o, serve.Endpoints{Metrics: metrics(), Ready: func() bool { return true }}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

func get(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestSecureMetrics: /metrics over TLS answers 401 without a valid token, 403 to a user the
// SubjectAccessReview denies, 200 to one it allows; the probes stay plain HTTP.
func TestSecureMetrics(t *testing.T) {
	var sars []authorizationv1.SubjectAccessReviewSpec
	api := fakeReviewer(t, &sars)
	o := serve.Options{MetricsAddr: freeAddr(t), HealthAddr: freeAddr(t), RESTConfig: &rest.Config{Host: api.URL}}
	start(t, o)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed
	url := "https://" + o.MetricsAddr + "/metrics"
	// A token the TokenReview rejects is 401, as the API server itself answers (not the 500 of
	// controller-runtime's filter, pkg/metrics/filters/filters.go:88-91@v0.23.3).
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"forged", 401}, {"nobody", 403}, {"good", 200}} {
		code, body := get(t, client, url, c.token)
		if code != c.want {
			t.Errorf("token %q: got %d %s, want %d", c.token, code, body, c.want)
		}
		if c.want == 200 && !strings.Contains(body, "stsdiag_test_total") {
			t.Errorf("token %q: not the metrics:\n%s", c.token, body)
		}
	}
	if len(sars) == 0 || sars[0].NonResourceAttributes == nil || *sars[0].NonResourceAttributes != (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) {
		t.Errorf("SubjectAccessReviews: %+v", sars)
	}
	if _, err := http.Get("http://" + o.MetricsAddr + "/metrics"); err == nil {
		// a TLS server answers plain HTTP with 400; what matters is no metrics in clear
		code, body := get(t, http.DefaultClient, "http://"+o.MetricsAddr+"/metrics", "good")
		if code == 200 || strings.Contains(body, "stsdiag_") {
			t.Errorf("plain HTTP on the TLS port: %d %s", code, body)
		}
	}
	if code, _ := get(t, http.DefaultClient, "http://"+o.HealthAddr+"/healthz", ""); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, _ := get(t, http.DefaultClient, "http://"+o.HealthAddr+"/metrics", "good"); code != 404 {
		t.Errorf("/metrics on the probe port: %d, want 404", code)
	}
}

// TestMetricsCertificateFromDir: the key pair of --metrics-cert-dir is served (a client that
// trusts only it connects); without one the certificate is a self-signed one for localhost.
func TestMetricsCertificateFromDir(t *testing.T) {
	var sars []authorizationv1.SubjectAccessReviewSpec
	api := fakeReviewer(t, &sars)
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("stsdiag.stsdiag.svc", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	o := serve.Options{MetricsAddr: freeAddr(t), HealthAddr: freeAddr(t), MetricsCertDir: dir, RESTConfig: &rest.Config{Host: api.URL}}
	start(t, o)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := get(t, client, "https://"+o.MetricsAddr+"/metrics", "good"); code != 200 {
		t.Errorf("with the mounted certificate: %d %s", code, body)
	}

	empty := serve.Options{MetricsAddr: freeAddr(t), HealthAddr: freeAddr(t), MetricsCertDir: t.TempDir(), RESTConfig: &rest.Config{Host: api.URL}}
	start(t, empty)
	conn, err := tls.Dial("tcp", empty.MetricsAddr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	if !strings.HasPrefix(leaf.Subject.CommonName, "localhost@") { // certutil: host@unix-time
		t.Errorf("fallback certificate for %q, want localhost", leaf.Subject.CommonName)
	}
	if _, err := tls.Dial("tcp", empty.MetricsAddr, &tls.Config{RootCAs: pool}); err == nil {
		t.Error("the fallback verified against the directory's (absent) certificate")
	}
}

// TestMetricsInsecureOneAddress: --metrics-insecure with --health-addr = --metrics-addr is the
// former behaviour: one plain listener, /metrics to anyone.
func TestMetricsInsecureOneAddress(t *testing.T) {
	addr := freeAddr(t)
	start(t, serve.Options{MetricsAddr: addr, HealthAddr: addr, MetricsInsecure: true})
	if code, body := get(t, http.DefaultClient, "http://"+addr+"/metrics", ""); code != 200 || !strings.Contains(body, "stsdiag_") {
		t.Errorf("/metrics: %d %s", code, body)
	}
}

// TestSecureMetricsNeedTwoAddresses: TLS /metrics and plain probes cannot share a listener.
func TestSecureMetricsNeedTwoAddresses(t *testing.T) {
	addr := freeAddr(t)
	_, err := serve.Start(context.Background(), serve.Options{MetricsAddr: addr, HealthAddr: addr}, serve.Endpoints{Metrics: metrics(), Ready: func() bool { return true }}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "two addresses") {
		t.Fatalf("got %v", err)
	}
}

// TestProbes: /readyz answers 503 until ready, then 200; /healthz answers 500 with the
// watchdog's error, 200 without one.
func TestProbes(t *testing.T) {
	var ready atomic.Bool
	var unhealthy atomic.Bool
	o := serve.Options{HealthAddr: freeAddr(t)}
	stop, err := serve.Start(context.Background(), o, serve.Endpoints{Metrics: metrics(), Ready: ready.Load,
		Healthy: func(*http.Request) error {
			if unhealthy.Load() {
				return errors.New("failed election to renew leadership on lease stsdiag-watch")
			}
			return nil
		}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	base := "http://" + o.HealthAddr
	if code, body := get(t, http.DefaultClient, base+"/readyz", ""); code != 503 || body != "informers not synced\n" {
		t.Errorf("/readyz before ready: %d %q", code, body)
	}
	ready.Store(true)
	if code, body := get(t, http.DefaultClient, base+"/readyz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/readyz when ready: %d %q", code, body)
	}
	if code, body := get(t, http.DefaultClient, base+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	unhealthy.Store(true)
	if code, body := get(t, http.DefaultClient, base+"/healthz", ""); code != 500 || body != "failed election to renew leadership on lease stsdiag-watch\n" {
		t.Errorf("/healthz with the watchdog failing: %d %q", code, body)
	}
}
