package v1

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
)

// NewReport returns a report of the lists, in the order given (stsdiag lists StatefulSets by
// context, namespace and name, findings most severe first); nil lists become empty ones (JSON []
// rather than null).
func NewReport(openshift bool, sets []StatefulSetSummary, findings []Finding) *Report {
	if sets == nil {
		sets = []StatefulSetSummary{}
	}
	if findings == nil {
		findings = []Finding{}
	}
	r := &Report{OpenShift: openshift, StatefulSets: sets, Findings: findings}
	r.SetGroupVersionKind(GroupVersion.WithKind("Report"))
	return r
}

// NewFixResult returns an empty FixResult for a dry-run mode.
func NewFixResult(dryRun DryRunMode) *FixResult {
	r := &FixResult{DryRun: dryRun, Actions: []Action{}}
	r.SetGroupVersionKind(GroupVersion.WithKind("FixResult"))
	return r
}

// NewWaitResult returns a WaitResult with a verdict.
func NewWaitResult(result Verdict, message string) *WaitResult {
	r := &WaitResult{Result: result, Message: message, StatefulSets: []StatefulSetSummary{}, Findings: []Finding{}}
	r.SetGroupVersionKind(GroupVersion.WithKind("WaitResult"))
	return r
}

// DeepCopy copies a finding and its details.
func (f Finding) DeepCopy() Finding {
	c := f
	c.Details = f.Details.DeepCopy()
	return c
}

// DeepCopy copies an action and what it points to.
func (a Action) DeepCopy() Action {
	c := a
	c.Admission = clonePtr(a.Admission)
	if a.Rollback != nil {
		r := *a.Rollback
		r.Images = append([]ImageChange(nil), a.Rollback.Images...)
		c.Rollback = &r
	}
	if a.DisruptionBudget != nil {
		b := *a.DisruptionBudget
		b.DesiredHealthy, b.CurrentHealthy = clonePtr(b.DesiredHealthy), clonePtr(b.CurrentHealthy)
		c.DisruptionBudget = &b
	}
	return c
}

func copyActions(in []Action) []Action {
	if in == nil {
		return nil
	}
	out := make([]Action, len(in))
	for i, a := range in {
		out[i] = a.DeepCopy()
	}
	return out
}

func copyRolledBack(in []RolledBack) []RolledBack {
	if in == nil {
		return nil
	}
	out := make([]RolledBack, len(in))
	for i, r := range in {
		out[i] = r
		out[i].Images = append([]ImageChange(nil), r.Images...)
	}
	return out
}

func copyServer(s *ServerInfo) *ServerInfo {
	if s == nil {
		return nil
	}
	c := *s
	c.AssumedFeatureGates = maps.Clone(s.AssumedFeatureGates)
	c.ControllerManager = clonePtr(s.ControllerManager)
	return &c
}

func copyFindings(in []Finding) []Finding {
	if in == nil {
		return nil
	}
	out := make([]Finding, len(in))
	for i, f := range in {
		out[i] = f.DeepCopy()
	}
	return out
}

// DeepCopyObject lets cli-runtime printers print the report.
func (r *Report) DeepCopyObject() runtime.Object {
	c := *r
	c.StatefulSets = append([]StatefulSetSummary(nil), r.StatefulSets...)
	c.Findings = copyFindings(r.Findings)
	c.Warnings = append([]string(nil), r.Warnings...)
	c.Server = copyServer(r.Server)
	c.Clusters = append([]FleetMember(nil), r.Clusters...)
	return &c
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *FixResult) DeepCopyObject() runtime.Object {
	c := *r
	c.Actions = copyActions(r.Actions)
	c.Unrepaired = copyFindings(r.Unrepaired)
	return &c
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *WaitResult) DeepCopyObject() runtime.Object {
	c := *r
	c.StatefulSets = append([]StatefulSetSummary(nil), r.StatefulSets...)
	c.Findings = copyFindings(r.Findings)
	c.Actions = copyActions(r.Actions)
	c.RolledBack = copyRolledBack(r.RolledBack)
	return &c
}

// DeepCopyObject lets cli-runtime printers print the version.
func (v *Version) DeepCopyObject() runtime.Object {
	c := *v
	return &c
}

// NewCanaryResult returns a CanaryResult with a verdict.
func NewCanaryResult(result Verdict, message string) *CanaryResult {
	r := &CanaryResult{Result: result, Message: message, Steps: []CanaryStep{}, StatefulSets: []StatefulSetSummary{}, Findings: []Finding{}}
	r.SetGroupVersionKind(GroupVersion.WithKind("CanaryResult"))
	return r
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *CanaryResult) DeepCopyObject() runtime.Object {
	c := *r
	c.Steps = copySteps(r.Steps)
	c.StatefulSets = append([]StatefulSetSummary(nil), r.StatefulSets...)
	c.Findings = copyFindings(r.Findings)
	c.Actions = copyActions(r.Actions)
	c.RolledBack = copyRolledBack(r.RolledBack)
	return &c
}

func copySteps(in []CanaryStep) []CanaryStep {
	if in == nil {
		return nil
	}
	out := append([]CanaryStep(nil), in...)
	for i := range out {
		if a := out[i].Analysis; a != nil {
			c := *a
			c.Metrics = append([]AnalysisMetric(nil), a.Metrics...)
			for j := range c.Metrics {
				c.Metrics[j].Measurements = append([]AnalysisMeasurement(nil), a.Metrics[j].Measurements...)
			}
			out[i].Analysis = &c
		}
	}
	return out
}

// FindingLess is the order of findings in a report: most severe first, then by context,
// namespace, StatefulSet, pod, code and container.
func FindingLess(a, b *Finding) bool {
	if a.Severity.Rank() != b.Severity.Rank() {
		return a.Severity.Rank() > b.Severity.Rank()
	}
	if a.Context != b.Context {
		return a.Context < b.Context
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.StatefulSet != b.StatefulSet {
		return a.StatefulSet < b.StatefulSet
	}
	if a.Pod != b.Pod {
		return a.Pod < b.Pod
	}
	if a.Code != b.Code {
		return a.Code < b.Code
	}
	return a.Container < b.Container
}
