// Package stepanalysis measures one canary step with an Argo Rollouts AnalysisTemplate
// (internal/analysis): the arguments stsdiag fills from the StatefulSet and the step, the metrics
// a step measures, and the run as api/v1 records it. `stsdiag canary --analysis` (internal/canary)
// and watch's canaries declared by annotations (internal/watch) both measure through it; it
// reads nothing of the cluster itself.
package stepanalysis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
)

// Analysis gates each step on the application's own metrics: once a step's pods held healthy for
// the hold, the template's metrics are measured as Argo Rollouts measures an AnalysisRun —
// Successful steps forward, Failed rolls the canary back, Inconclusive or Error pauses it.
//
// Metrics with a count (or neither count nor interval: one measurement) run to their end in
// every step. A metric with an interval and no count — Argo's background analysis — is
// measured at its interval for as long as the step's other metrics run, and once when it has
// none.
type Analysis struct {
	Template *analysis.Template
	// Args are the values given for the template's arguments (canary's --arg, watch's
	// stsdiag.io/canary-analysis-args); stsdiag fills those named BuiltinArgs that the template
	// declares without a value.
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

// Names say, in Check's errors, where the arguments and the Prometheus address come from.
type Names struct {
	// Arg prefixes an argument the template does not declare: "--arg" (canary's flag).
	Arg string
	// Address ends the error of a metric without an address: "give --prometheus".
	Address string
}

// Check refuses, before anything changes, what a run could not measure: an argument naming no
// argument of the template, an argument left without a value, a metric with no address (unless
// addressGiven: one replaces every metric's).
func Check(a *Analysis, addressGiven bool, n Names) error {
	declared := map[string]bool{}
	for _, arg := range a.Template.Args {
		declared[arg.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(a.Args)) {
		if !declared[name] {
			return fmt.Errorf("%s %s: analysis template %s declares no such argument (it declares %s)", n.Arg, name, a.Template.Name, names(a.Template.Args))
		}
	}
	bound, err := a.Template.Bind(a.Given(map[string]string{ArgNamespace: "ns", ArgStatefulSet: "set", ArgRevision: "set-1", ArgPods: "set-0"}))
	if err != nil {
		return fmt.Errorf("analysis template %s: %w", a.Template.Name, err)
	}
	if !addressGiven {
		for _, m := range bound.Metrics {
			if m.Prometheus.Address == "" {
				return fmt.Errorf("analysis template %s: metric %s names no Prometheus address: %s", a.Template.Name, m.Name, n.Address)
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

// Given is what Bind gets: the builtins for arguments declared without a value, then Args.
func (a *Analysis) Given(builtins map[string]string) map[string]string {
	out := map[string]string{}
	for _, arg := range a.Template.Args {
		if v, ok := builtins[arg.Name]; ok && arg.Value == nil {
			out[arg.Name] = v
		}
	}
	maps.Copy(out, a.Args)
	return out
}

// StepMetrics are the metrics measured in a step: every metric, an indefinite one measured
// once when no finite metric runs.
func StepMetrics(t *analysis.Template) []analysis.Metric {
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

// Step is a step's analysis bound to the StatefulSet as it was read.
type Step struct {
	// Template is the analysis template with its arguments substituted.
	Template *analysis.Template
	// Pods are the step's canary pods (engine.CanaryPods), highest ordinal first.
	Pods []string
}

// Bind binds the template for the step at partition of set: the namespace, the StatefulSet's
// name, its update revision and the canary pods (at or above the partition) as the builtins.
func (a *Analysis) Bind(set *appsv1.StatefulSet, partition int32) (*Step, error) {
	// Pod names are DNS subdomains ([a-z0-9.-]): joined as they are, the only character a regex
	// reads specially is ".", which matches itself too. Escaped ("\\."), it would be an invalid
	// escape inside a PromQL double-quoted string.
	pods := engine.CanaryPods(set, partition)
	bound, err := a.Template.Bind(a.Given(map[string]string{ArgNamespace: set.Namespace, ArgStatefulSet: set.Name,
		ArgRevision: set.Status.UpdateRevision, ArgPods: strings.Join(pods, "|")}))
	if err != nil {
		return nil, err
	}
	return &Step{Template: bound, Pods: pods}, nil
}

// Run measures the step (analysis.Run over StepMetrics, with a's Querier and Clock) and returns
// the run as api/v1 records it. report, if not nil, is told each measurement (analysis.Run's).
// If ctx ends first, the run returned is unfinished (Running or Pending).
func (a *Analysis) Run(ctx context.Context, s *Step, report func(analysis.MetricResult)) *apiv1.AnalysisRun {
	clk := a.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return RunOf(s.Template.Name, analysis.Run(ctx, a.Querier, StepMetrics(s.Template), clk, report))
}

// Measured words a metric's last measurement: "metric errors: Successful [0] (1 successful, 0
// failed, 0 inconclusive, 0 errors)", an Error's message in place of the value; ok is false
// before the first.
func Measured(m analysis.MetricResult) (line string, ok bool) {
	n := len(m.Measurements)
	if n == 0 {
		return "", false
	}
	last := m.Measurements[n-1]
	what := last.Value
	if last.Phase == analysis.PhaseError {
		what = last.Message
	}
	return fmt.Sprintf("metric %s: %s %s (%d successful, %d failed, %d inconclusive, %d errors)",
		m.Name, last.Phase, what, m.Successful, m.Failed, m.Inconclusive, m.Error), true
}

// RunOf is an analysis result as api/v1 records it (CanaryResult's steps, watch's Events).
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
