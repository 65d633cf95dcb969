package canary

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
)

// Analysis gates each step on the application's own metrics (canary --analysis): once a step's
// pods held healthy for the hold, the template's metrics are measured as Argo Rollouts measures
// an AnalysisRun — Successful steps forward, Failed rolls the canary back, Inconclusive or
// Error pauses it.
//
// Metrics with a count (or neither count nor interval: one measurement) run to their end in
// every step. A metric with an interval and no count — Argo's background analysis — is
// measured at its interval for as long as the step's other metrics run, and once when it has
// none.
type Analysis struct {
	Template *analysis.Template
	// Args are the values given for the template's arguments (--arg); stsdiag fills those named
	// BuiltinArgs that the template declares without a value.
	Args map[string]string
	// Querier gives each metric its Prometheus (analysis.Dialer.Querier).
	Querier func(analysis.Metric) (analysis.Querier, error)
	// Clock paces the measurements (nil: the real clock).
	Clock clock.Clock
}

// Arguments stsdiag fills when the template declares them without a value.
const (
	ArgNamespace   = "namespace"   // the StatefulSet's namespace
	ArgStatefulSet = "statefulset" // its name
	ArgRevision    = "revision"    // status.updateRevision: the revision the canary rolls out
	ArgPods        = "pods"        // the step's canary pods as a regular expression: web-3|web-2
)

// BuiltinArgs are the arguments stsdiag fills.
var BuiltinArgs = []string{ArgNamespace, ArgStatefulSet, ArgRevision, ArgPods}

// CheckAnalysis refuses, before anything changes, what a run could not measure: --arg naming
// no argument of the template, an argument left without a value, a metric with no address.
func CheckAnalysis(a *Analysis, addressGiven bool) error {
	declared := map[string]bool{}
	for _, arg := range a.Template.Args {
		declared[arg.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(a.Args)) {
		if !declared[name] {
			return fmt.Errorf("--arg %s: analysis template %s declares no such argument (it declares %s)", name, a.Template.Name, names(a.Template.Args))
		}
	}
	bound, err := a.Template.Bind(a.given(map[string]string{ArgNamespace: "ns", ArgStatefulSet: "set", ArgRevision: "set-1", ArgPods: "set-0"}))
	if err != nil {
		return fmt.Errorf("analysis template %s: %w", a.Template.Name, err)
	}
	if !addressGiven {
		for _, m := range bound.Metrics {
			if m.Prometheus.Address == "" {
				return fmt.Errorf("analysis template %s: metric %s names no Prometheus address: give --prometheus", a.Template.Name, m.Name)
			}
		}
	}
	return nil
}

func names(args []analysis.Arg) string {
	if len(args) == 0 {
		return "none"
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.Name
	}
	return strings.Join(out, ", ")
}

// given is what Bind gets: the builtins for arguments declared without a value, then --arg.
func (a *Analysis) given(builtins map[string]string) map[string]string {
	out := map[string]string{}
	for _, arg := range a.Template.Args {
		if v, ok := builtins[arg.Name]; ok && arg.Value == nil {
			out[arg.Name] = v
		}
	}
	maps.Copy(out, a.Args)
	return out
}

// stepMetrics are the metrics measured in a step: every metric, an indefinite one measured
// once when no finite metric runs.
func stepMetrics(t *analysis.Template) []analysis.Metric {
	metrics := slices.Clone(t.Metrics)
	if len(t.Finite()) > 0 {
		return metrics
	}
	one := int32(1)
	for i := range metrics {
		metrics[i].Count = &one
	}
	return metrics
}

// analyze runs the step's analysis on set as it is now (its update revision and the step's
// canary pods as arguments) and returns it as the step records it.
func (r *runner) analyze(ctx context.Context, set *appsv1.StatefulSet, step engine.Resolved) (*apiv1.AnalysisRun, error) {
	a := r.o.Analysis
	pods := engine.CanaryPods(set, step.Partition)
	quoted := make([]string, len(pods))
	for i, p := range pods {
		quoted[i] = regexp.QuoteMeta(p)
	}
	bound, err := a.Template.Bind(a.given(map[string]string{ArgNamespace: set.Namespace, ArgStatefulSet: set.Name,
		ArgRevision: set.Status.UpdateRevision, ArgPods: strings.Join(quoted, "|")}))
	if err != nil {
		return nil, err
	}
	clk := a.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: analysis %s of %s\n", set.Namespace, set.Name, step.Step, bound.Name, strings.Join(pods, ", "))
	res := analysis.Run(ctx, a.Querier, stepMetrics(bound), clk, func(m analysis.MetricResult) {
		if n := len(m.Measurements); n > 0 {
			last := m.Measurements[n-1]
			what := last.Value
			if last.Phase == analysis.PhaseError {
				what = last.Message
			}
			fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: metric %s: %s %s (%d successful, %d failed, %d inconclusive, %d errors)\n",
				set.Namespace, set.Name, step.Step, m.Name, last.Phase, what, m.Successful, m.Failed, m.Inconclusive, m.Error)
		}
	})
	if ctx.Err() != nil {
		return RunOf(bound.Name, res), ctx.Err()
	}
	return RunOf(bound.Name, res), nil
}

// RunOf is an analysis result as the CanaryResult document records it.
func RunOf(template string, res analysis.Result) *apiv1.AnalysisRun {
	run := &apiv1.AnalysisRun{Template: template, Phase: apiv1.AnalysisPhase(res.Phase), Message: res.Message, Metrics: []apiv1.AnalysisMetric{}}
	for _, m := range res.Metrics {
		out := apiv1.AnalysisMetric{Name: m.Name, Query: m.Query, SuccessCondition: m.SuccessCondition, FailureCondition: m.FailureCondition,
			Phase: apiv1.AnalysisPhase(m.Phase), Message: m.Message, Successful: m.Successful, Failed: m.Failed, Inconclusive: m.Inconclusive, Error: m.Error,
			Measurements: []apiv1.AnalysisMeasurement{}}
		for _, x := range m.Measurements {
			out.Measurements = append(out.Measurements, apiv1.AnalysisMeasurement{Phase: apiv1.AnalysisPhase(x.Phase), Value: x.Value, Message: x.Message,
				StartedAt: metav1.NewTime(x.StartedAt), FinishedAt: metav1.NewTime(x.FinishedAt)})
		}
		run.Metrics = append(run.Metrics, out)
	}
	return run
}
