package stepanalysis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary/stepanalysis"
)

const errorRatio = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-ratio
spec:
  args:
  - name: namespace
  - name: pods
  - name: revision
  - name: job
    value: app
  metrics:
  - name: errors
    successCondition: result[0] <= 0.1
    provider:
      prometheus:
        address: http://prometheus.invalid:9090
        query: errors{job="{{args.job}}",namespace="{{args.namespace}}",pod=~"{{args.pods}}",revision="{{args.revision}}"}
`

var canaryNames = stepanalysis.Names{Arg: "--arg", Address: "give --prometheus"}

func parse(t *testing.T, yaml string) *analysis.Template {
	t.Helper()
	tmpl, err := analysis.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestCheck: what a run could not measure is refused before anything changes, in the words of
// where the values came from.
func TestCheck(t *testing.T) {
	tmpl := parse(t, strings.Replace(errorRatio, "        address: http://prometheus.invalid:9090\n", "", 1))
	watchNames := stepanalysis.Names{Arg: "annotation stsdiag.io/canary-analysis-args:", Address: "give watch --prometheus"}
	for _, tc := range []struct {
		args    map[string]string
		address bool
		names   stepanalysis.Names
		want    string
	}{
		{nil, false, canaryNames, "analysis template error-ratio: metric errors names no Prometheus address: give --prometheus"},
		{nil, false, watchNames, "analysis template error-ratio: metric errors names no Prometheus address: give watch --prometheus"},
		{nil, true, canaryNames, ""},
		{map[string]string{"jobs": "x"}, true, canaryNames, "--arg jobs: analysis template error-ratio declares no such argument (it declares namespace, pods, revision, job)"},
		{map[string]string{"jobs": "x"}, true, watchNames, "annotation stsdiag.io/canary-analysis-args: jobs: analysis template error-ratio declares no such argument (it declares namespace, pods, revision, job)"},
		{map[string]string{"job": "other", "pods": "web-9"}, true, canaryNames, ""},
	} {
		err := stepanalysis.Check(&stepanalysis.Analysis{Template: tmpl, Args: tc.args}, tc.address, tc.names)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%v %v: %q, want %q", tc.args, tc.address, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%v %v: accepted, want %q", tc.args, tc.address, tc.want)
		}
	}
	missing := parse(t, strings.Replace(errorRatio, "  - name: job\n    value: app\n", "  - name: job\n", 1))
	if err := stepanalysis.Check(&stepanalysis.Analysis{Template: missing}, true, canaryNames); err == nil || !strings.Contains(err.Error(), "job") {
		t.Errorf("a value-less argument stsdiag does not fill: %v", err)
	}
}

func set() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4)},
		Status: appsv1.StatefulSetStatus{UpdateRevision: "web-b", CurrentRevision: "web-a"}}
}

// TestBindAndRun: the builtins are the step's: its canary pods (as a regular expression), the
// namespace and the update revision; a given value wins over the template's;
// the run is recorded as api/v1's AnalysisRun and each measurement reported.
func TestBindAndRun(t *testing.T) {
	var queries []string
	q := querier(func(query string) (model.Value, error) {
		queries = append(queries, query)
		return model.Vector{&model.Sample{Value: 0.05}}, nil
	})
	a := &stepanalysis.Analysis{Template: parse(t, errorRatio), Args: map[string]string{"job": "shop"},
		Querier: func(analysis.Metric) (analysis.Querier, error) { return q, nil }}
	s, err := a.Bind(set(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Pods, ",") != "web-3,web-2" {
		t.Errorf("pods %v", s.Pods)
	}
	var lines []string
	run := a.Run(context.Background(), s, func(m analysis.MetricResult) {
		if line, ok := stepanalysis.Measured(m); ok {
			lines = append(lines, line)
		}
	})
	want := `errors{job="shop",namespace="shop",pod=~"web-3|web-2",revision="web-b"}`
	if len(queries) != 1 || queries[0] != want {
		t.Errorf("queries %q, want %q", queries, want)
	}
	if run.Template != "error-ratio" || run.Phase != apiv1.AnalysisSuccessful || len(run.Metrics) != 1 || run.Metrics[0].Successful != 1 ||
		len(run.Metrics[0].Measurements) != 1 || run.Metrics[0].Measurements[0].Value != "[0.05]" || run.Metrics[0].Query != want {
		t.Errorf("run %+v", run)
	}
	if len(lines) != 1 || lines[0] != "metric errors: Successful [0.05] (1 successful, 0 failed, 0 inconclusive, 0 errors)" {
		t.Errorf("measured %q", lines)
	}
}

// TestStepMetrics: an indefinite metric (interval, no count) is measured once in a step without
// finite metrics, and left as it is beside one.
func TestStepMetrics(t *testing.T) {
	indefinite := strings.Replace(errorRatio, "    successCondition:", "    interval: 1m\n    successCondition:", 1)
	alone := stepanalysis.StepMetrics(parse(t, indefinite))
	if len(alone) != 1 || alone[0].Count == nil || *alone[0].Count != 1 {
		t.Errorf("alone: %+v", alone)
	}
	beside := parse(t, indefinite+`  - name: latency
    count: 2
    interval: 10s
    successCondition: result[0] < 1
    provider:
      prometheus:
        address: http://prometheus.invalid:9090
        query: latency
`)
	both := stepanalysis.StepMetrics(beside)
	if len(both) != 2 || both[0].Count != nil || *both[1].Count != 2 {
		t.Errorf("beside a finite metric: %+v", both)
	}
	if beside.Metrics[0].Count != nil {
		t.Error("StepMetrics changed the template's metrics")
	}
}

// TestMeasuredError: an Error measurement is worded with its message.
func TestMeasuredError(t *testing.T) {
	if _, ok := stepanalysis.Measured(analysis.MetricResult{Name: "errors"}); ok {
		t.Error("no measurement, yet worded")
	}
	m := analysis.MetricResult{Name: "errors", Error: 1, Measurements: []analysis.Measurement{{Phase: analysis.PhaseError, Message: "connection refused", FinishedAt: time.Now()}}}
	if line, _ := stepanalysis.Measured(m); line != "metric errors: Error connection refused (0 successful, 0 failed, 0 inconclusive, 1 errors)" {
		t.Errorf("%q", line)
	}
}

type querier func(string) (model.Value, error)

func (q querier) Query(_ context.Context, query string, _ time.Time) (model.Value, error) {
	return q(query)
}
