package facts

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// The facts below are what the rules establish about each finding, in types: Finding.Facts
// holds one of them, and stuck.Diagnose words it (message, short, remedy).

// Facts are the typed facts of one finding (a type of the analyzer that found it).
type Facts interface {
	// Code is the finding code the facts explain.
	Code() apiv1.Code
}

// BlockedWhy is why a pod waits on a stuck one.
type BlockedWhy int

// Ways a stuck pod blocks another under OrderedReady.
const (
	NotCreated BlockedWhy = iota + 1
	NotUpdated
	NotReady
)

// Blocked is a pod that a stuck pod keeps from being created, updated or Ready.
type Blocked struct {
	Pod string
	Why BlockedWhy
}

// StartupKind is how a pod is stuck at startup.
type StartupKind int

// Kinds of startup problem.
const (
	// ContainerWaiting: a container waits with a startup reason (ImagePullBackOff, ...).
	ContainerWaiting StartupKind = iota + 1
	// ContainerNotReady: Running, but not Ready for longer than the threshold.
	ContainerNotReady
	// PodExited: the pod Succeeded and this release's controller never recreates it.
	PodExited
	// Unschedulable: the scheduler finds no node.
	Unschedulable
	// ClaimPending: a PersistentVolumeClaim of the pod will not bind by itself.
	ClaimPending
	// ContainerCrashLoop: a container keeps exiting and being restarted, whatever its state's
	// reason string says at the moment (kubelet.go).
	ContainerCrashLoop
	// VolumeMountFailed: the kubelet cannot set up a volume of the pod (a FailedMount Event).
	VolumeMountFailed
	// ReadinessGatePending: every container is Ready, but a readiness gate's condition is
	// missing or not True, longer than the not-ready threshold (reason ReadinessGate).
	ReadinessGatePending
)

// ReadinessGateReason is the reason of a finding about a pod held back by a readiness gate.
const ReadinessGateReason = "ReadinessGate"

// Gate is a pod readiness gate that keeps the pod not Ready: its condition type, and the
// condition's status — "Missing" when nothing ever wrote it.
type Gate struct {
	Condition string
	Status    string
}

// Startup is why a pod is stuck at startup.
type Startup struct {
	Kind StartupKind
	// Reason is the low-level cause, e.g. ImagePullBackOff, NotReady, PodSucceeded, Unschedulable.
	Reason    string
	Container string
	Image     string
	Init      bool
	// Waiting is the kubelet's waiting message (ContainerWaiting) or the scheduler's
	// (Unschedulable).
	Waiting string
	// LastExit is the container's newest termination, if any (ContainerWaiting,
	// ContainerCrashLoop): its current state while terminated, else its last state.
	LastExit *Exit
	// Restarts is the container's restart count (ContainerWaiting, ContainerCrashLoop).
	Restarts int32
	// State is the container's state when it is seen crash looping: StateTerminated,
	// StateRunning or StateWaiting (ContainerCrashLoop, and ContainerWaiting on CrashLoopBackOff).
	State string
	// ReadyInRuns: the pod of a crash-looping app container was Ready while it last ran (no
	// readiness probe holds it back), so the StatefulSet controller sees it Running and Ready
	// for a moment after each restart (reason CrashLoopBackOff).
	ReadyInRuns bool
	// RunStarted and RunEnded bound the container's latest run (a crash loop); RunEnded is zero
	// while it runs. LastRun is how long its latest terminated run lasted (zero: unknown).
	RunStarted, RunEnded time.Time
	LastRun              time.Duration
	// Volume is the pod volume the kubelet cannot set up (VolumeMountFailed).
	Volume string
	// Missing is the Secret or ConfigMap (or key of one) the kubelet's message says is missing
	// (VolumeMountFailed, CreateContainerConfigError); nil when it names none.
	Missing *Missing
	// NotReadyFor is how long the pod has not been Ready, rounded to seconds (ContainerNotReady).
	NotReadyFor time.Duration
	// Gate is the readiness gate that holds the pod not Ready (ReadinessGatePending).
	Gate *Gate
	// Probe is the message of the pod's last Unhealthy event, ReadyMessage its Ready
	// condition's message (ContainerNotReady).
	Probe, ReadyMessage string
	// Release is the Kubernetes release whose controller never recreates the pod (PodExited).
	Release string
	// Claim is the claim that will not bind (ClaimPending).
	Claim *Claim
}

// CrashLoopBackOff is the reason of every crash-loop finding, whatever the container's state
// string says at the moment.
const CrashLoopBackOff = "CrashLoopBackOff"

// Container states a crash-looping container is seen in.
const (
	StateTerminated = "terminated"
	StateRunning    = "running"
	StateWaiting    = "waiting"
)

// Missing is a Secret or ConfigMap, or a key of one, that the kubelet could not find.
type Missing struct {
	// Kind is "secret" or "configmap" (the kubelet's resource names).
	Kind string
	// Name is the object's name, "" when the message names only a key.
	Name string
	// Key is the missing key, "" when the whole object is missing.
	Key string
}

// Exit is a container's last termination.
type Exit struct {
	Code            int32
	Reason, Message string
}

// CreateFailed: a pod (or its claim) the controller must create does not exist, and the
// controller, under OrderedReady, creates nothing after it (processReplica,
// stateful_set_control.go:439-453@v1.37.2).
type CreateFailed struct {
	Pod     string
	Ordinal int
	// Refusal is the API server's refusal as the last FailedCreate Event quotes it; nil when
	// no Event since the pod went missing says why (Events expire).
	Refusal *Refusal
	// MissingFor is how long the pod has been missing, as far as the objects tell.
	MissingFor time.Duration
	// Replaced: the pod was deleted by the update and never came back (the set is one replica
	// short).
	Replaced bool
	Blocked  []Blocked
	Ordered  bool
	// BlockedBy is the lower missing pod whose refusal (Refusal) ends the controller's
	// slow-start batch before it tries this one (Parallel): this pod has no Event of its own.
	BlockedBy string
}

// WaitBlocked: the controller waits on an ordinal for longer than any known cause explains.
type WaitBlocked struct {
	Pod     string
	Ordinal int
	// Step is what the controller waits for (controller.WaitRunning, WaitReady, ...).
	Step controller.Step
	// For is how long it has waited.
	For time.Duration
	// Phase and Waiting are the pod's phase and its first container's waiting reason, if any.
	Phase, Waiting string
	// Condemned: the pod is beyond spec.replicas (a scale down waits on it).
	Condemned bool
	Blocked   []Blocked
	// Init is the init container the Pending pod waits on: one that runs and has not
	// completed, or one that exited non-zero and is restarted; nil when none.
	Init *InitWait
	// Node is the pod's node when it is gone or not Ready (its kubelet stopped reporting), with
	// its state; "" otherwise.
	Node      string
	NodeState NodeState
}

// InitWait is the init container a Pending pod waits on.
type InitWait struct {
	Container, Image string
	// Running: it runs and has not completed; For is how long it has been running, rounded to
	// seconds (0 when unknown).
	Running bool
	For     time.Duration
	// Restarts and LastExit: it exited non-zero (not yet a crash loop) and the kubelet
	// restarts it (not Running).
	Restarts int32
	LastExit *Exit
	// Exited: it is terminated now (its last run is the current container).
	Exited bool
}

// ClaimWhy is why a PersistentVolumeClaim stays Pending.
type ClaimWhy int

// Reasons a claim stays Pending.
const (
	// NoDefaultClass: no storageClassName and no default StorageClass.
	NoDefaultClass ClaimWhy = iota + 1
	// ClassMissing: the StorageClass named does not exist.
	ClassMissing
	// VolumeControllerEvent: the volume controller complained (Event holds what it said).
	VolumeControllerEvent
	// NoMatchingVolume: no class, and no PersistentVolume matches.
	NoMatchingVolume
	// NotProvisioned: the class has provisioned nothing and no PersistentVolume matches.
	NotProvisioned
)

// Claim is a Pending claim and why it does not bind.
type Claim struct {
	Name  string
	Why   ClaimWhy
	Class string
	// Event is the claim's last Warning event as "Reason: message", "" when none.
	Event string
}

// TemplateFix is what to change in a pod template whose pods are stuck at startup.
type TemplateFix int

// Template fixes, from the startup problem.
const (
	FixTemplate      TemplateFix = iota + 1 // nothing more specific is known
	FixPullSecret                           // the registry refuses the credentials
	FixImage                                // the image cannot be pulled
	FixConfig                               // a Secret, ConfigMap or key is missing
	FixReadiness                            // the container never becomes Ready
	FixCrash                                // the container keeps exiting
	FixRuntime                              // the runtime cannot create or start it
	FixScheduling                           // no node can take the pod
	FixReadinessGate                        // nothing sets a readiness gate's condition
)

// NeverReplacedKind is why the controller never replaces a pod on an old revision.
type NeverReplacedKind int

// Reasons a pod on an old revision is never replaced.
const (
	OnDeleteStrategy NeverReplacedKind = iota + 1
	BelowPartition
	// RecreateIgnored: the Recreate strategy without its feature gate.
	RecreateIgnored
	// BudgetSpent: a Parallel rolling update whose unavailable pods use up maxUnavailable
	// (kubernetes#137409).
	BudgetSpent
	// WaitsForReady: OrderedReady waits for the pod to be Running and Ready (kubernetes#67250).
	WaitsForReady
)

// NeverReplaced is why the controller never replaces a pod.
type NeverReplaced struct {
	Kind NeverReplacedKind
	// Partition of the rolling update (BelowPartition).
	Partition int
	// Release of the controller (RecreateIgnored, BudgetSpent).
	Release string
	// Unavailable and MaxUnavailable are the budget (BudgetSpent).
	Unavailable, MaxUnavailable int
	// Policy and Strategy are the pod management policy and the update strategy (WaitsForReady).
	Policy, Strategy string
	// MinReady is spec.minReadySeconds when set, and Run how long the pod's last run lasted when
	// a crash loop's runs are shorter than that: it is Ready for moments, never Available
	// (WaitsForReady).
	MinReady, Run time.Duration
}

// StaleStuck are the facts of StaleRevisionStuck: a pod on an old revision, stuck at startup,
// that the controller never replaces.
type StaleStuck struct {
	Startup Startup
	// Revision is the pod's revision.
	Revision string
	// Target is the revision a recreated pod gets; "" when the controller has not created it.
	Target  string
	Why     NeverReplaced
	Blocked []Blocked
	// Missed is the prediction that failed when the controller was expected to replace the
	// pod by itself (its Ready moment in a crash loop) and has not by the deadline; nil for a
	// pod it never replaces.
	Missed *Prediction
}

// Expectation is a change the kubelet or the controller is expected to make by itself.
type Expectation string

// Expectations with a deadline.
const (
	// ReplacedWhenReady: an OrderedReady rolling update deletes an old-revision pod in a sync
	// that finds it Running and Ready (stateful_set_control.go:476 and :749-759@v1.37.2); a
	// crash-looping pod without a readiness probe is Ready for a moment each run.
	ReplacedWhenReady Expectation = "ReplacedWhenReady"
)

// Prediction is what diagnosis expects to happen by itself, and by when: until Deadline the
// pod is reported as waiting for it (`stsdiag explain` shows it); after, a finding names it as missed.
type Prediction struct {
	Pod      string
	Expected Expectation
	// Chance is the moment the change could have happened (the pod's Ready moment); zero
	// when none has come since the prediction began.
	Chance   time.Time
	Deadline time.Time
}

// Failing are the facts of CurrentRevisionFailing: a pod stuck at startup on the revision the
// controller would recreate it from.
type Failing struct {
	Startup  Startup
	Revision string
	// BelowPartition is the partition when the pod is below it on an older current revision
	// (deleting it recreates the same revision); 0 otherwise.
	BelowPartition int
	Blocked        []Blocked
	Fix            TemplateFix
	// Ordered is true under OrderedReady: the stuck pod must be deleted once the template is fixed.
	Ordered bool
	// UnresolvedTo is the image the container's unresolved ImageStream name resolves to, linked
	// from an UnresolvedImageReference of the same container and image; "" when none.
	UnresolvedTo string
}

// PodUnschedulable are the facts of PodUnschedulable.
type PodUnschedulable struct {
	Startup Startup
	Blocked []Blocked
	Ordered bool
}

// ClaimStuck are the facts of VolumeClaimPending.
type ClaimStuck struct {
	Claim Claim
}

// OnDeleteOld are the facts of OnDeleteStale.
type OnDeleteOld struct {
	// Pods on an older revision, by ordinal.
	Pods           []string
	UpdateRevision string
}

// OwnerChange is what happened to a controller owner: gone, or recreated under its name.
type OwnerChange struct {
	Kind, Name string
	// UID is the owner reference's.
	UID types.UID
	// Exists is true when an object of the kind and name exists now, with CurrentUID.
	Exists     bool
	CurrentUID types.UID
	// NewRevisions are the revisions the recreated owner created after the deletion began.
	NewRevisions []string
}

// SetTerminating are the facts of StatefulSetTerminating.
type SetTerminating struct {
	// Age is how long the StatefulSet has been terminating, rounded to seconds.
	Age time.Duration
	// Owner is its controller owner, when gone or recreated.
	Owner      *OwnerChange
	Finalizers []string
	// OwnedPods counts the pods it still owns.
	OwnedPods int
	// ReusedBy are objects of its names another controller owns ("pod/<name>").
	ReusedBy []string
}

// NodeState is the state of a terminating pod's node.
type NodeState struct {
	// Listed is false when nodes could not be listed: nothing is known.
	Listed bool
	Gone   bool
	// Ready is the Ready condition's status, "" when the node has none.
	Ready corev1.ConditionStatus
	// Since is how long the Ready condition has had its status, rounded to seconds.
	Since  time.Duration
	Reason string
	// Lost: gone, or not Ready for longer than the terminating threshold.
	Lost bool
	// Eviction says whether the node lifecycle controller evicts the pods of this node that is
	// not Ready (set for pods the controller waits on, not for terminating ones).
	Eviction Eviction
}

// Eviction is whether the node lifecycle controller taints a not-Ready node for eviction.
type Eviction int

// Evictions of a not-Ready node's pods.
const (
	// Evicted: the node is tainted and its pods are evicted once their toleration ends.
	Evicted Eviction = iota
	// NoNodeReady: no node is Ready, and the controller evicts nothing anywhere (it removes
	// the taints: "master disruption mode").
	NoNodeReady
	// ZoneDisrupted: most nodes of the node's zone are not Ready (more than 2, at least 55%,
	// at most 50 of them): the controller stops evicting there.
	ZoneDisrupted
)

// PodTerminating are the facts of PodStuckTerminating.
type PodTerminating struct {
	// Overdue is how long past its grace period, rounded to seconds.
	Overdue time.Duration
	// Node is spec.nodeName, "" when never scheduled.
	Node       string
	NodeState  NodeState
	Finalizers []string
	Blocked    []Blocked
}

// OwnerState is what happened to the StatefulSet that controls an orphan.
type OwnerState int

// States of an orphan's StatefulSet.
const (
	OwnerGone OwnerState = iota + 1
	OwnerReplaced
	OwnerTerminating
)

// OwnerFate is what happened to an orphan's StatefulSet, and to the orphan.
type OwnerFate struct {
	State OwnerState
	// CurrentUID is today's StatefulSet of that name (OwnerReplaced).
	CurrentUID types.UID
	// TerminatingFor is how long the StatefulSet has been terminating (OwnerTerminating), and
	// Recreated its owner when that was deleted and recreated.
	TerminatingFor time.Duration
	Recreated      *OwnerChange
	// Deleting is how long the orphan itself has been terminating; nil when not deleted.
	Deleting *time.Duration
}

// OrphanPod are the facts of an OrphanedRevision about a pod.
type OrphanPod struct {
	Fate OwnerFate
	// OwnerUID is the UID in the pod's owner reference.
	OwnerUID types.UID
	// HoldsOrdinal: the pod has an ordinal's name of today's StatefulSet, which can neither
	// adopt it nor create its own.
	HoldsOrdinal bool
	// HeldBy are the finalizers of a pod being deleted.
	HeldBy []string
}

// OrphanRevisions are the facts of an OrphanedRevision about ControllerRevisions.
type OrphanRevisions struct {
	Fate      OwnerFate
	OwnerUID  types.UID
	Revisions []string
}

// Reasons of ServiceMissing (details.reason).
const (
	ServiceNotFound         = "NotFound"
	ServiceNotHeadless      = "NotHeadless"
	ServiceSelectorMismatch = "SelectorMismatch"
)

// ServiceProblem are the facts of ServiceMissing (the finding's reason says which problem).
type ServiceProblem struct {
	// Service is spec.serviceName.
	Service string
	// Wanted is the selector a governing Service needs.
	Wanted map[string]string
	// SelectsApp: `create service` would select exactly the wanted selector (app=<name>).
	SelectsApp bool
	// ClusterIP and ExternalName describe a Service that is not headless.
	ClusterIP    string
	ExternalName bool
	// Selector and PodLabels describe a Service that does not select the pods.
	Selector, PodLabels map[string]string
}

// Code is the finding code the facts explain.
func (StaleStuck) Code() apiv1.Code { return apiv1.StaleRevisionStuck }

// Code is the finding code the facts explain.
func (Failing) Code() apiv1.Code { return apiv1.CurrentRevisionFailing }

// Code is the finding code the facts explain.
func (PodUnschedulable) Code() apiv1.Code { return apiv1.PodUnschedulable }

// Code is the finding code the facts explain.
func (ClaimStuck) Code() apiv1.Code { return apiv1.VolumeClaimPending }

// Code is the finding code the facts explain.
func (OnDeleteOld) Code() apiv1.Code { return apiv1.OnDeleteStale }

// Code is the finding code the facts explain.
func (SetTerminating) Code() apiv1.Code { return apiv1.StatefulSetTerminating }

// Code is the finding code the facts explain.
func (PodTerminating) Code() apiv1.Code { return apiv1.PodStuckTerminating }

// Code is the finding code the facts explain.
func (OrphanPod) Code() apiv1.Code { return apiv1.OrphanedRevision }

// Code is the finding code the facts explain.
func (OrphanRevisions) Code() apiv1.Code { return apiv1.OrphanedRevision }

// Code is the finding code the facts explain.
func (ServiceProblem) Code() apiv1.Code { return apiv1.ServiceMissing }

// Code of the facts.
func (CreateFailed) Code() apiv1.Code { return apiv1.PodCreateFailed }

// Code of the facts.
func (WaitBlocked) Code() apiv1.Code { return apiv1.RolloutBlocked }

// NeverObserved: the StatefulSet controller has never synced the StatefulSet (it writes
// status.observedGeneration on every sync): no controller runs for it.
type NeverObserved struct {
	// For is how long the StatefulSet has existed.
	For time.Duration
}

// Code of the facts.
func (NeverObserved) Code() apiv1.Code { return apiv1.RolloutBlocked }

// CanaryNotStarted: a canary is declared on the StatefulSet, its new revision waits, and the
// partition (at or above spec.replicas) lets no pod move: nobody steps the canary.
type CanaryNotStarted struct {
	// Revision waiting, and the steps the annotation declares.
	Revision, Steps     string
	Partition, Replicas int32
	// For is how long the revision has existed.
	For time.Duration
}

// Code of the facts.
func (CanaryNotStarted) Code() apiv1.Code { return apiv1.RolloutBlocked }

// CanaryPaused: stsdiag watch paused the StatefulSet's canary at a step, its analysis unable to
// tell (apiv1.ReasonCanaryPaused).
type CanaryPaused struct {
	// Revision the canary rolls out, held at Partition of Replicas, and the steps the
	// annotation declares.
	Revision, Steps     string
	Partition, Replicas int32
	// Message is watch's condition message (the analysis's last words).
	Message string
	// For is how long it has been paused (zero: unknown).
	For time.Duration
}

// Code of the facts.
func (CanaryPaused) Code() apiv1.Code { return apiv1.RolloutBlocked }
