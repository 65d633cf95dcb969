package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// port records the calls the machine makes; its analysis is what the case says.
type port struct {
	analyzed  bool
	checkOK   bool
	run       *apiv1.AnalysisRun // Measurement's run
	measuring bool
	measured  *apiv1.AnalysisRun // Measure's return
	calls     []string
}

func (p *port) call(s string) { p.calls = append(p.calls, s) }

func (p *port) Analyzed(context.Context, Facts) bool { return p.analyzed }
func (p *port) Check(context.Context) (bool, error) {
	p.call("Check")
	return p.checkOK, nil
}
func (p *port) Measurement(context.Context, Facts) (*apiv1.AnalysisRun, bool) {
	return p.run, p.measuring
}
func (p *port) Measure(context.Context, Facts) (*apiv1.AnalysisRun, error) {
	p.call("Measure")
	return p.measured, nil
}
func (p *port) Wait(context.Context, Facts) error { p.call("Wait"); return nil }
func (p *port) Advance(_ context.Context, d Decision, run *apiv1.AnalysisRun) error {
	what := "Advance " + d.Step.Step
	if run != nil {
		what += " after " + string(run.Phase)
	}
	p.call(what)
	return nil
}
func (p *port) RollBack(context.Context, Facts) error { p.call("RollBack"); return nil }
func (p *port) RollBackAnalysis(_ context.Context, run *apiv1.AnalysisRun) error {
	p.call("RollBackAnalysis " + string(run.Phase))
	return nil
}
func (p *port) Pause(_ context.Context, _ Facts, run *apiv1.AnalysisRun) error {
	p.call("Pause " + string(run.Phase))
	return nil
}
func (p *port) Done(context.Context, Facts) error { p.call("Done"); return nil }
func (p *port) Invalid(_ context.Context, err error) error {
	p.call("Invalid")
	return nil
}

func runOf(phase apiv1.AnalysisPhase) *apiv1.AnalysisRun {
	return &apiv1.AnalysisRun{Template: "error-ratio", Phase: phase}
}

// TestTurn: the step machine over a recording port (4 replicas, steps 1,50%): which outcome and
// which of the port's calls each state of the facts and the step's analysis makes, as watch
// (measuring in the background) and canary (in the foreground) drive it.
func TestTurn(t *testing.T) {
	steps := mustParse(t, "1,50%")
	step1 := Facts{Replicas: 4, Partition: 3, Observed: true, Pending: true}
	healthy := step1
	healthy.Healthy = true
	stuck := step1
	stuck.Stuck = true
	parked := Facts{Replicas: 4, Partition: 4, Observed: true, Pending: true, Parked: true}
	lastHealthy := Facts{Replicas: 4, Partition: 0, Observed: true, Healthy: true} // canary's last step: the controller completed the rollout
	cases := []struct {
		name  string
		facts Facts
		port  port
		out   Outcome
		calls string
	}{
		{"no analysis: not healthy yet", step1, port{}, Waited, "Wait"},
		{"no analysis: healthy", healthy, port{}, Advanced, "Advance 50%"},
		{"no analysis: stuck", stuck, port{}, RolledBack, "RollBack"},
		{"no analysis: parked", parked, port{}, Advanced, "Advance 1"},
		{"no analysis: nothing pending", Facts{Replicas: 4, Observed: true}, port{}, Finished, "Done"},
		{"no replicas", Facts{Observed: true, Pending: true, Healthy: true}, port{analyzed: true}, Invalid, "Invalid"},
		{"analysis, parked: checked, then the first step", parked, port{analyzed: true, checkOK: true}, Advanced, "Check, Advance 1"},
		{"analysis, parked: unmeasurable, no step", parked, port{analyzed: true}, Unmeasurable, "Check"},
		{"analysis: not healthy yet", step1, port{analyzed: true}, Waited, "Wait"},
		{"analysis: healthy, measured in the background", healthy, port{analyzed: true}, Measuring, "Measure"},
		{"analysis: measuring", healthy, port{analyzed: true, measuring: true}, Measuring, ""},
		{"analysis: measuring, stuck: rolled back", stuck, port{analyzed: true, measuring: true}, RolledBack, "RollBack"},
		{"analysis: healthy, Successful in the foreground: turn again", healthy, port{analyzed: true, measured: runOf(apiv1.AnalysisSuccessful)}, Measured, "Measure"},
		{"analysis: healthy, Failed in the foreground", healthy, port{analyzed: true, measured: runOf(apiv1.AnalysisFailed)}, AnalysisFailed, "Measure, RollBackAnalysis Failed"},
		{"analysis: healthy, Inconclusive in the foreground", healthy, port{analyzed: true, measured: runOf(apiv1.AnalysisInconclusive)}, Paused, "Measure, Pause Inconclusive"},
		{"analysis: Successful, healthy", healthy, port{analyzed: true, run: runOf(apiv1.AnalysisSuccessful)}, Advanced, "Advance 50% after Successful"},
		{"analysis: Successful, no longer healthy", step1, port{analyzed: true, run: runOf(apiv1.AnalysisSuccessful)}, Waited, "Wait"},
		{"analysis: Successful, the last step complete", lastHealthy, port{analyzed: true, run: runOf(apiv1.AnalysisSuccessful)}, Finished, "Done"},
		{"analysis: the last step complete, measured first", lastHealthy, port{analyzed: true, measured: runOf(apiv1.AnalysisSuccessful)}, Measured, "Measure"},
		{"analysis: Failed, no longer healthy", step1, port{analyzed: true, run: runOf(apiv1.AnalysisFailed)}, AnalysisFailed, "RollBackAnalysis Failed"},
		{"analysis: Error", step1, port{analyzed: true, run: runOf(apiv1.AnalysisError)}, Paused, "Pause Error"},
		{"analysis: Failed, stuck: rolled back for the finding", stuck, port{analyzed: true, run: runOf(apiv1.AnalysisFailed)}, RolledBack, "RollBack"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.port
			out, err := Turn(context.Background(), steps, c.facts, &p)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.calls, ", "); out != c.out || got != c.calls {
				t.Errorf("%s [%s], want %s [%s]", out, got, c.out, c.calls)
			}
		})
	}
}

// failing is a port whose Measure fails.
type failing struct{ port }

func (f *failing) Measure(context.Context, Facts) (*apiv1.AnalysisRun, error) {
	return nil, errors.New("context deadline exceeded")
}

// TestTurnErrors: a port's error ends the turn with it, after no further call.
func TestTurnErrors(t *testing.T) {
	p := &failing{port{analyzed: true}}
	healthy := Facts{Replicas: 4, Partition: 3, Observed: true, Pending: true, Healthy: true}
	out, err := Turn(context.Background(), mustParse(t, "1,50%"), healthy, p)
	if out != Measuring || err == nil || err.Error() != "context deadline exceeded" || len(p.calls) != 0 {
		t.Errorf("%s %v %v", out, err, p.calls)
	}
}
