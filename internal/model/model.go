// Package model holds what diagnosis hands to repair, wait, watch and render: findings with the
// typed facts repair acts on, reports, planned actions with their cause, and results. api/v1
// holds only what is printed; Public converts at the print boundary.
package model

import (
	"encoding/json"
	"maps"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Finding is a printed finding plus the typed hand-offs repair and the table read.
type Finding struct {
	apiv1.Finding

	// Facts are what the analyzer established, typed per code; package explain words them into
	// Message, Short, Remedy and the details that are sentences.
	Facts Facts
	// Short is the message as the table shows it.
	Short string
	// Target is the exact pod diagnosed, for repair preconditions.
	Target *PodRef
	// Patch is the template change that repairs an unresolved image reference.
	Patch *ImagePatch
	// FailingPods are the pods that fail to pull the image of an image finding.
	FailingPods []string
	// LostNode names the node of a pod stuck terminating when that node is gone or has not been
	// Ready for longer than the terminating threshold: the only case fix may force-delete.
	LostNode string
	// LogCurrent: the container's last run is its current, terminated one, whose log the
	// kubelet serves as the current log (it has no previous one then).
	LogCurrent bool
}

// Facts are the typed facts of one finding (a type of the analyzer that found it).
type Facts interface {
	// Code is the finding code the facts explain.
	Code() apiv1.Code
}

// PodRef identifies one pod object as it was when diagnosed.
type PodRef struct {
	Name string
	UID  types.UID
}

// ImagePatch is a JSON-patch replace of one image field of a StatefulSet's template.
type ImagePatch struct {
	// Path is the JSON pointer of the image, e.g. /spec/template/spec/containers/0/image.
	Path string
	// From is the image as diagnosed (the patch tests it first).
	From string
	// To is the image to write.
	To string
	// Admission is the API server's answer to To, when it was asked (--confirm-with-admission);
	// To is then what admission wrote.
	Admission *apiv1.AdmissionCheck
}

// JSONPatch is the JSON patch that tests the image, and the object's UID unless uid is "", then
// replaces the image: what fix sends and what the remedy shows.
func (p ImagePatch) JSONPatch(uid types.UID) string {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value"`
	}
	ops := []op{{"test", p.Path, p.From}, {"replace", p.Path, p.To}}
	if uid != "" {
		ops = append([]op{{"test", "/metadata/uid", string(uid)}}, ops...)
	}
	body, _ := json.Marshal(ops) // strings only: it cannot fail
	return string(body)
}

// DeepCopy copies a finding, its details and its hand-offs (facts are shared: nothing changes
// them once explained).
func (f Finding) DeepCopy() Finding {
	c := f
	c.Finding = f.Finding.DeepCopy()
	if f.Target != nil {
		t := *f.Target
		c.Target = &t
	}
	if f.Patch != nil {
		p := *f.Patch
		c.Patch = &p
	}
	c.FailingPods = append([]string(nil), f.FailingPods...)
	return c
}

// SortFindings orders findings as apiv1.SortFindings does.
func SortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool { return apiv1.FindingLess(&f[i].Finding, &f[j].Finding) })
}

// PublicFindings returns the printed part of findings (never nil).
func PublicFindings(in []Finding) []apiv1.Finding {
	out := make([]apiv1.Finding, len(in))
	for i, f := range in {
		out[i] = f.Finding.DeepCopy()
	}
	return out
}

// Rollout is one StatefulSet's rollout as its object says, before the findings are counted.
type Rollout struct {
	// Summary is the StatefulSet's summary; Summaries sets its status.
	Summary     apiv1.StatefulSetSummary
	Terminating bool
	// Complete is true when the controller reports the rollout done (rollout.Complete).
	Complete bool
}

// Summaries gives each StatefulSet its status once every analyzer has run: Terminating while
// it is deleted, else Stuck with an error finding of any analyzer, else Complete or Progressing.
func Summaries(sets []Rollout, findings []Finding) []apiv1.StatefulSetSummary {
	stuck := map[types.NamespacedName]bool{}
	for _, f := range findings {
		if f.Severity == apiv1.SeverityError {
			stuck[types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}] = true
		}
	}
	if len(sets) == 0 {
		return nil
	}
	out := make([]apiv1.StatefulSetSummary, len(sets))
	for i, s := range sets {
		out[i] = s.Summary
		switch {
		case s.Terminating:
			out[i].Status = apiv1.StatusTerminating
		case stuck[types.NamespacedName{Namespace: s.Summary.Namespace, Name: s.Summary.Name}]:
			out[i].Status = apiv1.StatusStuck
		case s.Complete:
			out[i].Status = apiv1.StatusComplete
		default:
			out[i].Status = apiv1.StatusProgressing
		}
	}
	return out
}

// Report is a diagnosis: what check prints, plus what callers that follow the cluster need.
type Report struct {
	OpenShift    bool
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []Finding
	Warnings     []string
	Server       *apiv1.ServerInfo
	// RecheckAt is when a time-based rule may next change the verdict (zero: none pending).
	RecheckAt time.Time
}

// NewReport sorts StatefulSets by context, namespace and name, and findings by SortFindings.
func NewReport(openshift bool, sets []apiv1.StatefulSetSummary, findings []Finding) *Report {
	apiv1.SortStatefulSets(sets)
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
	rep := apiv1.NewReport(r.OpenShift, append([]apiv1.StatefulSetSummary(nil), r.StatefulSets...), PublicFindings(r.Findings))
	rep.Warnings = append([]string(nil), r.Warnings...)
	if r.Server != nil {
		server := *r.Server
		server.AssumedFeatureGates = maps.Clone(r.Server.AssumedFeatureGates)
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
	Tests []ImagePatch
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
	Unrepaired []Finding
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

// WaitResult is wait's verdict with the findings and actions behind it.
type WaitResult struct {
	Result       apiv1.Verdict
	Elapsed      string
	Message      string
	StatefulSets []apiv1.StatefulSetSummary
	Findings     []Finding
	Actions      []Action
	RolledBack   []apiv1.RolledBack
}

// NewWaitResult returns a result with a verdict.
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

// Blocking reports whether a finding keeps a rollout from completing by itself (wait's policy):
// every error, a tag not imported yet, an orphan pod holding an ordinal's name, and OnDelete pods
// on an old revision (they change only when someone deletes them).
func (f Finding) Blocking() bool {
	return f.Severity == apiv1.SeverityError || f.Code == apiv1.ImageStreamTagNotFound || f.Code == apiv1.OnDeleteStale ||
		(f.Code == apiv1.OrphanedRevision && f.Pod != "")
}

// Key identifies a finding across diagnoses.
func (f Finding) Key() string {
	return strings.Join([]string{f.Context, string(f.Code), f.Namespace, f.StatefulSet, f.Pod, f.Container, f.Image}, "/")
}
