package canary

import (
	"context"
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/model"
)

// The runner is canary's port of the step machine (engine.Port): it measures a step's analysis
// in the foreground (analysis.go), records each step's result and analysis in the CanaryResult,
// and ends the canary in the state its verdict is decided from (runner.end).

var _ engine.Port = (*runner)(nil)

// Analyzed implements engine.Port: --analysis gates every step.
func (r *runner) Analyzed(context.Context, engine.Facts) bool { return r.o.Analysis != nil }

// Check implements engine.Port. canary never turns the machine on a parked partition (it takes
// the first step itself, start), and its analysis was checked before anything changed.
func (r *runner) Check(context.Context) (bool, error) { return true, nil }

// Measurement implements engine.Port: the step's run in the gate's current pass.
func (r *runner) Measurement(context.Context, engine.Facts) (*apiv1.AnalysisRun, bool) {
	return r.measured, false
}

// Measure implements engine.Port: it measures the step to its end on the StatefulSet as read
// (its update revision and the step's canary pods as arguments) and records the run with the
// step; Successful passes the step. An error (ctx ended) stops the step.
func (r *runner) Measure(ctx context.Context, _ engine.Facts) (*apiv1.AnalysisRun, error) {
	run, err := r.analyze(ctx, r.set, r.cur)
	if run != nil {
		r.recorded(r.index, r.cur).Analysis = run
	}
	if err != nil {
		r.mark(r.index, r.cur, apiv1.StepStopped)
		return nil, err
	}
	r.measured = run
	if run.Phase == apiv1.AnalysisSuccessful {
		fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: analysis %s successful\n", r.o.Namespace, r.o.Name, r.cur.Step, run.Template)
		r.pass()
	}
	return run, nil
}

// Wait implements engine.Port: the gate follows the step again.
func (r *runner) Wait(context.Context, engine.Facts) error { return nil }

// Advance implements engine.Port: the guarded patch of the partition to the next step (a
// conflict ends the canary: errStopped).
func (r *runner) Advance(ctx context.Context, d engine.Decision, _ *apiv1.AnalysisRun) error {
	r.cur, r.index = d.Step, r.stepIndex(d.Step)
	body, err := engine.PartitionPatch(r.set, d.Step.Partition)
	if err != nil {
		return err
	}
	return r.patch(ctx, r.set, body, d.Step)
}

// RollBack implements engine.Port: the step failed on a finding that held (rollback.go).
func (r *runner) RollBack(ctx context.Context, _ engine.Facts) error {
	r.mark(r.index, r.cur, apiv1.StepFailed)
	return r.failed(ctx, r.cur)
}

// RollBackAnalysis implements engine.Port: the step failed on its analysis (rollback.go).
func (r *runner) RollBackAnalysis(ctx context.Context, run *apiv1.AnalysisRun) error {
	r.mark(r.index, r.cur, apiv1.StepFailed)
	return r.failedAnalysis(ctx, r.cur, run)
}

// Pause implements engine.Port: the canary ends Inconclusive where the step set the partition.
func (r *runner) Pause(_ context.Context, _ engine.Facts, run *apiv1.AnalysisRun) error {
	r.mark(r.index, r.cur, apiv1.StepInconclusive)
	r.end = model.CanaryInconclusive{Step: r.cur.Step, Analysis: run, Partition: r.partition}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s paused: analysis %s %s: %s\n", r.o.Namespace, r.o.Name, r.cur.Step, run.Template, run.Phase, run.Message)
	return nil
}

// Done implements engine.Port: the canary is complete.
func (r *runner) Done(context.Context, engine.Facts) error {
	r.end = model.CanaryComplete{Hold: r.o.stepDuration()}
	return nil
}

// Invalid implements engine.Port: the steps do not resolve against the StatefulSet as it is now.
func (r *runner) Invalid(_ context.Context, err error) error {
	r.end = model.Failed{As: apiv1.WaitUnevaluable, Err: err}
	return nil
}
