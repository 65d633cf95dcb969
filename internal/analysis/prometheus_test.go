package analysis

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Prometheus HTTP API bodies (/api/v1/query).
const (
	bodyEmpty    = `{"status":"success","data":{"resultType":"vector","result":[]}}`
	bodyScalar10 = `{"status":"success","data":{"resultType":"scalar","result":[1767323045,"10"]}}`
	bodyString   = `{"status":"success","data":{"resultType":"string","result":[1767323045,"up"]}}`
	bodyBadData  = `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:3: parse error: unexpected end of input"}`
)

func bodyVector(values ...string) string {
	s := `{"status":"success","data":{"resultType":"vector","result":[`
	for i, v := range values {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"metric":{"pod":"web-%d"},"value":[1767323045,%q]}`, i, v)
	}
	return s + `]}}`
}

type reply struct {
	status int
	body   string
}

// promServer speaks enough of the Prometheus HTTP API: it serves replies in turn (the last one
// repeats) and records each request.
type promServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []reply
	requests []seen
}

type seen struct {
	method, path, query, time, authorization, orgID string
}

func newPromServer(t *testing.T, tls bool, replies ...reply) *promServer {
	p := &promServer{replies: replies}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("form: %v", err)
		}
		p.mu.Lock()
		p.requests = append(p.requests, seen{r.Method, r.URL.Path, r.Form.Get("query"), r.Form.Get("time"), r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID")})
		rep := p.replies[0]
		if len(p.replies) > 1 {
			p.replies = p.replies[1:]
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprint(w, rep.body)
	})
	if tls {
		p.Server = httptest.NewUnstartedServer(h)
		p.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake of TestNewQuerierTLS
		p.StartTLS()
	} else {
		p.Server = httptest.NewServer(h)
	}
	t.Cleanup(p.Close)
	return p
}

func (p *promServer) seen() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.requests...)
}

func ok(body string) reply { return reply{http.StatusOK, body} }

// Ported from metricproviders/prometheus/prometheus_test.go @ argo-rollouts 9f8d111d8f8e
// (TestProcessScalarResponse, TestProcessNaNResponse, TestProcessInfResponse,
// TestProcessVectorResponse, TestProcessInvalidResponse, and the matrix of
// TestRunSuccessfullyWithRangeQuery), plus empty results.
func TestProcessResponse(t *testing.T) {
	scalar := func(f float64) model.Value { return &model.Scalar{Value: model.SampleValue(f)} }
	vector := model.Vector{{Value: 10}, {Value: 11}}
	matrix := model.Matrix{
		{Values: []model.SamplePair{{Timestamp: 1234, Value: 11}, {Timestamp: 1234, Value: 12}}},
		{Values: []model.SamplePair{{Timestamp: 1234, Value: 13}, {Timestamp: 1234, Value: 14}}},
	}
	for _, c := range []struct {
		name             string
		success, failure string
		response         model.Value
		value            string
		phase            Phase
		err              string
	}{
		{"scalar", "result == 10", "result != 10", scalar(10), "10", PhaseSuccessful, ""},
		{"NaN inconclusive", "result >= 0.9", "result < 0.9", scalar(math.NaN()), "NaN", PhaseInconclusive, ""},
		{"NaN success", "result >= 0.9 || isNaN(result)", "", scalar(math.NaN()), "NaN", PhaseSuccessful, ""},
		{"NaN failure", "result >= 0.9", "", scalar(math.NaN()), "NaN", PhaseFailed, ""},
		{"Inf success", "result >= 0.9", "", scalar(math.Inf(0)), "+Inf", PhaseSuccessful, ""},
		{"Inf failure", "", "isInf(result)", scalar(math.Inf(0)), "+Inf", PhaseFailed, ""},
		{"vector", "10 in result", "len(result) != 2", vector, "[10,11]", PhaseSuccessful, ""},
		{"matrix", "all(result, # > 10)", "all(result, # < 10)", matrix, "[11,12,13,14]", PhaseSuccessful, ""},
		{"invalid", "true", "true", nil, "", PhaseError, "Prometheus metric type not supported"},
		{"string", "true", "", &model.String{Value: "up"}, "", PhaseError, "Prometheus metric type not supported"},
		{"empty vector, result[0]", "result[0] >= 0.95", "", model.Vector{}, "[]", PhaseError,
			`could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`},
		{"empty vector, len guard success", "len(result) == 0 || result[0] >= 0.95", "", model.Vector{}, "[]", PhaseSuccessful, ""},
		{"empty vector, len guard failure", "len(result) > 0 && result[0] >= 0.95", "", model.Vector{}, "[]", PhaseFailed, ""},
		{"empty vector is not nil", "isNil(result)", "", model.Vector{}, "[]", PhaseFailed, ""},
		{"empty matrix", "", "", model.Matrix{}, "[]", PhaseSuccessful, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			value, phase, err := processResponse(Metric{SuccessCondition: c.success, FailureCondition: c.failure}, c.response)
			if value != c.value || phase != c.phase || errString(err) != map[bool]string{true: "<nil>", false: c.err}[c.err == ""] {
				t.Errorf("got %q %s %v, want %q %s %q", value, phase, err, c.value, c.phase, c.err)
			}
		})
	}
}

type fakeQuerier struct {
	value    model.Value
	err      error
	at       time.Time
	query    string
	deadline time.Duration // from at
}

func (f *fakeQuerier) Query(ctx context.Context, query string, at time.Time) (model.Value, error) {
	f.at, f.query = at, query
	if d, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(d)
	}
	return f.value, f.err
}

func ticking() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n-1) * time.Second)
	}
}

// TestRunSuccessfully, TestRunWithQueryError, TestRunWithEvaluationError.
func TestMeasure(t *testing.T) {
	m := Metric{Name: "foo", SuccessCondition: "result == 10", FailureCondition: "result != 10", Prometheus: Prometheus{Query: "test"}}
	for _, c := range []struct {
		name string
		q    *fakeQuerier
		want Measurement
	}{
		{"successful", &fakeQuerier{value: &model.Scalar{Value: 10}},
			Measurement{Phase: PhaseSuccessful, Value: "10", StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
		{"query error", &fakeQuerier{err: errors.New("bad big bug :(")},
			Measurement{Phase: PhaseError, Message: "bad big bug :(", StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
		{"evaluation error", &fakeQuerier{},
			Measurement{Phase: PhaseError, Message: "Prometheus metric type not supported", StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Measure(context.Background(), c.q, m, ticking())
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !c.q.at.Equal(t0) || c.q.query != "test" {
				t.Errorf("queried %q at %s, want test at %s", c.q.query, c.q.at, t0)
			}
		})
	}

	// The query's deadline: the metric's timeout, else 30s (NewPrometheusProvider).
	for _, c := range []struct {
		timeout, want time.Duration
	}{{0, 30 * time.Second}, {40 * time.Second, 40 * time.Second}} {
		q := &fakeQuerier{value: &model.Scalar{Value: 10}}
		m := m
		m.Prometheus.Timeout = c.timeout
		Measure(context.Background(), q, m, nil)
		if q.deadline > c.want || q.deadline < c.want-5*time.Second {
			t.Errorf("timeout %s: deadline in %s, want %s", c.timeout, q.deadline, c.want)
		}
	}
}

func TestMeasureHTTP(t *testing.T) {
	m := Metric{Name: "success-rate", SuccessCondition: "result[0] >= 0.95", Prometheus: Prometheus{Query: "sum(rate(x[5m]))"}}
	for _, c := range []struct {
		name  string
		reply reply
		want  Measurement
	}{
		{"vector", ok(bodyVector("0.97")), Measurement{Phase: PhaseSuccessful, Value: "[0.97]"}},
		{"two series", ok(bodyVector("0.5", "0.97")), Measurement{Phase: PhaseFailed, Value: "[0.5,0.97]"}},
		{"scalar", ok(bodyScalar10), Measurement{Phase: PhaseError,
			Message: `could not evaluate successCondition "result[0] >= 0.95": type float64[int] is undefined`}},
		{"no data", ok(bodyEmpty), Measurement{Phase: PhaseError, Value: "",
			Message: `could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`}},
		// client_golang does not decode a string result: the query errs before processResponse.
		{"string", ok(bodyString), Measurement{Phase: PhaseError,
			Message: `unmarshalerDecoder: unexpected value type "string", error found in #10 byte of ...|045,"up"]}|..., bigger context ...|{"resultType":"string","result":[1767323045,"up"]}|...`}},
		{"bad query", reply{http.StatusBadRequest, bodyBadData}, Measurement{Phase: PhaseError,
			Message: `bad_data: invalid parameter "query": 1:3: parse error: unexpected end of input`}},
		{"server error", reply{http.StatusInternalServerError, "oops"}, Measurement{Phase: PhaseError,
			Message: `server_error: server error: 500`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newPromServer(t, false, c.reply)
			q, err := NewQuerier(Connection{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got := Measure(context.Background(), q, m, func() time.Time { return t0 })
			c.want.StartedAt, c.want.FinishedAt = t0, t0
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			want := []seen{{method: "POST", path: "/api/v1/query", query: "sum(rate(x[5m]))", time: "1767323045"}}
			if diff := cmp.Diff(want, srv.seen(), cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewQuerierHeadersAndToken(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	q, err := NewQuerier(Connection{Address: srv.URL + "/prometheus", BearerToken: "tok", Headers: map[string]string{"X-Scope-OrgID": "tenant_a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Query(context.Background(), "up", t0); err != nil {
		t.Fatal(err)
	}
	want := []seen{{method: "POST", path: "/prometheus/api/v1/query", query: "up", time: "1767323045", authorization: "Bearer tok", orgID: "tenant_a"}}
	if diff := cmp.Diff(want, srv.seen(), cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// A header named Authorization wins over the token.
	srv2 := newPromServer(t, false, ok(bodyVector("1")))
	q, _ = NewQuerier(Connection{Address: srv2.URL, BearerToken: "tok", Headers: map[string]string{"Authorization": "Basic dTpw"}})
	if _, err := q.Query(context.Background(), "up", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := srv2.seen()[0]; got.authorization != "Basic dTpw" || got.time != "" {
		t.Errorf("authorization %q, time %q; want Basic dTpw and none", got.authorization, got.time)
	}
}

func TestNewQuerierTLS(t *testing.T) {
	srv := newPromServer(t, true, ok(bodyVector("1")))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		conn Connection
		err  string
	}{
		{"system roots", Connection{Address: srv.URL},
			fmt.Sprintf(`Post "%s/api/v1/query": tls: failed to verify certificate: x509: certificate signed by unknown authority`, srv.URL)},
		{"CA file", Connection{Address: srv.URL, CAFile: caFile}, ""},
		{"insecure", Connection{Address: srv.URL, InsecureSkipTLSVerify: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := NewQuerier(c.conn)
			if err != nil {
				t.Fatal(err)
			}
			_, err = q.Query(context.Background(), "up", t0)
			if got := errString(err); (c.err == "" && err != nil) || (c.err != "" && got != c.err) {
				t.Errorf("err = %s, want %q", got, c.err)
			}
		})
	}
}

func TestNewQuerierErrors(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conn Connection
		want string
	}{
		{Connection{}, "prometheus address is not configured"},
		{Connection{Address: ":invalid::url"}, `prometheus address ":invalid::url" is not a URL`},
		{Connection{Address: "prometheus:9090"}, `prometheus address "prometheus:9090" is not a URL`},
		{Connection{Address: "https://p", CAFile: notPEM}, "prometheus CA: no certificate in " + notPEM},
		{Connection{Address: "https://p", InsecureSkipTLSVerify: true, Transport: http.DefaultTransport},
			"prometheus connection: CAFile, CAData and InsecureSkipTLSVerify do not apply to a given Transport"},
	} {
		if _, err := NewQuerier(c.conn); errString(err) != c.want {
			t.Errorf("%+v: err = %v, want %q", c.conn, err, c.want)
		}
	}
}

func TestServiceProxy(t *testing.T) {
	var got seen
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = seen{method: r.Method, path: r.URL.Path, query: r.Form.Get("query"), authorization: r.Header.Get("Authorization")}
		fmt.Fprint(w, bodyVector("0.99"))
	}))
	defer apiServer.Close()

	conn, err := ServiceProxy(&rest.Config{Host: apiServer.URL, BearerToken: "kube-token"}, "monitoring", "prometheus-k8s", "9091", "https")
	if err != nil {
		t.Fatal(err)
	}
	if want := apiServer.URL + "/api/v1/namespaces/monitoring/services/https:prometheus-k8s:9091/proxy"; conn.Address != want {
		t.Errorf("address %s, want %s", conn.Address, want)
	}
	q, err := NewQuerier(conn)
	if err != nil {
		t.Fatal(err)
	}
	meas := Measure(context.Background(), q, Metric{SuccessCondition: "result[0] > 0.95", Prometheus: Prometheus{Query: "up"}}, nil)
	if meas.Phase != PhaseSuccessful || meas.Value != "[0.99]" {
		t.Errorf("measurement %+v", meas)
	}
	want := seen{method: "POST", path: "/api/v1/namespaces/monitoring/services/https:prometheus-k8s:9091/proxy/api/v1/query", query: "up", authorization: "Bearer kube-token"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}

	for _, c := range []struct {
		cfg                       *rest.Config
		ns, name, port, scheme, w string
	}{
		{&rest.Config{Host: "https://10.0.0.1:6443"}, "monitoring", "prometheus", "9090", "", "https://10.0.0.1:6443/api/v1/namespaces/monitoring/services/prometheus:9090/proxy"},
		{&rest.Config{Host: "https://example.com/k8s/"}, "monitoring", "prometheus", "", "", "https://example.com/k8s/api/v1/namespaces/monitoring/services/prometheus/proxy"},
		{&rest.Config{Host: "10.0.0.1:6443"}, "m", "p", "web", "http", "http://10.0.0.1:6443/api/v1/namespaces/m/services/http:p:web/proxy"},
		{&rest.Config{Host: "10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "m", "p", "9090", "", "https://10.0.0.1:6443/api/v1/namespaces/m/services/p:9090/proxy"},
	} {
		conn, err := ServiceProxy(c.cfg, c.ns, c.name, c.port, c.scheme)
		if err != nil || conn.Address != c.w || conn.Transport == nil {
			t.Errorf("%s: address %q, %v; want %q", c.cfg.Host, conn.Address, err, c.w)
		}
	}
}

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Address
		err  string
	}{
		{"http://prometheus.monitoring:9090", Address{URL: "http://prometheus.monitoring:9090"}, ""},
		{"service/monitoring/prometheus-k8s:9090", Address{Namespace: "monitoring", Service: "prometheus-k8s", Port: "9090"}, ""},
		{"service/monitoring/prometheus", Address{Namespace: "monitoring", Service: "prometheus"}, ""},
		{"service/monitoring/https:prometheus-k8s:web", Address{Namespace: "monitoring", Scheme: "https", Service: "prometheus-k8s", Port: "web"}, ""},
		{"service/monitoring", Address{}, `prometheus address "service/monitoring": want service/NAMESPACE/NAME[:PORT]`},
		{"service/monitoring/p:", Address{}, `prometheus address "service/monitoring/p:": want service/NAMESPACE/[SCHEME:]NAME[:PORT]`},
		{"prometheus:9090", Address{}, `prometheus address "prometheus:9090": want an http(s) URL or service/NAMESPACE/NAME[:PORT]`},
	} {
		got, err := ParseAddress(c.in)
		if got != c.want || (c.err == "" && err != nil) || (c.err != "" && errString(err) != c.err) {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %+v, %q", c.in, got, err, c.want, c.err)
		}
	}
	conn, err := Address{URL: "http://p:9090"}.Connection(nil)
	if err != nil || conn.Address != "http://p:9090" {
		t.Errorf("URL connection %+v, %v", conn, err)
	}
	if _, err := (Address{Namespace: "m", Service: "p"}).Connection(nil); errString(err) != "prometheus service proxy: no Kubernetes config" {
		t.Errorf("service without config: %v", err)
	}
}
