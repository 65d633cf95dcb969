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
