// Package v1 holds stsdiag's public documents (apiVersion stsdiag/v1): the Report of check, the
// FixResult of fix, the WaitResult of wait and the Version of version. Scripts and CI read them
// as JSON or YAML; field names, codes and results are public API and change only additively.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion of every stsdiag document.
var GroupVersion = schema.GroupVersion{Group: "stsdiag", Version: "v1"}

// Severity orders findings; --fail-on compares against it.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank is higher for more severe findings (0 for an unknown severity).
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Code names the kind of a finding. Scripts and CI match on it.
type Code string

// Finding codes.
const (
	StaleRevisionStuck       Code = "StaleRevisionStuck"
	CurrentRevisionFailing   Code = "CurrentRevisionFailing"
	OnDeleteStale            Code = "OnDeleteStale"
	VolumeClaimPending       Code = "VolumeClaimPending"
	PodUnschedulable         Code = "PodUnschedulable"
	OrphanedRevision         Code = "OrphanedRevision"
	StatefulSetTerminating   Code = "StatefulSetTerminating"
	PodStuckTerminating      Code = "PodStuckTerminating"
	UnresolvedImageReference Code = "UnresolvedImageReference"
	ImageStreamTagNotFound   Code = "ImageStreamTagNotFound"
	ImageLookupDisabled      Code = "ImageLookupDisabled"
	ImageResolutionSkipped   Code = "ImageResolutionSkipped"
	ImageTriggerInvalid      Code = "ImageTriggerInvalid"
	ImageTriggerStale        Code = "ImageTriggerStale"
	ServiceMissing           Code = "ServiceMissing"
	// PodCreateFailed: a pod (or its PersistentVolumeClaim) the controller must create is
	// refused by the API server (quota, PodSecurity, SCC, ServiceAccount, LimitRange, a webhook or
	// policy), or has been missing too long with no Event left to say why.
	PodCreateFailed Code = "PodCreateFailed"
	// RolloutBlocked: the controller waits on an ordinal for longer than any known cause
	// explains; details.waitingFor says on what.
	RolloutBlocked Code = "RolloutBlocked"
	// ControllerManagerNotRunning: kube-controller-manager's leader Lease has not been renewed
	// for longer than its duration: no instance runs the StatefulSet controller, no rollout in
	// the cluster progresses and every StatefulSet status is stale (check -A).
	ControllerManagerNotRunning Code = "ControllerManagerNotRunning"
)

// Finding is one reason a StatefulSet rollout will not finish, or a risk to it.
type Finding struct {
	// Context is the cluster, set when several were checked: its kubeconfig context (--contexts,
	// --all-contexts), or its ClusterProfile as NAMESPACE/NAME (--cluster-profiles).
	Context string `json:"context,omitempty"`
	// Code names the kind of finding (one of the constants above).
	Code Code `json:"code"`
	// Severity is error (the rollout will not finish), warning (a risk) or info.
	Severity Severity `json:"severity"`
	// Reason is the low-level cause, e.g. ImagePullBackOff or Unschedulable.
	Reason string `json:"reason,omitempty"`
	// Namespace of the StatefulSet.
	Namespace string `json:"namespace"`
	// StatefulSet the finding is about.
	StatefulSet string `json:"statefulSet"`
	// Pod the finding is about, if it concerns one pod.
	Pod string `json:"pod,omitempty"`
	// Container whose state or image is at fault.
	Container string `json:"container,omitempty"`
	// Image as written in the template or pod.
	Image string `json:"image,omitempty"`
	// ResolvedImage is what OpenShift's image lookup would have written instead of Image.
	ResolvedImage string `json:"resolvedImage,omitempty"`
	// Message explains the finding in full.
	Message string `json:"message"`
	// Remedy is the command or change that repairs it.
	Remedy string `json:"remedy,omitempty"`
	// Details are extra facts for people and scripts (podUID, blocks, events, patch, ...); each
	// key is declared and documented in FindingDetails.
	Details FindingDetails `json:"details,omitzero"`
}

// RolloutStatus is the state of one StatefulSet's rollout.
type RolloutStatus string

// Rollout states of a StatefulSet.
const (
	StatusComplete    RolloutStatus = "Complete"
	StatusProgressing RolloutStatus = "Progressing"
	StatusStuck       RolloutStatus = "Stuck"
	StatusTerminating RolloutStatus = "Terminating"
)

// StatefulSetSummary is one StatefulSet in scope.
type StatefulSetSummary struct {
	// Context is the cluster, set when several were checked: its kubeconfig context, or its
	// ClusterProfile as NAMESPACE/NAME.
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas is spec.replicas (1 when unset).
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is status.readyReplicas.
	ReadyReplicas int32 `json:"readyReplicas"`
	// CurrentRevision and UpdateRevision are the controller's status revisions.
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
	// Status is Complete, Progressing, Stuck or Terminating.
	Status RolloutStatus `json:"status"`
	// Message says why, in one line: the first error finding of a Stuck StatefulSet (its code,
	// pod and short message), how far a Progressing rollout got.
	Message string `json:"message,omitempty"`
}

// Report is the document `check -o json|yaml` prints (kind Report).
type Report struct {
	metav1.TypeMeta `json:",inline"`
	// OpenShift is true when the ImageStream checks ran.
	OpenShift bool `json:"openshift"`
	// StatefulSets are the StatefulSets in scope, sorted by namespace and name.
	StatefulSets []StatefulSetSummary `json:"statefulSets"`
	// Findings, most severe first.
	Findings []Finding `json:"findings"`
	// Warnings are problems gathering optional data (e.g. no permission to list ImageStreams).
	Warnings []string `json:"warnings,omitempty"`
	// Server is the release whose StatefulSet-controller rules the verdicts follow.
	Server *ServerInfo `json:"server,omitempty"`
	// Clusters are the fleet's members when several clusters were checked (--contexts,
	// --all-contexts, --cluster-profiles), each with why it could not be checked, if it could not.
	// Added in stsdiag/v1 with --cluster-profiles.
	Clusters []FleetMember `json:"clusters,omitempty"`
	// Partial is true when a member of the fleet could not be checked: its StatefulSets and
	// findings are missing from this report (clusters and warnings say which and why).
	Partial bool `json:"partial,omitempty"`
}

// FleetMember is one cluster of a fleet as a Report lists it.
type FleetMember struct {
	// Name is the member as its StatefulSets and findings name it in context: the kubeconfig
	// context, or with --cluster-profiles the ClusterProfile as NAMESPACE/NAME.
	Name string `json:"name"`
	// Error is why the member could not be checked: unreachable, unauthorized, its
	// ClusterProfile offers no provider of the provider file, its exec plugin failed or did not
	// answer in time. Empty when it was checked.
	Error string `json:"error,omitempty"`
}

// ServerInfo says which controller rules were applied.
type ServerInfo struct {
	// Version is the API server's gitVersion ("" when unknown, then the newest rules modelled).
	Version string `json:"version"`
	// Rules is the release whose rules were applied, e.g. "v1.35.3".
	Rules string `json:"rules"`
	// AssumedFeatureGates are the gates the verdicts assume: the release's defaults, overridden
	// by --feature-gates.
	AssumedFeatureGates map[string]bool `json:"assumedFeatureGates"`
	// ControllerManager is what check -A found of kube-controller-manager, whose StatefulSet
	// statuses it triages by; absent for other scopes.
	ControllerManager *ControllerManagerInfo `json:"controllerManager,omitempty"`
}

// ControllerManagerInfo is kube-controller-manager's leader Lease as check -A read it.
type ControllerManagerInfo struct {
	// Lease is namespace/name of the leader Lease read.
	Lease string `json:"lease"`
	// State is Renewed, NotRenewed (finding ControllerManagerNotRunning), NotFound (leader
	// election off) or Unreadable.
	State string `json:"state"`
	// Holder and RenewTime (RFC 3339) are the Lease's, when it was read.
	Holder    string `json:"holder,omitempty"`
	RenewTime string `json:"renewTime,omitempty"`
	// Assumed says what was assumed of StatefulSet statuses when the Lease says nothing (NotFound,
	// Unreadable): "statuses current".
	Assumed string `json:"assumed,omitempty"`
	// Error is why the Lease could not be read (Unreadable).
	Error string `json:"error,omitempty"`
}

// Repair action kinds.
type ActionKind string

const (
	// PatchImage sets a template image to what image lookup would have written.
	PatchImage ActionKind = "PatchImage"
	// DeletePod deletes a pod proven stuck so the controller recreates it (PVCs kept).
	DeletePod ActionKind = "DeletePod"
	// ForceDeletePod removes a pod stuck terminating on a lost node (grace period 0), only with
	// fix --force-lost-node.
	ForceDeletePod ActionKind = "ForceDeletePod"
	// Rollback returns a StatefulSet's template to an earlier revision whose pods were Ready,
	// when its update revision fails at startup; only with fix --rollback. The pods still on the
	// failing revision are then deleted (DeletePod, proven again after the rollback).
	Rollback ActionKind = "Rollback"
)

// ActionResult is what became of an action.
type ActionResult string

// Results of an action; a planned action not yet applied has none.
const (
	ResultDone    ActionResult = "done"
	ResultSkipped ActionResult = "skipped"
	ResultFailed  ActionResult = "failed"
)

// Action is one planned repair and, once applied, its result.
type Action struct {
	// Context is the cluster the action ran in, set when several were waited for: its kubeconfig
	// context (wait --contexts, --all-contexts), or its ClusterProfile as NAMESPACE/NAME
	// (--cluster-profiles).
	Context string `json:"context,omitempty"`
	// Action is the kind of change.
	Action ActionKind `json:"action"`
	// Namespace and StatefulSet the action belongs to.
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	// Pod deleted by a DeletePod.
	Pod string `json:"pod,omitempty"`
	// Container whose image a PatchImage changes.
	Container string `json:"container,omitempty"`
	// From and To are the image before and after a PatchImage.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Admission is the API server's answer to the image a PatchImage writes, with
	// --confirm-with-admission: To is what admission wrote when it was asked and answered.
	Admission *AdmissionCheck `json:"admission,omitempty"`
	// UID is the precondition: of the StatefulSet for a patch, of the pod for a delete.
	UID string `json:"uid,omitempty"`
	// Result is done, skipped or failed (empty in a plan not yet applied).
	Result ActionResult `json:"result,omitempty"`
	// Message says what happened, or why not.
	Message string `json:"message,omitempty"`

	// Rollback is what a Rollback action returns the template to (nil for other actions).
	Rollback *RollbackTarget `json:"rollback,omitempty"`

	// Disruption is how a DeletePod removes its pod: delete (DELETE) or evict (the Eviction
	// API, which honours PodDisruptionBudgets). Empty for other actions.
	Disruption DisruptionMode `json:"disruption,omitempty"`
	// DisruptionBudget is the PodDisruptionBudget that refused an eviction (429 or 403 with a
	// DisruptionBudget cause), as the API server named it.
	DisruptionBudget *DisruptionBudget `json:"disruptionBudget,omitempty"`
}

// DisruptionMode is fix's --disruption: how a pod proven stuck is removed.
type DisruptionMode string

// Disruption modes.
const (
	// DisruptionDelete deletes the pod (DELETE with a UID precondition): PodDisruptionBudgets
	// are not consulted, as for kubectl delete pod.
	DisruptionDelete DisruptionMode = "delete"
	// DisruptionEvict creates an Eviction (policy/v1) with the same UID precondition: the API
	// server deletes the pod only where its PodDisruptionBudget allows it.
	DisruptionEvict DisruptionMode = "evict"
)

// DisruptionBudget is a PodDisruptionBudget that refused an eviction.
type DisruptionBudget struct {
	// Name of the PodDisruptionBudget.
	Name string `json:"name"`
	// DesiredHealthy and CurrentHealthy are its status numbers when the API server said them
	// ("needs N healthy pods and has M currently").
	DesiredHealthy *int32 `json:"desiredHealthy,omitempty"`
	CurrentHealthy *int32 `json:"currentHealthy,omitempty"`
	// Message is the API server's cause, verbatim.
	Message string `json:"message"`
}

// RollbackTarget is the revision a Rollback returns a StatefulSet's template to.
type RollbackTarget struct {
	// Revision is the ControllerRevision returned to (status.currentRevision, its pods Ready).
	Revision string `json:"revision"`
	// FromRevision is the failing update revision left.
	FromRevision string `json:"fromRevision"`
	// Images are the image changes, one per container whose image differs.
	Images []ImageChange `json:"images,omitempty"`
}

// ImageChange is one container image a Rollback changes.
type ImageChange struct {
	// Container is the container's name (init containers included).
	Container string `json:"container"`
	// From is the image of the failing template, To the image of the revision returned to
	// (empty when the container does not exist on that side).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// RolloutOutcome is how the rollouts followed by fix --wait ended.
type RolloutOutcome string

// Rollout outcomes of fix --wait (lower case: the values fix has always printed).
const (
	RolloutComplete RolloutOutcome = "complete"
	RolloutTimedOut RolloutOutcome = "timed out"
	// RolloutNotObserved: the StatefulSet controller never observed a patch fix made
	// (status.observedGeneration stayed below the patched generation) within --wait; the pods
	// waiting for that patch were not deleted, as no fresh diagnosis could be trusted. Exit 1.
	RolloutNotObserved RolloutOutcome = "not observed"
)

// DryRunMode is fix's --dry-run, as kubectl names its modes.
type DryRunMode string

// Dry-run modes.
const (
	DryRunNone   DryRunMode = "none"
	DryRunClient DryRunMode = "client"
	DryRunServer DryRunMode = "server"
)

// FixResult is the document `fix -o json|yaml` prints (kind FixResult).
type FixResult struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun is none, client or server.
	DryRun DryRunMode `json:"dryRun"`
	// Actions planned, with their results once applied.
	Actions []Action `json:"actions"`
	// Unrepaired are the error findings fix has no safe repair for.
	Unrepaired []Finding `json:"unrepaired,omitempty"`
	// Rollout is "complete", "timed out" or "not observed" with --wait; "not observed" also
	// without --wait when the controller did not observe a patch in time.
	Rollout RolloutOutcome `json:"rollout,omitempty"`
}

// Verdict is wait's answer.
type Verdict string

// Verdicts of wait.
const (
	WaitComplete Verdict = "Complete"
	WaitStuck    Verdict = "Stuck"
	WaitTimedOut Verdict = "TimedOut"
	WaitNotFound Verdict = "NotFound"
	// WaitUnevaluable: the StatefulSets could not be read (forbidden, API unreachable, kubeconfig
	// unusable), so there is no verdict; exit 2, as for NotFound. NotFound means a named
	// StatefulSet or namespace does not exist.
	WaitUnevaluable Verdict = "Unevaluable"
	// WaitRolledBack: wait --fix --rollback returned a StatefulSet to an earlier revision and
	// its rollout completed there. The deploy failed all the same (exit 1).
	WaitRolledBack Verdict = "RolledBack"
	// WaitInterrupted: a signal (SIGINT, SIGTERM) stopped wait before a verdict (exit 130).
	WaitInterrupted Verdict = "Interrupted"
	// WaitNotObserved: wait --fix patched a template but the StatefulSet controller never
	// observed the patch (status.observedGeneration below the patched generation) before
	// --timeout, so the pods waiting for it were not deleted (exit 1, not 3: the rollout was
	// not progressing, its controller was not there).
	WaitNotObserved Verdict = "NotObserved"
)

// WaitResult is the document `wait -o json|yaml` prints (kind WaitResult).
type WaitResult struct {
	metav1.TypeMeta `json:",inline"`
	// Result is Complete, Stuck, TimedOut, NotFound, Unevaluable, RolledBack, NotObserved or Interrupted.
	Result Verdict `json:"result"`
	// Elapsed is how long wait ran.
	Elapsed string `json:"elapsed"`
	// Message explains the result.
	Message string `json:"message,omitempty"`
	// StatefulSets at the end.
	StatefulSets []StatefulSetSummary `json:"statefulSets"`
	// Findings at the end.
	Findings []Finding `json:"findings"`
	// Actions are the repairs made with --fix.
	Actions []Action `json:"actions,omitempty"`
	// RolledBack are the StatefulSets wait --fix --rollback returned to an earlier revision.
	RolledBack []RolledBack `json:"rolledBack,omitempty"`
}

// RolledBack is one StatefulSet returned to an earlier revision by a Rollback.
type RolledBack struct {
	// Context is the kubeconfig context of the cluster, set when several were waited on.
	Context     string `json:"context,omitempty"`
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	// Revision returned to, and the failing revision left.
	Revision     string `json:"revision"`
	FromRevision string `json:"fromRevision"`
	// Images changed by the rollback.
	Images []ImageChange `json:"images,omitempty"`
}

// Version is the document `version -o json|yaml` prints (kind Version).
type Version struct {
	metav1.TypeMeta `json:",inline"`
	// Version is the release, stamped at build time ("dev" otherwise).
	Version string `json:"version"`
	// GitCommit the binary was built from, when known.
	GitCommit string `json:"gitCommit,omitempty"`
	// GoVersion that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// CanaryStopped: canary stopped because someone else changed the StatefulSet (its partition, its
// spec or the object itself) while it ran; nothing was overwritten (exit 1).
const CanaryStopped Verdict = "Stopped"

// CanaryInconclusive: the canary's analysis could not tell whether the new pods serve well
// (the metrics provider unreachable or failing, no data, or neither condition held, beyond the
// template's limits): the canary paused where it was — nothing rolled back and no step forward
// (exit 4). Added with canary --analysis.
const CanaryInconclusive Verdict = "Inconclusive"

// CanaryResult is the document `canary -o json|yaml` prints (kind CanaryResult, added in
// stsdiag v1 with the canary command; fields are only ever added).
type CanaryResult struct {
	metav1.TypeMeta `json:",inline"`
	// Result is Complete (every step passed, the rollout complete), RolledBack (a canary pod was
	// stuck: the template is back on the current revision), Stuck (a canary pod was stuck and
	// --no-rollback, or no safe rollback existed), Stopped (someone else changed the
	// StatefulSet), TimedOut, NotFound, Unevaluable or Interrupted — wait's verdicts and exit
	// codes, plus Stopped (exit 1) and Inconclusive (the analysis could not tell: paused, exit 4).
	Result Verdict `json:"result"`
	// Elapsed is how long canary ran.
	Elapsed string `json:"elapsed"`
	// Message explains the result; for RolledBack and Stuck it names the finding.
	Message     string `json:"message,omitempty"`
	Namespace   string `json:"namespace"`
	StatefulSet string `json:"statefulSet"`
	// PartitionBefore is spec.updateStrategy.rollingUpdate.partition before canary changed it.
	PartitionBefore int32 `json:"partitionBefore"`
	// Steps as resolved against spec.replicas, with how far each got.
	Steps []CanaryStep `json:"steps"`
	// StatefulSets at the end.
	StatefulSets []StatefulSetSummary `json:"statefulSets"`
	// Findings at the end (for Stuck and RolledBack: those that stopped the step).
	Findings []Finding `json:"findings"`
	// Actions are the rollback and the deletes of proven-stuck canary pods.
	Actions []Action `json:"actions,omitempty"`
	// RolledBack names the revision the template returned to.
	RolledBack []RolledBack `json:"rolledBack,omitempty"`
}

// CanaryStepResult is how far one step got.
type CanaryStepResult string

// Results of a canary step.
const (
	// StepPassed: the step's pods were Ready on the update revision and held for --hold with no finding.
	StepPassed CanaryStepResult = "Passed"
	// StepFailed: a finding held for --hold during the step.
	StepFailed CanaryStepResult = "Failed"
	// StepStopped: the canary ended during the step for another reason (Stopped, TimedOut, Interrupted).
	StepStopped CanaryStepResult = "Stopped"
	// StepPending: the step was not reached.
	StepPending CanaryStepResult = "Pending"
	// StepInconclusive: the step's analysis could not tell; the canary paused in it.
	StepInconclusive CanaryStepResult = "Inconclusive"
)

// CanaryStep is one step of a canary.
type CanaryStep struct {
	// Step as written in --steps ("1", "50%"; "100%" when implied).
	Step string `json:"step"`
	// Pods on the update revision in this step, and the partition that makes it so.
	Pods      int32 `json:"pods"`
	Partition int32 `json:"partition"`
	// Result is Passed, Failed, Stopped, Inconclusive or Pending.
	Result CanaryStepResult `json:"result"`
	// Analysis is the step's analysis (canary --analysis): its metrics measured once the step's
	// pods held healthy, and the measurements of metrics with no count taken during the step.
	Analysis *AnalysisRun `json:"analysis,omitempty"`
}

// AnalysisPhase is the phase of an analysis, a metric or a measurement, as Argo Rollouts names
// them.
type AnalysisPhase string

// Analysis phases.
const (
	AnalysisRunning      AnalysisPhase = "Running"
	AnalysisSuccessful   AnalysisPhase = "Successful"
	AnalysisFailed       AnalysisPhase = "Failed"
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
	AnalysisError        AnalysisPhase = "Error"
)

// AnalysisRun is one step's run of an AnalysisTemplate.
type AnalysisRun struct {
	// Template is the AnalysisTemplate's name.
	Template string `json:"template"`
	// Phase is Successful (the step may go on), Failed (the canary rolls back), Inconclusive or
	// Error (the canary pauses), or Running when the canary ended first.
	Phase AnalysisPhase `json:"phase"`
	// Message says which metric decided the phase, and why.
	Message string           `json:"message,omitempty"`
	Metrics []AnalysisMetric `json:"metrics"`
}

// AnalysisMetric is one metric of an AnalysisRun: its query with the arguments substituted,
// its conditions, its tallies and its measurements.
type AnalysisMetric struct {
	Name             string        `json:"name"`
	Query            string        `json:"query"`
	SuccessCondition string        `json:"successCondition,omitempty"`
	FailureCondition string        `json:"failureCondition,omitempty"`
	Phase            AnalysisPhase `json:"phase"`
	Message          string        `json:"message,omitempty"`
	Successful       int32         `json:"successful"`
	Failed           int32         `json:"failed"`
	Inconclusive     int32         `json:"inconclusive"`
	Error            int32         `json:"error"`
	// Measurements in the order taken.
	Measurements []AnalysisMeasurement `json:"measurements"`
}

// AnalysisMeasurement is one query and its evaluation.
type AnalysisMeasurement struct {
	Phase AnalysisPhase `json:"phase"`
	// Value is the query's result as the conditions saw it ("[0.5]" for a vector of one).
	Value string `json:"value,omitempty"`
	// Message is the error of a measurement in phase Error.
	Message    string      `json:"message,omitempty"`
	StartedAt  metav1.Time `json:"startedAt"`
	FinishedAt metav1.Time `json:"finishedAt"`
}
