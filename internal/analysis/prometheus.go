package analysis

// Measurements as metricproviders/prometheus/prometheus.go @ argo-rollouts 9f8d111d8f8e takes
// them: an instant query, its result turned into `result` (processResponse), its value
// formatted as Argo stores it, errors marked as utils/metric/metric.go's MarkMeasurementError.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Measurement is one query of a metric and its verdict.
type Measurement struct {
	Phase                 Phase
	Value                 string // as Argo formats it: "0.5" for a scalar, "[0.5,1]" for a vector
	Message               string // the error, for an Error measurement
	StartedAt, FinishedAt time.Time
}

// MetricResult is a metric's phase, tallies and latest measurements (Argo's MetricResult).
type MetricResult struct {
	Name, Query, SuccessCondition, FailureCondition string
	Phase                                           Phase
	Message                                         string // the last measurement's message when the phase last changed
	Count                                           int32  // Successful + Failed + Inconclusive
	Successful, Failed, Inconclusive, Error         int32
	ConsecutiveError                                int32 // reset by any measurement that is not an Error
	ConsecutiveSuccess                              int32 // reset by any measurement that is not Successful
	Measurements                                    []Measurement
}

// Result is an analysis: its phase combines the metrics' phases as Argo's AnalysisRun does.
type Result struct {
	Phase   Phase
	Message string // why, when a metric breached a limit (Argo's run message)
	Metrics []MetricResult
}

// Querier is what a measurement needs: one instant query.
type Querier interface {
	Query(ctx context.Context, query string, at time.Time) (model.Value, error)
}

// Connection is how to reach Prometheus.
type Connection struct {
	Address               string // http(s) URL; a path prefix is kept (/api/v1/query is appended)
	BearerToken           string // sent as Authorization: Bearer
	CAFile                string // PEM bundle trusted instead of the system's
	CAData                []byte // PEM bundle trusted instead of the system's, with CAFile's
	InsecureSkipTLSVerify bool
	Headers               map[string]string // set on every request, after BearerToken
	Timeout               time.Duration     // whole-request limit of the HTTP client; 0: none
	Transport             http.RoundTripper // when set, CAFile and InsecureSkipTLSVerify must not be
}

// Connection returns the connection a metric names: its address, insecure flag and headers.
func (p Prometheus) Connection() Connection {
	return Connection{Address: p.Address, InsecureSkipTLSVerify: p.Insecure, Headers: p.Headers}
}

// NewQuerier returns a Querier over client_golang's API client.
func NewQuerier(c Connection) (Querier, error) {
	if c.Address == "" {
		return nil, errors.New("prometheus address is not configured")
	}
	if !isURL(c.Address) {
		return nil, fmt.Errorf("prometheus address %q is not a URL", c.Address)
	}
	rt := c.Transport
	if rt != nil && (c.CAFile != "" || len(c.CAData) > 0 || c.InsecureSkipTLSVerify) {
		return nil, errors.New("prometheus connection: CAFile, CAData and InsecureSkipTLSVerify do not apply to a given Transport")
	}
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if c.CAFile != "" || len(c.CAData) > 0 || c.InsecureSkipTLSVerify {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: c.InsecureSkipTLSVerify}
			if c.CAFile != "" || len(c.CAData) > 0 {
				pool := x509.NewCertPool()
				if c.CAFile != "" {
					pem, err := os.ReadFile(c.CAFile)
					if err != nil {
						return nil, fmt.Errorf("prometheus CA: %w", err)
					}
					if !pool.AppendCertsFromPEM(pem) {
						return nil, fmt.Errorf("prometheus CA: no certificate in %s", c.CAFile)
					}
				}
				if len(c.CAData) > 0 && !pool.AppendCertsFromPEM(c.CAData) {
					return nil, errors.New("prometheus CA: no certificate in the CA data")
				}
				tr.TLSClientConfig.RootCAs = pool
			}
		}
		rt = tr
	}
	headers := http.Header{}
	if c.BearerToken != "" {
		headers.Set("Authorization", "Bearer "+c.BearerToken)
	}
	for k, v := range c.Headers {
		headers.Set(k, v)
	}
	if len(headers) > 0 {
		rt = headerRoundTripper{headers: headers, next: rt}
	}
	client, err := api.NewClient(api.Config{Address: c.Address, Client: &http.Client{Transport: rt, Timeout: c.Timeout}})
	if err != nil {
		return nil, err
	}
	return querier{api: promv1.NewAPI(client)}, nil
}

type querier struct{ api promv1.API }

// Query drops Prometheus' warnings: a Measurement has no place for them.
func (q querier) Query(ctx context.Context, query string, at time.Time) (model.Value, error) {
	v, _, err := q.api.Query(ctx, query, at)
	return v, err
}

// headerRoundTripper sets headers on each request, as Argo's httpHeadersRoundTripper.
type headerRoundTripper struct {
	headers http.Header
	next    http.RoundTripper
}

func (h headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// ServiceProxy reaches a Service's Prometheus through the API server's service proxy, with
// cfg's credentials: address API-SERVER/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy.
func ServiceProxy(cfg *rest.Config, namespace, name, port, scheme string) (Connection, error) {
	if namespace == "" || name == "" {
		return Connection{}, errors.New("service proxy: namespace and name are required")
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return Connection{}, err
	}
	svc := name
	if port != "" {
		svc += ":" + port
	}
	if scheme != "" {
		svc = scheme + ":" + svc
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/namespaces/" + namespace + "/services/" + svc + "/proxy"
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return Connection{}, err
	}
	return Connection{Address: u.String(), Transport: rt}, nil
}

// Address is a parsed --prometheus value: a URL, or a Service behind the API server proxy.
type Address struct {
	URL                              string
	Namespace, Service, Port, Scheme string
}

// ParseAddress reads "http(s)://HOST[:PORT][/PATH]" or "service/NAMESPACE/[SCHEME:]NAME[:PORT]".
func ParseAddress(s string) (Address, error) {
	if spec, ok := strings.CutPrefix(s, "service/"); ok {
		ns, svc, ok := strings.Cut(spec, "/")
		if !ok || ns == "" || svc == "" || strings.Contains(svc, "/") {
			return Address{}, fmt.Errorf("prometheus address %q: want service/NAMESPACE/NAME[:PORT]", s)
		}
		a := Address{Namespace: ns}
		parts := strings.Split(svc, ":")
		switch len(parts) {
		case 1:
			a.Service = parts[0]
		case 2:
			a.Service, a.Port = parts[0], parts[1]
		case 3:
			a.Scheme, a.Service, a.Port = parts[0], parts[1], parts[2]
		default:
			return Address{}, fmt.Errorf("prometheus address %q: want service/NAMESPACE/[SCHEME:]NAME[:PORT]", s)
		}
		if a.Service == "" || (len(parts) > 1 && a.Port == "") {
			return Address{}, fmt.Errorf("prometheus address %q: want service/NAMESPACE/[SCHEME:]NAME[:PORT]", s)
		}
		return a, nil
	}
	if !isURL(s) {
		return Address{}, fmt.Errorf("prometheus address %q: want an http(s) URL or service/NAMESPACE/NAME[:PORT]", s)
	}
	return Address{URL: s}, nil
}

// Connection returns a's connection; cfg is used for a Service only.
func (a Address) Connection(cfg *rest.Config) (Connection, error) {
	if a.URL != "" {
		return Connection{Address: a.URL}, nil
	}
	if cfg == nil {
		return Connection{}, errors.New("prometheus service proxy: no Kubernetes config")
	}
	return ServiceProxy(cfg, a.Namespace, a.Service, a.Port, a.Scheme)
}

// Measure takes one measurement of m with q, querying at now(), within m's timeout (default
// 30s), and evaluates its conditions as Argo does. A failed query, a result type other than
// scalar, vector or matrix, or a condition that cannot be evaluated is an Error measurement.
func Measure(ctx context.Context, q Querier, m Metric, now func() time.Time) Measurement {
	if now == nil {
		now = time.Now
	}
	meas := Measurement{StartedAt: now()}
	timeout := m.Prometheus.Timeout
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := q.Query(qctx, m.Prometheus.Query, meas.StartedAt)
	if err != nil {
		return markError(meas, err, now)
	}
	value, phase, err := processResponse(m, v)
	if err != nil {
		return markError(meas, err, now)
	}
	meas.Value = value
	meas.Phase = phase
	meas.FinishedAt = now()
	return meas
}

func markError(meas Measurement, err error, now func() time.Time) Measurement {
	meas.Phase = PhaseError
	meas.Message = err.Error()
	meas.FinishedAt = now()
	return meas
}

// processResponse is Argo's: a scalar is a float64 `result`, a vector (or a matrix, flattened)
// a []float64, empty when there is no data.
func processResponse(m Metric, response model.Value) (string, Phase, error) {
	switch value := response.(type) {
	case *model.Scalar:
		phase, err := evaluateResult(float64(value.Value), m)
		return value.Value.String(), phase, err
	case model.Matrix:
		var samples []model.SampleValue
		for _, stream := range value {
			if stream != nil {
				for _, s := range stream.Values {
					samples = append(samples, s.Value)
				}
			}
		}
		phase, err := evaluateResult(toFloats(samples), m)
		return formatSamples(samples), phase, err
	case model.Vector:
		var samples []model.SampleValue
		for _, s := range value {
			if s != nil {
				samples = append(samples, s.Value)
			}
		}
		phase, err := evaluateResult(toFloats(samples), m)
		return formatSamples(samples), phase, err
	default:
		return "", PhaseError, errors.New("Prometheus metric type not supported")
	}
}

// toFloats never returns nil: `result` of an empty vector is [], not nil (isNil(result) is false).
func toFloats(samples []model.SampleValue) []float64 {
	out := make([]float64, 0, len(samples))
	for _, s := range samples {
		out = append(out, float64(s))
	}
	return out
}

func formatSamples(samples []model.SampleValue) string {
	parts := make([]string, 0, len(samples))
	for _, s := range samples {
		parts = append(parts, s.String())
	}
	return "[" + strings.Join(parts, ",") + "]"
}
