package canary_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary"
	"github.com/stsdiag/stsdiag/internal/canary/stepanalysis"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// errorRatio answers every query with the error ratio of the pods it names, and records the
// queries.
type errorRatio struct {
	mu      sync.Mutex
	ratio   float64
	down    bool
	queries []string
}

func (e *errorRatio) Query(_ context.Context, query string, at time.Time) (model.Value, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queries = append(e.queries, query)
	if e.down {
		return nil, errors.New(`Post "http://127.0.0.1:9/api/v1/query": dial tcp 127.0.0.1:9: connect: connection refused`)
	}
	return model.Vector{&model.Sample{Value: model.SampleValue(e.ratio), Timestamp: model.TimeFromUnixNano(at.UnixNano())}}, nil
}

const errorRatioTemplate = `apiVersion: argoproj.io/v1alpha1
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
    failureLimit: 0
    provider:
      prometheus:
        address: http://prometheus.invalid:9090
        query: sum(rate(app_requests_total{job="{{args.job}}",namespace="{{args.namespace}}",pod=~"{{args.pods}}",code="500"}[1m])) / sum(rate(app_requests_total{namespace="{{args.namespace}}",pod=~"{{args.pods}}",revision="{{args.revision}}"}[1m]))
`

func analysisOf(t *testing.T, q analysis.Querier, args map[string]string) *stepanalysis.Analysis {
	t.Helper()
	tmpl, err := analysis.Parse([]byte(errorRatioTemplate))
	if err != nil {
		t.Fatal(err)
	}
	a := &stepanalysis.Analysis{Template: tmpl, Args: args, Querier: func(analysis.Metric) (analysis.Querier, error) { return q, nil }}
	if err := stepanalysis.Check(a, false, stepanalysis.Names{Arg: "--arg", Address: "give --prometheus"}); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAnalysisSuccessfulSteps: each step's pods held healthy, then measured with 0% errors:
// every step passes, each with its analysis; the arguments are the step's pods, the namespace
// and the update revision, the template's own value kept.
func TestAnalysisSuccessfulSteps(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go playController(ctx, kube, "web-b")
	q := &errorRatio{}
	o := options("1", 0)
	o.Analysis = analysisOf(t, q, nil)
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if err != nil || res.Result != apiv1.WaitComplete {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("steps %+v", res.Steps)
	}
	for i, pods := range []string{`web-1`, `web-1|web-0`} {
		s := res.Steps[i]
		if s.Result != apiv1.StepPassed || s.Analysis == nil || s.Analysis.Phase != apiv1.AnalysisSuccessful || s.Analysis.Template != "error-ratio" ||
			len(s.Analysis.Metrics) != 1 || s.Analysis.Metrics[0].Successful != 1 || len(s.Analysis.Metrics[0].Measurements) != 1 ||
			s.Analysis.Metrics[0].Measurements[0].Value != "[0]" {
			t.Errorf("step %d: %+v analysis %+v", i, s, s.Analysis)
			continue
		}
		want := `sum(rate(app_requests_total{job="app",namespace="shop",pod=~"` + pods + `",code="500"}[1m])) / sum(rate(app_requests_total{namespace="shop",pod=~"` + pods + `",revision="web-b"}[1m]))`
		if got := s.Analysis.Metrics[0].Query; got != want {
			t.Errorf("step %d query:\n%s\nwant\n%s", i, got, want)
		}
	}
}

// TestAnalysisFailedRollsBack: the canary pod is Ready on web-b but serves 50% errors: the
// analysis fails, the template goes back to web-a with no pod deleted by canary (the controller
// replaces the Ready canary pod), the partition is restored, RolledBack names the metric.
func TestAnalysisFailedRollsBack(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go playController(ctx, kube, "web-b")
	o := options("1", 0)
	o.Analysis = analysisOf(t, &errorRatio{ratio: 0.5}, nil)
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if err != nil || res.Result != apiv1.WaitRolledBack {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	for _, want := range []string{"step 1 failed: analysis error-ratio failed: ", `Metric "errors" assessed Failed`, "last value [0.5]", "successCondition result[0] <= 0.1",
		`query: sum(rate(app_requests_total{job="app",namespace="shop",pod=~"web-1",code="500"}[1m]))`, "rolled back to revision web-a (revision web-b failed), web-1 Ready on it again; partition restored to 2"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if len(res.Actions) != 1 || res.Actions[0].Kind() != apiv1.Rollback || res.Actions[0].Result != apiv1.ResultDone ||
		len(res.RolledBack) != 1 || res.RolledBack[0].Revision != "web-a" || res.Steps[0].Result != apiv1.StepFailed ||
		res.Steps[0].Analysis == nil || res.Steps[0].Analysis.Phase != apiv1.AnalysisFailed || res.Steps[1].Result != apiv1.StepPending {
		t.Errorf("actions %+v rolled back %+v steps %+v", res.Actions, res.RolledBack, res.Steps)
	}
	set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || set.Spec.Template.Spec.Containers[0].Image != "app:a" || *set.Spec.UpdateStrategy.RollingUpdate.Partition != 2 {
		t.Errorf("template %v partition %v (%v), want app:a and 2", set.Spec.Template.Spec.Containers[0].Image, *set.Spec.UpdateStrategy.RollingUpdate.Partition, err)
	}
	web0, err := kube.CoreV1().Pods("shop").Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil || web0.UID != "uid-web-0-web-a" {
		t.Errorf("web-0, below the partition, was replaced: %v %v", web0.UID, err)
	}
}

// TestAnalysisInconclusivePauses: Prometheus is unreachable: the measurements are Errors,
// retried, and beyond consecutiveErrorLimit the canary pauses — Inconclusive, nothing rolled
// back, the partition where the step set it.
func TestAnalysisInconclusivePauses(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go playController(ctx, kube, "web-b")
	o := options("1", 0)
	o.Analysis = analysisOf(t, &errorRatio{down: true}, nil)
	// The first error ends it: no 10 s retries here.
	tmpl, err := analysis.Parse([]byte(strings.Replace(errorRatioTemplate, "    failureLimit: 0\n", "    failureLimit: 0\n    consecutiveErrorLimit: 0\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	o.Analysis.Template = tmpl
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if err != nil || res.Result != apiv1.CanaryInconclusive {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	want := `step 1 paused: analysis error-ratio could not be measured: Metric "errors" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0)`
	if !strings.HasPrefix(res.Message, want) || !strings.HasSuffix(res.Message, "nothing rolled back, no step forward, the partition stays 1") {
		t.Errorf("message %q, want it to start %q", res.Message, want)
	}
	if len(res.Actions) != 0 || res.Steps[0].Result != apiv1.StepInconclusive || res.Steps[0].Analysis.Metrics[0].Error != 1 {
		t.Errorf("actions %+v steps %+v", res.Actions, res.Steps)
	}
	if p := partitionOf(t, kube); p != 1 {
		t.Errorf("partition %d, want the first step's 1", p)
	}
}
