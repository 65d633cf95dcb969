package monitor

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of the monitor, all prefixed stsdiag_.
type Metrics struct {
	Registry      *prometheus.Registry
	Findings      *prometheus.GaugeVec
	FindingsTotal *prometheus.CounterVec
	Repairs       *prometheus.CounterVec
	Latency       prometheus.Histogram
}

// NewMetrics registers the metrics on a fresh registry (with Go and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stsdiag_findings", Help: "Findings present now, by code and namespace.",
		}, []string{"code", "namespace"}),
		FindingsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_findings_total", Help: "Findings that appeared, by code and namespace.",
		}, []string{"code", "namespace"}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_repairs_total", Help: "Repair actions, by action, result (done, skipped, failed, ratelimited) and namespace.",
		}, []string{"action", "result", "namespace"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "stsdiag_diagnosis_duration_seconds", Help: "Time to diagnose one StatefulSet from the informer caches.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
	}
	m.Registry.MustRegister(m.Findings, m.FindingsTotal, m.Repairs, m.Latency,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}
