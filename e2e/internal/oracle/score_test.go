package oracle

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const ns = "oracle-s7-h5"

func report(findings ...map[string]any) string {
	data, _ := json.Marshal(map[string]any{"apiVersion": "stsdiag/v1", "kind": "Report", "findings": findings})
	return string(data)
}

func waitResult(result string, findings ...map[string]any) string {
	data, _ := json.Marshal(map[string]any{"apiVersion": "stsdiag/v1", "kind": "WaitResult", "result": result, "findings": findings})
	return string(data)
}

func finding(code, severity, reason, pod string, details map[string]any) map[string]any {
	return map[string]any{"code": code, "severity": severity, "reason": reason, "namespace": ns, "statefulSet": SetName, "pod": pod, "details": details}
}

func stuckOn(faults ...Fault) Truth { return Truth{Outcome: Stuck, Faults: faults} }

var complete = Truth{Outcome: Complete, Faults: []Fault{Good}}

func TestScore(t *testing.T) {
	pull := finding("StaleRevisionStuck", "error", "ImagePullBackOff", "web-0", nil)
	cases := []struct {
		name        string
		truth       Truth
		check, wait Run
		pass        bool
		reason      string // a word of the failure
	}{
		{name: "stuck, explained, cause named", truth: stuckOn(MissingTag, Good),
			check: Run{1, report(pull)}, wait: Run{1, waitResult("Stuck", pull)}, pass: true},
		{name: "complete, unflagged", truth: complete,
			check: Run{0, report(finding("OnDeleteStale", "info", "", "web-0", nil))}, wait: Run{0, waitResult("Complete")}, pass: true},
		{name: "quota named in details.reason", truth: stuckOn(Quota, Good),
			check: Run{1, report(finding("PodCreateFailed", "error", "", "web-2", map[string]any{"reason": "QuotaExceeded"}))},
			wait:  Run{1, waitResult("Stuck", finding("PodCreateFailed", "error", "", "web-2", map[string]any{"reason": "QuotaExceeded"}))}, pass: true},
		{name: "finalizer as RolloutBlocked on the terminating pod", truth: Truth{Outcome: Stuck, Faults: []Fault{Finalizer}, Terminating: []string{"web-2"}},
			check: Run{1, report(finding("RolloutBlocked", "error", "WaitTerminated", "web-2", nil))},
			wait:  Run{1, waitResult("Stuck", finding("PodStuckTerminating", "error", "Finalizers", "web-2", nil))}, pass: true},
		{name: "finalizer: RolloutBlocked on a pod that is not terminating", truth: Truth{Outcome: Stuck, Faults: []Fault{Finalizer}, Terminating: []string{"web-2"}},
			check: Run{1, report(finding("RolloutBlocked", "error", "WaitReady", "web-1", nil))},
			wait:  Run{1, waitResult("Stuck", finding("PodStuckTerminating", "error", "", "web-2", nil))}, reason: "check names no cause of finalizer"},
		{name: "a finding of another StatefulSet does not count", truth: stuckOn(MissingTag),
			check: Run{1, report(map[string]any{"code": "StaleRevisionStuck", "severity": "error", "reason": "ImagePullBackOff", "namespace": ns, "statefulSet": "other"})},
			wait:  Run{1, waitResult("Stuck", pull)}, reason: "check did not explain"},
		{name: "stuck history, wait times out", truth: stuckOn(MissingTag),
			check: Run{1, report(pull)}, wait: Run{3, waitResult("TimedOut", pull)}, reason: "wait did not say Stuck"},
		{name: "stuck history, wait never ends", truth: stuckOn(MissingTag),
			check: Run{1, report(pull)}, wait: Run{-1, ""}, reason: "did not end"},
		{name: "complete history, check cannot evaluate", truth: complete,
			check: Run{2, ""}, wait: Run{0, waitResult("Complete")}, reason: "complete but check flagged it (exit 2"},
		{name: "an Unschedulable pod on an old revision, StaleRevisionStuck", truth: stuckOn(NodeSelector),
			check: Run{1, report(finding("StaleRevisionStuck", "error", "Unschedulable", "web-2", nil))},
			wait:  Run{1, waitResult("Stuck", finding("PodUnschedulable", "error", "Unschedulable", "web-2", nil))}, pass: true},
		{name: "an Unschedulable pod is no image pull", truth: stuckOn(MissingTag),
			check: Run{1, report(finding("StaleRevisionStuck", "error", "Unschedulable", "web-2", nil))},
			wait:  Run{1, waitResult("Stuck", pull)}, reason: "check names no cause of missing-tag"},
		{name: "stuck on a healthy history: explained, no cause to name", truth: stuckOn(SlowStart),
			check: Run{1, report(pull)}, wait: Run{1, waitResult("Stuck", pull)}, pass: true},
	}
	for _, c := range cases {
		v := Score(Input{Namespace: ns, Name: SetName, Truth: c.truth, Check: c.check, Wait: c.wait})
		if (v.Note != "") != (c.truth.Outcome == Stuck && c.truth.Faults[0].Healthy()) {
			t.Errorf("%s: note %q", c.name, v.Note)
		}
		if v.Pass != c.pass || !v.Scored {
			t.Errorf("%s: pass=%v scored=%v, want pass=%v; reasons %v", c.name, v.Pass, v.Scored, c.pass, v.Reasons)
			continue
		}
		if c.reason != "" && !strings.Contains(strings.Join(v.Reasons, "\n"), c.reason) {
			t.Errorf("%s: reasons %v, want one with %q", c.name, v.Reasons, c.reason)
		}
	}
	if v := Score(Input{Namespace: ns, Name: SetName, Truth: Truth{Outcome: Undecided}}); v.Scored || v.Pass {
		t.Errorf("undecided scored: %+v", v)
	}
}

// A deliberately wrong binary must be scored FAIL: one that says everything is fine, one that
// flags everything, one that names the wrong cause.
func TestScoreAgainstAWrongBinary(t *testing.T) {
	fine := func() (Run, Run) { return Run{0, report()}, Run{0, waitResult("Complete")} }
	flags := func() (Run, Run) {
		f := finding("RolloutBlocked", "error", "WaitReady", "web-0", nil)
		return Run{1, report(f)}, Run{1, waitResult("Stuck", f)}
	}
	wrongCause := func() (Run, Run) {
		f := finding("PodUnschedulable", "error", "Unschedulable", "web-0", nil)
		return Run{1, report(f)}, Run{1, waitResult("Stuck", f)}
	}
	notReadyGate := func() (Run, Run) {
		f := finding("StaleRevisionStuck", "error", "NotReady", "web-0", nil)
		return Run{1, report(f)}, Run{1, waitResult("Stuck", f)}
	}
	cases := []struct {
		name   string
		truth  Truth
		binary func() (Run, Run)
		marks  func(v Verdict) bool
	}{
		{"everything is fine, on a stuck history", stuckOn(MissingTag), fine,
			func(v Verdict) bool {
				return !*v.CheckExplained && !*v.WaitExplained && !*v.CheckCause && !*v.WaitCause
			}},
		{"flags a complete history", complete, flags,
			func(v Verdict) bool { return !*v.CheckUnflagged && !*v.WaitUnflagged && v.CheckExplained == nil }},
		{"names the wrong cause", stuckOn(Crash), wrongCause,
			func(v Verdict) bool { return *v.CheckExplained && *v.WaitExplained && !*v.CheckCause && !*v.WaitCause }},
		{"a readiness gate called NotReady: explained, cause wrong", stuckOn(ReadinessGate), notReadyGate,
			func(v Verdict) bool { return *v.CheckExplained && !*v.CheckCause }},
	}
	var tally Tally
	for _, c := range cases {
		check, wait := c.binary()
		v := Score(Input{Namespace: ns, Name: SetName, Truth: c.truth, Check: check, Wait: wait})
		if v.Pass || !v.Scored || !c.marks(v) {
			t.Errorf("%s: scored %+v (reasons %v), want FAIL", c.name, v, v.Reasons)
		}
		tally.Add(c.name, v)
	}
	got := tally.String(90 * time.Second)
	want := "score: 0 PASS, 4 FAIL; stuck explained 2/3 (check), 2/3 (wait); cause named 0/3 (check), 0/3 (wait); " +
		"complete unflagged 0/1 (check), 0/1 (wait); undecided (not scored): none; run time 1m30s"
	if got != want {
		t.Errorf("tally\n got %s\nwant %s", got, want)
	}
}

// Every broken fault has a cause family, and families do not name each other's causes.
func TestCausesCoverEveryBrokenFault(t *testing.T) {
	for _, f := range Broken {
		if len(Causes[f]) == 0 {
			t.Errorf("%s has no cause family", f)
		}
	}
	for _, f := range []Fault{Good, SlowStart} {
		if _, ok := Causes[f]; ok {
			t.Errorf("%s is healthy but has a cause family", f)
		}
	}
	pull := Finding{Code: "StaleRevisionStuck", Reason: "ImagePullBackOff"}
	for f, causes := range Causes {
		for _, c := range causes {
			if c.matches(pull, nil) != (f == MissingTag) {
				t.Errorf("%s's family matches a pull error: %v", f, c.matches(pull, nil))
			}
		}
	}
}

func TestLine(t *testing.T) {
	h := One(7, 5)
	v := Score(Input{Namespace: ns, Name: SetName, Truth: stuckOn(MissingTag), Check: Run{0, report()}, Wait: Run{0, waitResult("Complete")}})
	line := Line(h, v, 100*time.Second)
	if !strings.HasPrefix(line, "s7-h5 FAIL truth=stuck check=0 wait=0:Complete replicas=") || !strings.Contains(line, "(1m40s)\n    stuck but check") {
		t.Errorf("line %q", line)
	}
}
