package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodsWithoutStatefulSet: pods the StatefulSet controller created (they carry the label
// statefulset.kubernetes.io/pod-name) have no controller any more, and their StatefulSet is gone,
// being deleted, or has not adopted them: a StatefulSet deleted with --cascade=orphan and not
// (yet) created again — a migration stopped half-way. Nothing recreates such a pod when it fails
// or is deleted. details.pods names them; details.savedCopy names the ConfigMap in which `stsdiag
// migrate` keeps the original StatefulSet while it migrates one. Added with the migrate command.
const PodsWithoutStatefulSet Code = "PodsWithoutStatefulSet"

// MigrationOutcome is how a migration (or migrate --status) ended.
type MigrationOutcome string

// Migration outcomes, and their exit codes.
const (
	// Migrated: the StatefulSet was recreated with the new immutable fields, every pod adopted
	// by it and proven so, the saved copy removed (exit 0).
	Migrated MigrationOutcome = "Migrated"
	// NothingToMigrate: no field Kubernetes forbids changing differs (exit 0); nothing changed.
	NothingToMigrate MigrationOutcome = "NothingToMigrate"
	// MigrationPlanned: --dry-run printed the plan; nothing changed (exit 0).
	MigrationPlanned MigrationOutcome = "Planned"
	// MigrationRefused: the plan was refused before anything changed, for the reasons in
	// refusals (exit 1).
	MigrationRefused MigrationOutcome = "Refused"
	// MigrationNotConfirmed: the person asked declined, or there was nobody to ask and no --yes
	// (exit 1); nothing changed.
	MigrationNotConfirmed MigrationOutcome = "NotConfirmed"
	// MigrationIncomplete: the migration began and stopped before its end — a finalizer held
	// the delete, the controller did not adopt the pods, a step failed — within --timeout; the
	// saved copy stays and the same command finishes the job (exit 1; 130 when interrupted).
	MigrationIncomplete MigrationOutcome = "Incomplete"
	// MigrationInProgress: migrate --status found a migration begun and not finished, or pods
	// without their StatefulSet (exit 1).
	MigrationInProgress MigrationOutcome = "InProgress"
	// MigrationNone: migrate --status found no migration under way (exit 0).
	MigrationNone MigrationOutcome = "None"
)

// MigrationPhase is where a migration stands, as read from the cluster: the saved copy, the
// StatefulSet of that name and its pods.
type MigrationPhase string

// Migration phases, in the order a migration goes through them.
const (
	// PhaseNotStarted: no saved copy; the StatefulSet is the original.
	PhaseNotStarted MigrationPhase = "NotStarted"
	// PhaseSaved: the original is saved in the ConfigMap and still exists.
	PhaseSaved MigrationPhase = "Saved"
	// PhaseDeleting: the original is being deleted (propagationPolicy Orphan), held by finalizers.
	PhaseDeleting MigrationPhase = "Deleting"
	// PhaseDeleted: the original is gone; its pods run without a StatefulSet.
	PhaseDeleted MigrationPhase = "Deleted"
	// PhaseCreated: the new StatefulSet exists; its adoption of the pods is not proven yet.
	PhaseCreated MigrationPhase = "Created"
	// PhaseProven: every pod is proven adopted; the final spec and the copy's removal remain.
	PhaseProven MigrationPhase = "Proven"
	// PhaseDone: no saved copy and the StatefulSet as asked.
	PhaseDone MigrationPhase = "Done"
	// PhaseOrphaned: pods without their StatefulSet and no saved copy (a migration by other
	// means stopped half-way; migrate cannot finish it).
	PhaseOrphaned MigrationPhase = "Orphaned"
)

// MigrationStepName names a step of a migration.
type MigrationStepName string

// Migration steps, in order.
const (
	// MigrationGrowClaim patches one existing PersistentVolumeClaim's storage request (UID and
	// resourceVersion preconditions).
	MigrationGrowClaim MigrationStepName = "GrowClaim"
	// MigrationSaveCopy creates the ConfigMap holding the original StatefulSet (owned by nothing),
	// or refreshes its record of the pods right before the delete.
	MigrationSaveCopy MigrationStepName = "SaveCopy"
	// MigrationDeleteOrphan deletes the original StatefulSet with propagationPolicy Orphan, UID and
	// resourceVersion preconditions; its pods and claims stay.
	MigrationDeleteOrphan MigrationStepName = "DeleteOrphan"
	// MigrationCreate creates the new StatefulSet with the running template (and updateStrategy
	// OnDelete until the proof, so no pod is replaced whatever revision the controller computes).
	MigrationCreate MigrationStepName = "Create"
	// MigrationProve checks that the controller adopted every pod: owner, UID, revision label,
	// revisions; it is recorded in the saved copy.
	MigrationProve MigrationStepName = "Prove"
	// MigrationApplySpec updates the new StatefulSet to the spec asked for: its update strategy back,
	// and the file's template, replicas and other mutable fields (an ordinary rollout).
	MigrationApplySpec MigrationStepName = "ApplySpec"
	// MigrationRemoveCopy deletes the saved copy (UID and resourceVersion preconditions).
	MigrationRemoveCopy MigrationStepName = "RemoveCopy"
)

// MigrationResult is the document `migrate -o json|yaml` prints (kind MigrationResult, added in
// stsdiag v1 with the migrate command; fields are only ever added).
type MigrationResult struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string `json:"namespace"`
	StatefulSet     string `json:"statefulSet"`
	// Result is Migrated, NothingToMigrate, Planned, Refused, NotConfirmed, Incomplete, and for
	// --status InProgress or None.
	Result MigrationOutcome `json:"result"`
	// Message explains the result in one line.
	Message string `json:"message,omitempty"`
	// DryRun is true with --dry-run: the plan, nothing changed.
	DryRun bool `json:"dryRun,omitempty"`
	// Phase is where the migration stood at the end (NotStarted … Done, or Orphaned).
	Phase MigrationPhase `json:"phase"`
	// SavedCopy is the ConfigMap (namespace/name) holding the original StatefulSet while the
	// migration is under way.
	SavedCopy string `json:"savedCopy,omitempty"`
	// Changes are the fields the StatefulSet asked for differs in from the running one.
	Changes []FieldChange `json:"changes"`
	// Refusals say why the plan was refused, one per reason (Result Refused).
	Refusals []MigrationRefusal `json:"refusals,omitempty"`
	// Claims are the existing PersistentVolumeClaims whose storage request grows.
	Claims []ClaimGrowth `json:"claims,omitempty"`
	// Steps are the steps this run took (or, with --dry-run or unconfirmed, would take), in
	// order; a step an earlier run already took is not repeated.
	Steps []MigrationStep `json:"steps"`
	// Proof is what proved the new StatefulSet adopted the pods.
	Proof *MigrationProof `json:"proof,omitempty"`
	// Findings are the StatefulSet's findings when the migration was planned (a rollout stuck
	// or in progress is named, not refused).
	Findings []Finding `json:"findings,omitempty"`
	// Notes are consequences worth knowing (a rollout's history restarting at the update
	// revision, Parallel curing kubernetes#67250, pods keeping their DNS subdomain).
	Notes []string `json:"notes,omitempty"`
}

// FieldChange is one field the StatefulSet asked for differs in.
type FieldChange struct {
	// Field is the field's path, e.g. spec.podManagementPolicy or
	// spec.volumeClaimTemplates[data].spec.resources.requests.storage.
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	// Immutable is true for the fields Kubernetes forbids changing in place (migrated by
	// recreating the object); false for those applied by an ordinary update once the pods are
	// proven adopted (spec.template rolls out as usual).
	Immutable bool `json:"immutable"`
}

// MigrationRefusal is one reason a migration was refused.
type MigrationRefusal struct {
	// Reason: SelectorChanged, ClaimTemplateChanged, ClaimShrink, ClaimNotExpandable,
	// ClaimNotBound, GitOpsManaged, ControlledByOwner, PartitionedRollout, PodTerminating,
	// StatefulSetTerminating, NotObserved, TemplateRewritten, OtherMigration,
	// ChangedSinceSaved, ForeignStatefulSet, NotFound.
	Reason string `json:"reason"`
	// Field, when the reason concerns one.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ClaimGrowth is one existing PersistentVolumeClaim whose storage request grows.
type ClaimGrowth struct {
	Name string `json:"name"`
	// UID is the precondition of the patch.
	UID string `json:"uid,omitempty"`
	// From and To are the storage request before and after.
	From string `json:"from"`
	To   string `json:"to"`
	// Capacity is status.capacity.storage when last read.
	Capacity string `json:"capacity,omitempty"`
	// ResizeStatus is what the volume plugin reported when last read: the claim's conditions
	// (Resizing, FileSystemResizePending, ControllerResizeError, NodeResizeError) and
	// status.allocatedResourceStatuses (ControllerResizeInProgress, NodeResizePending, …); empty
	// when it reported nothing (the resize is the plugin's; migrate does not wait for it).
	ResizeStatus []string `json:"resizeStatus,omitempty"`
	// Result is done, skipped (already at least that size) or failed; empty in a plan.
	Result  ActionResult `json:"result,omitempty"`
	Message string       `json:"message,omitempty"`
}

// MigrationStep is one step of a migration and its result.
type MigrationStep struct {
	Step MigrationStepName `json:"step"`
	// Result is done or failed; empty in a plan.
	Result  ActionResult `json:"result,omitempty"`
	Message string       `json:"message,omitempty"`
}

// MigrationProof is what proved that the new StatefulSet adopted the pods instead of replacing
// them.
type MigrationProof struct {
	// OldUID and NewUID are the StatefulSets' UIDs.
	OldUID string `json:"oldUID"`
	NewUID string `json:"newUID"`
	// CurrentRevision and UpdateRevision are the old StatefulSet's status revisions (from) and
	// the new one's (to).
	CurrentRevision RevisionChange `json:"currentRevision"`
	UpdateRevision  RevisionChange `json:"updateRevision"`
	// Pods are the pods recorded before the delete, as found after the adoption.
	Pods []AdoptedPod `json:"pods"`
	// ClaimsKept is how many of the pods' PersistentVolumeClaims were found with the UIDs
	// recorded before the delete (all of them, or the proof fails).
	ClaimsKept int `json:"claimsKept"`
	// PodsDeleted are the pods migrate saw deleted while it ran, each as "<pod> (<uid>) owned by
	// <owner UID or none>": only the new StatefulSet's own rollout may delete one.
	PodsDeleted []string `json:"podsDeleted,omitempty"`
}

// RevisionChange is a revision name before and after.
type RevisionChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// AdoptedPod is one pod of the proof.
type AdoptedPod struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Revision is its controller-revision-hash label, unchanged.
	Revision string `json:"revision"`
	// Owner is the UID of its controller now (the new StatefulSet's).
	Owner string `json:"owner"`
	// ReplacedBy is set when the pod was replaced by the new StatefulSet's own rollout after
	// its adoption: the new pod's UID.
	ReplacedBy string `json:"replacedBy,omitempty"`
}

// NewMigrationResult returns a MigrationResult for namespace/name.
func NewMigrationResult(namespace, name string) *MigrationResult {
	r := &MigrationResult{Namespace: namespace, StatefulSet: name, Changes: []FieldChange{}, Steps: []MigrationStep{}}
	r.SetGroupVersionKind(GroupVersion.WithKind("MigrationResult"))
	return r
}

// DeepCopyObject lets cli-runtime printers print the result.
func (r *MigrationResult) DeepCopyObject() runtime.Object {
	data, err := json.Marshal(r)
	if err != nil {
		panic(err) // every field marshals
	}
	c := &MigrationResult{}
	if err := json.Unmarshal(data, c); err != nil {
		panic(err)
	}
	return c
}

// The ConfigMap in which `stsdiag migrate` keeps the original StatefulSet while it migrates it
// (in the StatefulSet's namespace, owned by nothing), and the annotation it puts on the
// StatefulSet it creates until the pods are proven adopted.
const (
	// MigrationLabel is on the ConfigMap; its value is the StatefulSet's name.
	MigrationLabel = "stsdiag.io/migration"
	// MigratedFromAnnotation is on the new StatefulSet until the migration ends: the UID of the
	// StatefulSet it replaces.
	MigratedFromAnnotation = "stsdiag.io/migrated-from"
)

// SavedCopyName is the name of the ConfigMap that holds the StatefulSet named statefulSet while
// it is migrated (a StatefulSet's name is a DNS label: the result is a valid ConfigMap name).
func SavedCopyName(statefulSet string) string { return "stsdiag-migrate-" + statefulSet }
