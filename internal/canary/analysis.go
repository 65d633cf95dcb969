package canary

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/canary/stepanalysis"
)

// analyze runs the step's analysis on set as it is now (its update revision and the step's
// canary pods as arguments) and returns it as the step records it.
func (r *runner) analyze(ctx context.Context, set *appsv1.StatefulSet, step engine.Resolved) (*apiv1.AnalysisRun, error) {
	a := r.o.Analysis
	s, err := a.Bind(set, step.Partition)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: analysis %s of %s\n", set.Namespace, set.Name, step.Step, s.Template.Name, strings.Join(s.Pods, ", "))
	run := a.Run(ctx, s, func(m analysis.MetricResult) {
		if line, ok := stepanalysis.Measured(m); ok {
			fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: %s\n", set.Namespace, set.Name, step.Step, line)
		}
	})
	return run, ctx.Err()
}

// Analysis is a canary's analysis: an AnalysisTemplate bound to its arguments and Prometheus
// (package stepanalysis's, measured the same way by canary and watch).
type Analysis = stepanalysis.Analysis

// NewAnalysis reads the AnalysisTemplate of file (--analysis), takes the NAME=VALUE arguments
// (--arg) and checks them against the template, before anything changes: every argument it
// needs given, each metric with an address unless override (--prometheus replaces them).
func NewAnalysis(file string, args []string, querier func(analysis.Metric) (analysis.Querier, error), override bool) (*Analysis, error) {
	tmpl, err := analysis.ParseFile(file)
	if err != nil {
		return nil, fmt.Errorf("--analysis %s: %w", file, err)
	}
	a := &Analysis{Template: tmpl, Args: map[string]string{}, Querier: querier}
	for _, arg := range args {
		name, value, ok := strings.Cut(arg, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--arg %q: want NAME=VALUE", arg)
		}
		a.Args[name] = value
	}
	if err := stepanalysis.Check(a, override, stepanalysis.Names{Arg: "--arg", Address: "give --prometheus"}); err != nil {
		return nil, err
	}
	return a, nil
}

// ParseSteps parses --steps (engine.ParseSteps): counts of pods or percentages, increasing; the
// last step is always 100%.
func ParseSteps(s string) ([]engine.Step, error) { return engine.ParseSteps(s) }
