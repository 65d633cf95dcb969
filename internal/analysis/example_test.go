package analysis_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"k8s.io/utils/clock"

	"github.com/stsdiag/stsdiag/internal/analysis"
)

// Argo's own example template (docs/features/analysis.md), bound to a service name.
func ExampleParse() {
	tmpl, err := analysis.ParseFile("../../testdata/analysis/argo-success-rate.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	bound, err := tmpl.Bind(map[string]string{"service-name": "guestbook-svc.default.svc.cluster.local"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range bound.Metrics {
		fmt.Printf("%s: every %s, indefinite %v, successful when %s, failureLimit %d\n",
			m.Name, m.Interval, m.Indefinite(), m.SuccessCondition, m.FailureLimit)
		fmt.Println(m.Prometheus.Address)
		fmt.Print(m.Prometheus.Query)
	}

	_, err = analysis.ParseFile("../../testdata/analysis/unsupported-web.yaml")
	fmt.Println(err)
	// Output:
	// success-rate: every 5m0s, indefinite true, successful when result[0] >= 0.95, failureLimit 3
	// http://prometheus.example.com:9090
	// sum(irate(
	//   istio_requests_total{reporter="source",destination_service=~"guestbook-svc.default.svc.cluster.local",response_code!~"5.*"}[5m]
	// )) /
	// sum(irate(
	//   istio_requests_total{reporter="source",destination_service=~"guestbook-svc.default.svc.cluster.local"}[5m]
	// ))
	// analysis template success-rate: metric success-rate: provider web is not supported: stsdiag queries Prometheus only
}

// One measurement (no count, no interval) against a server speaking Prometheus' HTTP API.
func ExampleRun() {
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767323045,"0.97"]}]}}`)
	}))
	defer prom.Close()

	metric := analysis.Metric{
		Name:             "success-rate",
		SuccessCondition: "result[0] >= 0.95",
		Prometheus:       analysis.Prometheus{Query: `sum(rate(http_requests_total{code!~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`},
	}
	querier := func(analysis.Metric) (analysis.Querier, error) {
		return analysis.NewQuerier(analysis.Connection{Address: prom.URL})
	}
	res := analysis.Run(context.Background(), querier, []analysis.Metric{metric}, clock.RealClock{}, nil)
	fmt.Println(res.Phase, res.Metrics[0].Measurements[0].Value)
	// Output: Successful [0.97]
}
