package watch

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the Prometheus metrics of watch, all prefixed stsdiag_.
type Metrics struct {
	Registry *prometheus.Registry
	// findings is stsdiag_findings{code,namespace} and stsdiag_statefulset_findings{namespace,
	// statefulset,code,reason}, computed from the running controller at scrape time.
	findings      *findingsCollector
	FindingsTotal *prometheus.CounterVec
	Repairs       *prometheus.CounterVec
	// CanarySteps counts what watch did to the canaries declared on StatefulSets (canary.go).
	CanarySteps *prometheus.CounterVec
	// CanaryAnalysisMeasurements and CanaryAnalysisRuns count the measurements and the ended
	// runs of the analyses declared with the canaries (analysis.go), by namespace and phase.
	CanaryAnalysisMeasurements *prometheus.CounterVec
	CanaryAnalysisRuns         *prometheus.CounterVec
	Latency                    prometheus.Histogram
	// Startup is stsdiag_startup_seconds{phase}: from the process's start to the informer
	// caches synced ("synced") and to the first diagnosis of every StatefulSet ("diagnosed"),
	// which with all namespaces happens as the caches' first LISTs are read, often before sync.
	Startup *prometheus.GaugeVec
}

// NewMetrics registers the metrics on a fresh registry (with Go and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		findings: &findingsCollector{
			byNamespace: prometheus.NewDesc("stsdiag_findings", "Findings present now, by code and namespace.",
				[]string{"code", "namespace"}, nil),
			// One series per StatefulSet with a finding now and per code and reason: the series
			// follow the unsettled StatefulSets, not the cluster's size; a pod is never a label.
			byStatefulSet: prometheus.NewDesc("stsdiag_statefulset_findings",
				"Findings present now on each StatefulSet that has one, by code and reason (the low-level cause, e.g. ImagePullBackOff); no series for a StatefulSet without findings.",
				[]string{"namespace", "statefulset", "code", "reason"}, nil),
		},
		FindingsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_findings_total", Help: "Findings that appeared, by code and namespace.",
		}, []string{"code", "namespace"}),
		Repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_repairs_total", Help: "Repair actions, by action, result (done, skipped, failed, ratelimited) and namespace.",
		}, []string{"action", "result", "namespace"}),
		CanarySteps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_canary_steps_total", Help: "Canary partition changes by watch, by result (advanced, parked, rolledback, ratelimited) and namespace.",
		}, []string{"result", "namespace"}),
		CanaryAnalysisMeasurements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_canary_analysis_measurements_total", Help: "Measurements of the canary analyses watch runs (stsdiag.io/canary-analysis), by namespace and phase (Successful, Failed, Inconclusive, Error).",
		}, []string{"namespace", "phase"}),
		CanaryAnalysisRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stsdiag_canary_analysis_runs_total", Help: "Canary analysis runs watch ended, one per measured step, by namespace and phase (Successful, Failed, Inconclusive, Error).",
		}, []string{"namespace", "phase"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "stsdiag_diagnosis_duration_seconds", Help: "Time to diagnose one StatefulSet from the informer caches.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		Startup: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stsdiag_startup_seconds", Help: "Seconds from the process's start to the informer caches synced (phase synced) and to the first diagnosis of every StatefulSet (phase diagnosed; with all namespaces made while the caches fill, so it may come first), in the current leader term.",
		}, []string{"phase"}),
	}
	m.Registry.MustRegister(m.findings, m.FindingsTotal, m.Repairs, m.CanarySteps, m.CanaryAnalysisMeasurements, m.CanaryAnalysisRuns, m.Latency, m.Startup,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// findingLabels are the labels of one series of stsdiag_statefulset_findings; stsdiag_findings
// sums them by code and namespace.
type findingLabels struct{ namespace, statefulSet, code, reason string }

// findingsCollector reports the findings of the controller that runs now (a new leader term makes a
// new controller), read when Prometheus scrapes.
type findingsCollector struct {
	byNamespace, byStatefulSet *prometheus.Desc
	mu                         sync.Mutex
	source                     func() map[findingLabels]int
}

func (f *findingsCollector) setSource(source func() map[findingLabels]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.source = source
}

// Describe implements prometheus.Collector.
func (f *findingsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.byNamespace
	ch <- f.byStatefulSet
}

// Collect implements prometheus.Collector.
func (f *findingsCollector) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	source := f.source
	f.mu.Unlock()
	if source == nil {
		return
	}
	type codeNamespace struct{ code, namespace string }
	byNamespace := map[codeNamespace]int{}
	for l, n := range source() {
		byNamespace[codeNamespace{l.code, l.namespace}] += n
		ch <- prometheus.MustNewConstMetric(f.byStatefulSet, prometheus.GaugeValue, float64(n), l.namespace, l.statefulSet, l.code, l.reason)
	}
	for l, n := range byNamespace {
		ch <- prometheus.MustNewConstMetric(f.byNamespace, prometheus.GaugeValue, float64(n), l.code, l.namespace)
	}
}

// findingCounts counts the findings present now by StatefulSet, code and reason, for the
// stsdiag_statefulset_findings and stsdiag_findings gauges (computed when Prometheus scrapes,
// never half-filled). seen holds only the StatefulSets that have findings.
func (c *Controller) findingCounts() map[findingLabels]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[findingLabels]int{}
	for _, state := range c.seen {
		for _, f := range state.findings {
			out[findingLabels{namespace: f.Namespace, statefulSet: f.StatefulSet, code: string(f.Code), reason: f.Reason}]++
		}
	}
	return out
}
