package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientfeatures "k8s.io/client-go/features"

	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/connect"
)

type gates map[clientfeatures.Feature]bool

func (g gates) Enabled(f clientfeatures.Feature) bool { return g[f] }

// watch fills its informers by LISTs unless KUBE_FEATURE_WatchListClient says otherwise; other
// gates are client-go's.
func TestListInformers(t *testing.T) {
	g := listInformers{gates{clientfeatures.WatchListClient: true, clientfeatures.InformerResourceVersion: true}}
	if g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("WatchListClient on without KUBE_FEATURE_WatchListClient")
	}
	if !g.Enabled(clientfeatures.InformerResourceVersion) {
		t.Fatal("another gate changed")
	}
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	if !g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("KUBE_FEATURE_WatchListClient=true ignored")
	}
}

// TestWatchPrometheusFlags: watch's --prometheus flags are canary's, checked before anything
// starts: one error line, exit 2.
func TestWatchPrometheusFlags(t *testing.T) {
	kubeconfig := kubeconfigFor(t, "https://127.0.0.1:1")
	missing := filepath.Join(t.TempDir(), "token")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--prometheus-token-file", missing}, "error: --prometheus-token-file: open " + missing + ": no such file or directory\n"},
		{[]string{"watch", "--prometheus", "prometheus:9090"}, "error: --prometheus: "},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append(c.args, "--kubeconfig", kubeconfig, "--metrics-addr", "", "--health-addr", ""), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != ExitError || out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 2 and %q", code, out.String(), errOut.String(), c.want)
			}
		})
	}
}

// TestPrometheusSecret: --prometheus-secret reads the address, the token and the CA of
// Prometheus from a Secret with one GET; the querier then reaches a TLS Prometheus that trusts
// only that token, verifying its certificate with that CA.
func TestPrometheusSecret(t *testing.T) {
	var sawToken atomic.Value
	prom := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"0.25"]}]}}`)
	}))
	defer prom.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: prom.Certificate().Raw})
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "prom", Namespace: "monitoring"},
		Data: map[string][]byte{"address": []byte(prom.URL), "token": []byte("s3cret\n"), "ca.crt": ca}}
	var gets atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/namespaces/monitoring/secrets/prom" {
			http.NotFound(w, r)
			return
		}
		gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(secret)
	}))
	defer api.Close()
	f := &prometheusFlags{connect.Prometheus{Secret: "monitoring/prom"}}
	d, err := f.Dialer(configFlagsFor(kubeconfigFor(t, api.URL)))
	if err != nil {
		t.Fatal(err)
	}
	q, err := d.Querier(analysis.Metric{Name: "errors"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := q.Query(context.Background(), "up", time.Now())
	if err != nil || v.String() != "{} => 0.25 @[1700000000]" {
		t.Fatalf("query: %v %v", v, err)
	}
	if got := sawToken.Load(); got != "Bearer s3cret" || gets.Load() != 1 {
		t.Errorf("Authorization %q, %d GETs of the Secret; want Bearer s3cret and 1", got, gets.Load())
	}
	if _, err := (&prometheusFlags{connect.Prometheus{Secret: "monitoring/other"}}).Dialer(configFlagsFor(kubeconfigFor(t, api.URL))); err == nil || !strings.HasPrefix(err.Error(), "--prometheus-secret monitoring/other: ") {
		t.Errorf("a missing Secret: %v", err)
	}
}

// watch holds the heap to 50% past what is live unless GOGC says otherwise.
func TestWatchGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GOGC unset: GC percent %d, want 50", got)
	}
	t.Setenv("GOGC", "100")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want 100 (the environment's)", got)
	}
}
