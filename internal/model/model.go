// Package model holds what diagnosis hands to repair, wait, watch and render: findings with the
// typed facts repair acts on, reports, planned actions with their cause, and results. api/v1
// holds only what is printed; Public converts at the print boundary.
package model

import (
	"encoding/json"
	"maps"
	"sort"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// PublicFindings returns the printed part of findings (never nil).
func PublicFindings(in []stuck.Finding) []apiv1.Finding {
	out := make([]apiv1.Finding, len(in))
	for i, f := range in {
		out[i] = f.Finding.DeepCopy()
	}
	return out
}

// SortFindings orders findings as a report lists them (apiv1.FindingLess).
func SortFindings(f []stuck.Finding) {
	sort.SliceStable(f, func(i, j int) bool { return apiv1.FindingLess(&f[i].Finding, &f[j].Finding) })
}

// Report is a diagnosis: what check prints, plus what callers that follow the cluster need.
type Report struct {
	OpenShift    bool
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []stuck.Finding
	Warnings     []string
	Server       *apiv1.ServerInfo
	// RecheckAt is when a time-based rule may next change the verdict (zero: none pending).
	RecheckAt time.Time
}

// NewReport sorts StatefulSets by context, namespace and name, and findings by SortFindings.
func NewReport(openshift bool, sets []apiv1.StatefulSetSummary, findings []stuck.Finding) *Report {
	SortStatefulSets(sets)
	SortFindings(findings)
	return &Report{OpenShift: openshift, StatefulSets: sets, Findings: findings}
}

// Count returns how many findings are at least as severe as min.
func (r *Report) Count(min apiv1.Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity.Rank() >= min.Rank() {
			n++
		}
	}
	return n
}

// Public is the Report document check prints.
func (r *Report) Public() *apiv1.Report {
	sets, findings := append([]apiv1.StatefulSetSummary(nil), r.StatefulSets...), PublicFindings(r.Findings)
	SortStatefulSets(sets)
	sort.SliceStable(findings, func(i, j int) bool { return apiv1.FindingLess(&findings[i], &findings[j]) })
	rep := apiv1.NewReport(r.OpenShift, sets, findings)
	rep.Warnings = append([]string(nil), r.Warnings...)
	if r.Server != nil {
		server := *r.Server
		server.AssumedFeatureGates = maps.Clone(r.Server.AssumedFeatureGates)
		if cm := r.Server.ControllerManager; cm != nil {
			c := *cm
			server.ControllerManager = &c
		}
		rep.Server = &server
	}
	return rep
}

// Action is a planned repair: the printed action plus its cause and what applying it needs.
type Action struct {
	apiv1.Action

	// Cause is the code of the finding that called for the action.
	Cause apiv1.Code
	// Path is the JSON pointer of the image field a PatchImage replaces.
	Path string
	// AfterPatch marks a pod that becomes an off-revision pod only once its StatefulSet is
	// patched: it is deleted only if a fresh diagnosis after the patch proves it stuck.
	AfterPatch bool
	// Guard is what a Rollback writes and tests (nil for other actions).
	Guard *RollbackPlan
	// DryRun marks an action applied as a dry run (client or server): its result says what
	// would have happened; nothing changed.
	DryRun bool
	// NotObserved marks a delete skipped because the StatefulSet controller did not observe
	// the patch it waited for within the budget.
	NotObserved bool
	// Outcome is what became of the action once applied (Conclude sets it with Result; explain
	// words it into Message). Zero in a plan not yet applied.
	Outcome Outcome
}

// Kind is the kind of change.
func (a *Action) Kind() apiv1.ActionKind { return a.Action.Action }

// RollbackPlan is the guarded patch of a Rollback.
type RollbackPlan struct {
	// Template is the pod template written: the revision's own JSON, as the controller stored
	// it (fields this client does not know included).
	Template json.RawMessage
	// Generation is the StatefulSet's metadata.generation at diagnosis; the patch tests it.
	Generation int64
	// Tests are the current template's image fields as diagnosed; the patch tests each.
	Tests []stuck.ImagePatch
}

// PublicActions returns the printed part of actions (never nil).
func PublicActions(in []Action) []apiv1.Action {
	out := make([]apiv1.Action, len(in))
	for i, a := range in {
		out[i] = a.Action
		if a.Action.Admission != nil {
			adm := *a.Action.Admission
			out[i].Admission = &adm
		}
		if a.Action.Rollback != nil {
			r := *a.Action.Rollback
			r.Images = append([]apiv1.ImageChange(nil), r.Images...)
			out[i].Rollback = &r
		}
	}
	return out
}

// FixResult is what fix did: its planned actions, with results once applied.
type FixResult struct {
	DryRun     apiv1.DryRunMode
	Actions    []Action
	Unrepaired []stuck.Finding
	Rollout    apiv1.RolloutOutcome
}

// Public is the FixResult document fix prints.
func (r *FixResult) Public() *apiv1.FixResult {
	out := apiv1.NewFixResult(r.DryRun)
	out.Actions = PublicActions(r.Actions)
	if len(r.Unrepaired) > 0 {
		out.Unrepaired = PublicFindings(r.Unrepaired)
	}
	out.Rollout = r.Rollout
	return out
}

// Repaired reports whether every planned action was done and no error finding was left
// unrepaired.
func (r *FixResult) Repaired() bool {
	for _, a := range r.Actions {
		if a.Result != apiv1.ResultDone {
			return false
		}
	}
	return len(r.Unrepaired) == 0
}

// WaitResult is wait's verdict with the findings and actions behind it. Result, Reason and
// RolledBack are the verdict (internal/verdict decides it), Message its words (explain's).
type WaitResult struct {
	Result apiv1.Verdict
	// Reason is the typed facts the verdict was decided from (nil in a result built from words).
	Reason       Reason
	Elapsed      string
	Message      string
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []stuck.Finding
	Actions      []Action
	RolledBack   []apiv1.RolledBack
}

// Verdict is the result's verdict.
func (r *WaitResult) Verdict() Verdict {
	return Verdict{Result: r.Result, Reason: r.Reason, RolledBack: r.RolledBack}
}

// NewWaitResult returns a result with a verdict in words only, no Reason (a document read back, a
// test's); the commands' verdicts come from explain.Result.
func NewWaitResult(result apiv1.Verdict, message string) *WaitResult {
	return &WaitResult{Result: result, Message: message}
}

// Public is the WaitResult document wait prints.
func (r *WaitResult) Public() *apiv1.WaitResult {
	out := apiv1.NewWaitResult(r.Result, r.Message)
	out.Elapsed = r.Elapsed
	if r.StatefulSets != nil {
		out.StatefulSets = append([]apiv1.StatefulSetSummary(nil), r.StatefulSets...)
	}
	out.Findings = PublicFindings(r.Findings)
	if len(r.Actions) > 0 {
		out.Actions = PublicActions(r.Actions)
	}
	out.RolledBack = append([]apiv1.RolledBack(nil), r.RolledBack...)
	if len(out.RolledBack) == 0 {
		out.RolledBack = nil
	}
	return out
}

// Ptr returns a pointer to v (for the pointer fields of apiv1.FindingDetails).
func Ptr[T any](v T) *T { return &v }

// SortStatefulSets orders StatefulSets by context, namespace and name.
func SortStatefulSets(sets []apiv1.StatefulSetSummary) {
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].Context != sets[j].Context {
			return sets[i].Context < sets[j].Context
		}
		if sets[i].Namespace != sets[j].Namespace {
			return sets[i].Namespace < sets[j].Namespace
		}
		return sets[i].Name < sets[j].Name
	})
}
