package analysis

// Ported from analysis/analysis_test.go (TestAssessMetricStatus*, TestAssessMetricFailure-
// InconclusiveOrError, TestAssessRunStatus*) and utils/analysis/helpers_test.go (TestIsWorst,
// TestWorst) @ argo-rollouts 9f8d111d8f8e. Each case gives the phase Argo asserts when the run
// is not terminating and when it is.

import (
	"testing"
	"time"
)

func finished(p Phase) Measurement {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return Measurement{Phase: p, Value: "99", StartedAt: at, FinishedAt: at}
}

func TestAssessMetricStatus(t *testing.T) {
	interval := time.Minute
	type tc struct {
		name                string
		metric              Metric
		result              MetricResult
		running, terminated Phase
	}
	cases := []tc{
		// TestAssessMetricStatusNoMeasurements
		{"no measurements", Metric{Name: "success-rate"}, MetricResult{}, PhasePending, PhaseSuccessful},
		// TestAssessMetricStatusInFlightMeasurement
		{"in-flight measurement", Metric{Name: "success-rate"},
			MetricResult{Measurements: []Measurement{finished(PhaseSuccessful), {Phase: PhaseRunning, Value: "99"}}}, PhaseRunning, PhaseRunning},
		// TestAssessMetricStatusFailureLimit
		{"failed > failureLimit", Metric{Name: "success-rate", FailureLimit: 2, Interval: interval},
			MetricResult{Failed: 3, Count: 3, Measurements: []Measurement{finished(PhaseFailed)}}, PhaseFailed, PhaseFailed},
		{"failed = failureLimit", Metric{Name: "success-rate", FailureLimit: 3, Interval: interval},
			MetricResult{Failed: 3, Count: 3, Measurements: []Measurement{finished(PhaseFailed)}}, PhaseRunning, PhaseSuccessful},
		// TestAssessMetricStatusInconclusiveLimit
		{"inconclusive > inconclusiveLimit", Metric{Name: "success-rate", InconclusiveLimit: 2, Interval: interval},
			MetricResult{Inconclusive: 3, Count: 3, Measurements: []Measurement{finished(PhaseInconclusive)}}, PhaseInconclusive, PhaseInconclusive},
		{"inconclusive = inconclusiveLimit", Metric{Name: "success-rate", InconclusiveLimit: 3, Interval: interval},
			MetricResult{Inconclusive: 3, Count: 3, Measurements: []Measurement{finished(PhaseInconclusive)}}, PhaseRunning, PhaseSuccessful},
		// TestAssessMetricStatusConsecutiveErrors
		{"consecutive errors > default limit 4", Metric{Name: "success-rate", Interval: interval},
			MetricResult{ConsecutiveError: 5, Count: 5, Measurements: []Measurement{finished(PhaseError)}}, PhaseError, PhaseError},
		{"consecutive errors = default limit 4", Metric{Name: "success-rate", Interval: interval},
			MetricResult{ConsecutiveError: 4, Count: 5, Measurements: []Measurement{finished(PhaseError)}}, PhaseRunning, PhaseSuccessful},
		// TestAssessMetricStatusCountReached
		{"count reached", Metric{Name: "success-rate", Count: ptr(int32(10))},
			MetricResult{Successful: 10, Count: 10, Measurements: []Measurement{finished(PhaseSuccessful)}}, PhaseSuccessful, PhaseSuccessful},
		{"count reached, inconclusive > 0", Metric{Name: "success-rate", Count: ptr(int32(10))},
			MetricResult{Successful: 5, Inconclusive: 5, Count: 10, Measurements: []Measurement{finished(PhaseSuccessful)}}, PhaseInconclusive, PhaseInconclusive},
		// Not Argo's: a metric with neither count nor interval measures once.
		{"no count, no interval: once", Metric{Name: "success-rate"},
			MetricResult{Successful: 1, Count: 1, Measurements: []Measurement{finished(PhaseSuccessful)}}, PhaseSuccessful, PhaseSuccessful},
		{"completed phase stays", Metric{Name: "success-rate"},
			MetricResult{Phase: PhaseFailed, Successful: 1, Count: 1, Measurements: []Measurement{finished(PhaseSuccessful)}}, PhaseFailed, PhaseFailed},
	}

	// TestAssessMetricStatusConsecutiveSuccessLimit
	csl := func(limit int32, count *int32) Metric {
		return Metric{Name: "success-rate", ConsecutiveSuccessLimit: limit, FailureLimit: -1, Interval: interval, Count: count}
	}
	cslResult := MetricResult{Failed: 3, Successful: 4, ConsecutiveSuccess: 3, Count: 7, Measurements: []Measurement{finished(PhaseFailed)}}
	cases = append(cases,
		tc{"consecutiveSuccess = limit, indefinite", csl(3, nil), cslResult, PhaseSuccessful, PhaseSuccessful},
		tc{"consecutiveSuccess < limit, indefinite", csl(5, nil), cslResult, PhaseRunning, PhaseSuccessful},
		tc{"consecutiveSuccess < limit, count reached", csl(5, ptr(int32(7))), cslResult, PhaseFailed, PhaseFailed},
		tc{"consecutiveSuccess = limit, count reached", csl(3, ptr(int32(7))), cslResult, PhaseSuccessful, PhaseSuccessful},
		tc{"consecutiveSuccess = limit, count not reached", csl(3, ptr(int32(9))), cslResult, PhaseSuccessful, PhaseSuccessful},
		tc{"consecutiveSuccess < limit, count not reached", csl(5, ptr(int32(9))), cslResult, PhaseRunning, PhaseSuccessful},
	)

	// TestAssessMetricStatusFailureLimitAndConsecutiveSuccessLimit
	both := func(count *int32) Metric {
		return Metric{Name: "success-rate", ConsecutiveSuccessLimit: 4, FailureLimit: 4, Interval: interval, Count: count}
	}
	res := func(failed, successful, count, consecutive int32) MetricResult {
		return MetricResult{Failed: failed, Successful: successful, Count: count, ConsecutiveSuccess: consecutive, Measurements: []Measurement{finished(PhaseFailed)}}
	}
	cases = append(cases,
		// indefinite
		tc{"both: failureLimit not violated, consecutive not met, indefinite", both(nil), res(3, 4, 7, 3), PhaseRunning, PhaseSuccessful},
		tc{"both: failureLimit violated, consecutive not met, indefinite", both(nil), res(5, 9, 9, 0), PhaseFailed, PhaseFailed},
		tc{"both: failureLimit not violated, consecutive met, indefinite", both(nil), res(3, 5, 8, 4), PhaseSuccessful, PhaseSuccessful},
		tc{"both: failureLimit violated, consecutive met, indefinite", both(nil), res(5, 5, 10, 4), PhaseFailed, PhaseFailed},
		// count 10 reached
		tc{"both: not violated, not met, count reached", both(ptr(int32(10))), res(4, 6, 10, 3), PhaseInconclusive, PhaseInconclusive},
		tc{"both: violated, not met, count reached", both(ptr(int32(10))), res(5, 5, 10, 3), PhaseFailed, PhaseFailed},
		tc{"both: not violated, met, count reached", both(ptr(int32(10))), res(4, 6, 10, 4), PhaseSuccessful, PhaseSuccessful},
		tc{"both: violated, met, count reached", both(ptr(int32(10))), res(5, 5, 10, 4), PhaseFailed, PhaseFailed},
		// count 10 not reached
		tc{"both: not violated, not met, count not reached", both(ptr(int32(10))), res(3, 5, 8, 3), PhaseRunning, PhaseSuccessful},
		tc{"both: violated, not met, count not reached", both(ptr(int32(10))), res(5, 3, 8, 3), PhaseFailed, PhaseFailed},
		tc{"both: not violated, met, count not reached", both(ptr(int32(10))), res(3, 5, 8, 4), PhaseSuccessful, PhaseSuccessful},
		tc{"both: violated, met, count not reached", both(ptr(int32(10))), res(5, 4, 9, 4), PhaseFailed, PhaseFailed},
	)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Assess(c.metric, c.result); got != c.running {
				t.Errorf("Assess = %s, want %s", got, c.running)
			}
			if got := assess(c.metric, c.result, true); got != c.terminated {
				t.Errorf("assess(terminating) = %s, want %s", got, c.terminated)
			}
		})
	}
}

// TestAssessMetricFailureInconclusiveOrError
func TestLimitBreached(t *testing.T) {
	for _, c := range []struct {
		name    string
		result  MetricResult
		phase   Phase
		message string
	}{
		{"failed", MetricResult{Failed: 1, Measurements: []Measurement{{Phase: PhaseFailed}}}, PhaseFailed, "failed (1) > failureLimit (0)"},
		{"inconclusive", MetricResult{Inconclusive: 1, Measurements: []Measurement{{Phase: PhaseInconclusive}}}, PhaseInconclusive, "inconclusive (1) > inconclusiveLimit (0)"},
		{"error", MetricResult{ConsecutiveError: 5, Measurements: []Measurement{{Phase: PhaseError}}}, PhaseError, "consecutiveErrors (5) > consecutiveErrorLimit (4)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			phase, message := limitBreached(Metric{}, c.result)
			if phase != c.phase || message != c.message {
				t.Errorf("got %s %q, want %s %q", phase, message, c.phase, c.message)
			}
			if got := assess(Metric{}, c.result, true); got != c.phase {
				t.Errorf("assess(terminating) = %s, want %s", got, c.phase)
			}
		})
	}
	// A given consecutiveErrorLimit replaces the default.
	phase, message := limitBreached(Metric{ConsecutiveErrorLimit: ptr(int32(1))}, MetricResult{ConsecutiveError: 2})
	if phase != PhaseError || message != "consecutiveErrors (2) > consecutiveErrorLimit (1)" {
		t.Errorf("got %s %q", phase, message)
	}
}

// TestIsWorst, TestWorst
func TestIsWorse(t *testing.T) {
	for _, c := range []struct {
		current, next Phase
		want          bool
	}{
		{PhaseSuccessful, PhaseSuccessful, false},
		{PhaseSuccessful, PhaseInconclusive, true},
		{PhaseSuccessful, PhaseError, true},
		{PhaseSuccessful, PhaseFailed, true},
		{PhaseInconclusive, PhaseSuccessful, false},
		{PhaseInconclusive, PhaseInconclusive, false},
		{PhaseInconclusive, PhaseError, true},
		{PhaseInconclusive, PhaseFailed, true},
		{PhaseError, PhaseError, false},
		{PhaseError, PhaseSuccessful, false},
		{PhaseError, PhaseInconclusive, false},
		{PhaseError, PhaseFailed, true},
		{PhaseFailed, PhaseSuccessful, false},
		{PhaseFailed, PhaseInconclusive, false},
		{PhaseFailed, PhaseError, false},
		{PhaseFailed, PhaseFailed, false},
	} {
		if got := isWorse(c.current, c.next); got != c.want {
			t.Errorf("isWorse(%s, %s) = %v, want %v", c.current, c.next, got, c.want)
		}
	}
}

// TestAssessRunStatus, TestAssessRunStatusUpdateResult, TestAssessRunStatusErrorMessage*
// (without dry-run) and TestAssessRunStatusMultipleFailures.
func TestAssessRun(t *testing.T) {
	two := []Metric{{Name: "latency"}, {Name: "success-rate"}}
	// newTerminatingRun(Failed): run-forever has an in-flight measurement, failed-metric failed.
	terminatingRun := func() ([]Metric, []MetricResult) {
		return []Metric{{Name: "run-forever"}, {Name: "failed-metric"}}, []MetricResult{
			{Name: "run-forever", Phase: PhaseRunning, Measurements: []Measurement{{Phase: PhaseRunning}}},
			{Name: "failed-metric", Phase: PhaseFailed, Count: 1, Failed: 1, Measurements: []Measurement{finished(PhaseFailed)}},
		}
	}
	for _, c := range []struct {
		name        string
		metrics     []Metric
		results     []MetricResult
		terminating bool
		phase       Phase
		message     string
		phases      []Phase // the metrics' phases after
	}{
		{"one still running", two, []MetricResult{{Name: "latency", Phase: PhaseSuccessful}, {Name: "success-rate", Phase: PhaseRunning}},
			false, PhaseRunning, "", []Phase{PhaseSuccessful, PhasePending}},
		{"worst of completed", two, []MetricResult{{Name: "latency", Phase: PhaseSuccessful}, {Name: "success-rate", Phase: PhaseFailed}},
			false, PhaseFailed, "", []Phase{PhaseSuccessful, PhaseFailed}},
		{"result phase updated", []Metric{{Name: "sleep-infinity"}, {Name: "fail-after-30"}}, []MetricResult{
			{Name: "sleep-infinity", Phase: PhaseRunning, Measurements: []Measurement{{Phase: PhaseRunning}}},
			{Name: "fail-after-30", Count: 1, Failed: 1, Phase: PhaseRunning, Measurements: []Measurement{finished(PhaseFailed)}},
		}, false, PhaseRunning, "", []Phase{PhaseRunning, PhaseFailed}},
		{"not started", two, []MetricResult{{Name: "latency", Phase: PhasePending}, {Name: "success-rate", Phase: PhasePending}},
			false, PhaseRunning, "", []Phase{PhasePending, PhasePending}},
		{"terminated before any measurement", two, []MetricResult{{Name: "latency", Phase: PhasePending}, {Name: "success-rate", Phase: PhasePending}},
			true, PhaseSuccessful, "", []Phase{PhasePending, PhasePending}},
	} {
		t.Run(c.name, func(t *testing.T) {
			phase, message := assessRun(c.metrics, c.results, c.terminating, "")
			if phase != c.phase || message != c.message {
				t.Errorf("got %s %q, want %s %q", phase, message, c.phase, c.message)
			}
			for i, want := range c.phases {
				if c.results[i].Phase != want {
					t.Errorf("%s: phase %s, want %s", c.results[i].Name, c.results[i].Phase, want)
				}
			}
		})
	}

	t.Run("error message", func(t *testing.T) {
		metrics, results := terminatingRun()
		results[0].Phase = PhaseSuccessful
		phase, message := assessRun(metrics, results, true, "")
		if phase != PhaseFailed || message != `Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0)` {
			t.Errorf("got %s %q", phase, message)
		}
	})
	t.Run("error message from provider", func(t *testing.T) {
		metrics, results := terminatingRun()
		results[0].Phase = PhaseSuccessful
		results[1].Message = "Provider Error"
		phase, message := assessRun(metrics, results, true, "")
		if phase != PhaseFailed || message != `Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0): "Error Message: Provider Error"` {
			t.Errorf("got %s %q", phase, message)
		}
	})
	t.Run("multiple failures: the first failed metric's message", func(t *testing.T) {
		metrics, results := terminatingRun()
		results[0].Phase = PhaseFailed
		results[0].Failed = 1
		phase, message := assessRun(metrics, results, true, "")
		if phase != PhaseFailed || message != `Metric "run-forever" assessed Failed due to failed (1) > failureLimit (0)` {
			t.Errorf("got %s %q", phase, message)
		}
	})
}
