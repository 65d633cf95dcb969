package engine

import (
	"context"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// The step machine: one turn of a canary — Decide's verb, held on the step's analysis when one
// is declared — carried out through a Port. `stsdiag canary` (internal/canary) and watch
// (internal/watch) both drive it, each through its own port: canary turns it once its gate says
// a step held healthy or stuck, measures in the foreground and writes a CanaryResult; watch turns
// it on each sync of an annotated StatefulSet, measures in the background and says what it does
// with Events, conditions and metrics. Neither decides a step itself.

// Outcome is what a turn did: which of the port's methods carried it out.
type Outcome string

// Outcomes.
const (
	// Invalid: the steps do not resolve against the StatefulSet (Port.Invalid).
	Invalid Outcome = "Invalid"
	// Waited: the step is under way (Port.Wait).
	Waited Outcome = "Waited"
	// Advanced: the partition goes to the next step (Port.Advance).
	Advanced Outcome = "Advanced"
	// RolledBack: a blocking finding held (Port.RollBack).
	RolledBack Outcome = "RolledBack"
	// Finished: no rollout is pending and the last one is complete (Port.Done).
	Finished Outcome = "Finished"
	// Unmeasurable: the analysis cannot be measured with, checked before the first step
	// (Port.Check said so); no step is taken.
	Unmeasurable Outcome = "Unmeasurable"
	// Measuring: the step's analysis runs, or could not start (Port.Measure said why).
	Measuring Outcome = "Measuring"
	// Measured: the step's analysis ended Successful within the turn (a port that measures in
	// the foreground): turn again on the facts read after it, which decide the next step.
	Measured Outcome = "Measured"
	// AnalysisFailed: the step's analysis failed (Port.RollBackAnalysis).
	AnalysisFailed Outcome = "AnalysisFailed"
	// Paused: the step's analysis could not tell, Inconclusive or Error (Port.Pause).
	Paused Outcome = "Paused"
)

// Port is a driver's side of the machine: what it knows of a step's analysis and how each
// decision is carried out. f is the turn's facts; an error from a method ends the turn with it.
type Port interface {
	// Analyzed reports whether an analysis gates the step of f.
	Analyzed(ctx context.Context, f Facts) bool
	// Check reads and checks the analysis before the first step (which moves no pod and so is
	// measured by nothing); ok is false when it cannot be measured with (the port says why).
	Check(ctx context.Context) (ok bool, err error)
	// Measurement is what is known of the step's analysis: its run once ended, or measuring
	// while it runs; nil and false before it started.
	Measurement(ctx context.Context, f Facts) (run *apiv1.AnalysisRun, measuring bool)
	// Measure starts measuring a step whose pods held healthy. It returns the run when it ended
	// within the call; nil while it runs on its own (the port looks again when it ends) or when it
	// could not start (the port says why).
	Measure(ctx context.Context, f Facts) (*apiv1.AnalysisRun, error)
	// Wait: the step is under way.
	Wait(ctx context.Context, f Facts) error
	// Advance lowers the partition to d.Step's; run is the analysis that let the step go, if any.
	Advance(ctx context.Context, d Decision, run *apiv1.AnalysisRun) error
	// RollBack rolls back a step whose blocking finding held.
	RollBack(ctx context.Context, f Facts) error
	// RollBackAnalysis rolls back a step whose analysis failed.
	RollBackAnalysis(ctx context.Context, run *apiv1.AnalysisRun) error
	// Pause holds a step whose analysis could not tell: no step forward, nothing rolled back.
	Pause(ctx context.Context, f Facts, run *apiv1.AnalysisRun) error
	// Done: no rollout is pending.
	Done(ctx context.Context, f Facts) error
	// Invalid says the steps do not resolve against the StatefulSet.
	Invalid(ctx context.Context, err error) error
}

// Turn takes one decision for a canary and carries it out through the port: Decide's verb, except
// that a step gated by an analysis is measured once its pods held healthy, goes forward only on a
// Successful run, rolls back on a Failed one and pauses on any other. A blocking finding that
// held rolls the step back whatever its analysis says.
func Turn(ctx context.Context, steps []Step, f Facts, p Port) (Outcome, error) {
	d, err := Decide(steps, f)
	if err != nil {
		return Invalid, p.Invalid(ctx, err)
	}
	if out, err := gate(ctx, d, f, p); out != "" || err != nil {
		return out, err
	}
	switch d.Verb {
	case Wait:
		return Waited, p.Wait(ctx, f)
	case Advance:
		return Advanced, p.Advance(ctx, d, nil)
	case RollBack:
		return RolledBack, p.RollBack(ctx, f)
	}
	return Finished, p.Done(ctx, f)
}

// gate holds the decision on the step's analysis. It returns "" when the decision stands as
// Decide made it: no analysis, a finding held (rolled back as any step), pods not yet held
// healthy, or a Successful run whose pods no longer look healthy (they must again first).
func gate(ctx context.Context, d Decision, f Facts, p Port) (Outcome, error) {
	if !p.Analyzed(ctx, f) || d.Verb == RollBack {
		return "", nil
	}
	if d.Verb == Advance && f.Parked {
		// The first step is taken at once (no pod moved yet, nothing to measure), but not with
		// an analysis the steps could not be measured with.
		if ok, err := p.Check(ctx); !ok || err != nil {
			return Unmeasurable, err
		}
		return "", nil
	}
	run, measuring := p.Measurement(ctx, f)
	switch {
	case measuring:
		return Measuring, nil
	case run == nil && !f.Healthy:
		return "", nil
	case run == nil:
		measured, err := p.Measure(ctx, f)
		if err != nil || measured == nil {
			return Measuring, err
		}
		if measured.Phase == apiv1.AnalysisSuccessful {
			return Measured, nil
		}
		run = measured
	}
	switch {
	case run.Phase == apiv1.AnalysisSuccessful && d.Verb == Advance:
		return Advanced, p.Advance(ctx, d, run)
	case run.Phase == apiv1.AnalysisSuccessful:
		return "", nil
	case run.Phase == apiv1.AnalysisFailed:
		return AnalysisFailed, p.RollBackAnalysis(ctx, run)
	}
	return Paused, p.Pause(ctx, f, run)
}
