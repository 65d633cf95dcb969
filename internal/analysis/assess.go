package analysis

// Metric and run assessment as analysis/analysis.go @ argo-rollouts 9f8d111d8f8e does it
// (assessMetricStatus, assessMetricFailureInconclusiveOrError, assessRunStatus), with
// utils/analysis/helpers.go's phase order (IsWorse) and utils/defaults/defaults.go's
// DefaultConsecutiveErrorLimit.

import (
	"fmt"
	"time"
)

// Phase is Argo's AnalysisPhase, of a measurement, a metric or a whole analysis.
type Phase string

const (
	PhasePending      Phase = "Pending"
	PhaseRunning      Phase = "Running"
	PhaseSuccessful   Phase = "Successful"
	PhaseFailed       Phase = "Failed"
	PhaseError        Phase = "Error"
	PhaseInconclusive Phase = "Inconclusive"
)

// Completed reports whether p is terminal: Successful, Failed, Error or Inconclusive.
func (p Phase) Completed() bool {
	switch p {
	case PhaseSuccessful, PhaseFailed, PhaseError, PhaseInconclusive:
		return true
	}
	return false
}

// Argo's defaults.
const (
	// DefaultConsecutiveErrorLimit: a metric is Error after this many errors in a row, plus one.
	DefaultConsecutiveErrorLimit int32 = 4
	// DefaultErrorRetryInterval: the wait after an Error measurement, whatever the interval.
	DefaultErrorRetryInterval = 10 * time.Second
	// DefaultMeasurementHistoryLimit: the measurements kept per metric.
	DefaultMeasurementHistoryLimit = 10
	// DefaultQueryTimeout: a query's deadline when the metric sets no timeout.
	DefaultQueryTimeout = 30 * time.Second
)

// phaseOrder is Argo's analysisStatusOrder, best to worst.
var phaseOrder = []Phase{PhaseSuccessful, PhaseRunning, PhasePending, PhaseInconclusive, PhaseError, PhaseFailed}

// isWorse reports whether next is worse than current (Argo's IsWorse).
func isWorse(current, next Phase) bool {
	currentIndex, nextIndex := 0, 0
	for i, p := range phaseOrder {
		if current == p {
			currentIndex = i
		}
		if next == p {
			nextIndex = i
		}
	}
	return nextIndex > currentIndex
}

// Assess is Argo's assessMetricStatus for a run that is not terminating: the phase of a metric
// from its last measurement, its tallies and its limits and count. A completed r.Phase stays.
func Assess(m Metric, r MetricResult) Phase {
	return assess(m, r, false)
}

// assess is assessMetricStatus. terminating: the run is stopping (stopped by the caller, or
// another metric ended Failed, Error or Inconclusive), so a metric that has not breached a
// limit ends Successful.
func assess(m Metric, r MetricResult, terminating bool) Phase {
	if r.Phase.Completed() {
		return r.Phase
	}
	if len(r.Measurements) == 0 {
		if terminating {
			return PhaseSuccessful
		}
		return PhasePending
	}
	last := r.Measurements[len(r.Measurements)-1]
	if !last.Phase.Completed() {
		return PhaseRunning
	}
	if phase, _ := limitBreached(m, r); phase != "" {
		return phase
	}
	if m.ConsecutiveSuccessLimit > 0 && r.ConsecutiveSuccess >= m.ConsecutiveSuccessLimit {
		return PhaseSuccessful
	}
	// Count reached: Successful, since limits were checked above; unless consecutiveSuccessLimit
	// applies and was not reached.
	if count := effectiveCount(m); count != nil && r.Count >= *count {
		failureApplicable := m.FailureLimit >= 0
		successApplicable := m.ConsecutiveSuccessLimit > 0
		switch {
		case failureApplicable && successApplicable:
			return PhaseInconclusive
		case successApplicable:
			return PhaseFailed
		}
		return PhaseSuccessful
	}
	// An indefinite metric, or one short of its count.
	if terminating {
		return PhaseSuccessful
	}
	return PhaseRunning
}

// limitBreached is assessMetricFailureInconclusiveOrError: Failed, Inconclusive or Error when
// the tallies pass a limit (the last check wins), with Argo's reason.
func limitBreached(m Metric, r MetricResult) (Phase, string) {
	var phase Phase
	var message string
	if m.FailureLimit >= 0 && r.Failed > m.FailureLimit {
		phase = PhaseFailed
		message = fmt.Sprintf("failed (%d) > failureLimit (%d)", r.Failed, m.FailureLimit)
	}
	if r.Inconclusive > m.InconclusiveLimit {
		phase = PhaseInconclusive
		message = fmt.Sprintf("inconclusive (%d) > inconclusiveLimit (%d)", r.Inconclusive, m.InconclusiveLimit)
	}
	consecutiveErrorLimit := DefaultConsecutiveErrorLimit
	if m.ConsecutiveErrorLimit != nil {
		consecutiveErrorLimit = *m.ConsecutiveErrorLimit
	}
	if r.ConsecutiveError > consecutiveErrorLimit {
		phase = PhaseError
		message = fmt.Sprintf("consecutiveErrors (%d) > consecutiveErrorLimit (%d)", r.ConsecutiveError, consecutiveErrorLimit)
	}
	return phase, message
}

// tally counts a completed measurement into r as Argo's runMeasurements does.
func tally(r *MetricResult, meas Measurement) {
	switch meas.Phase {
	case PhaseSuccessful:
		r.Successful++
		r.Count++
		r.ConsecutiveError = 0
		r.ConsecutiveSuccess++
	case PhaseFailed:
		r.Failed++
		r.Count++
		r.ConsecutiveError = 0
		r.ConsecutiveSuccess = 0
	case PhaseInconclusive:
		r.Inconclusive++
		r.Count++
		r.ConsecutiveError = 0
		r.ConsecutiveSuccess = 0
	case PhaseError:
		r.Error++
		r.ConsecutiveError++
		r.ConsecutiveSuccess = 0
	}
}

// assessRun is assessRunStatus without dry-run: each started metric is assessed (its phase and
// message updated in results), and the run is Running until all are completed, then the worst
// of them. When terminating it is the worst completed one, or Successful. Metrics not started
// (Pending, no measurement) are left as they are and keep the run Running.
func assessRun(metrics []Metric, results []MetricResult, terminating bool, message string) (Phase, string) {
	var worstStatus Phase
	worstMessage := message
	everythingCompleted := true
	for i, m := range metrics {
		r := &results[i]
		if r.Phase == PhasePending && len(r.Measurements) == 0 {
			everythingCompleted = false // not started: Argo has no result for it yet
			continue
		}
		status := assess(m, *r, terminating)
		if r.Phase != status {
			if len(r.Measurements) > 0 {
				r.Message = r.Measurements[len(r.Measurements)-1].Message
			}
			r.Phase = status
		}
		if !status.Completed() {
			everythingCompleted = false
			continue
		}
		_, reason := limitBreached(m, *r)
		if worstStatus == "" || isWorse(worstStatus, status) {
			worstStatus = status
			if reason != "" {
				worstMessage = fmt.Sprintf("Metric \"%s\" assessed %s due to %s", m.Name, status, reason)
				if r.Message != "" {
					worstMessage += fmt.Sprintf(": \"Error Message: %s\"", r.Message)
				}
			}
		}
	}
	if terminating {
		if worstStatus == "" {
			return PhaseSuccessful, worstMessage
		}
		return worstStatus, worstMessage
	}
	if !everythingCompleted || worstStatus == "" {
		return PhaseRunning, ""
	}
	return worstStatus, worstMessage
}
