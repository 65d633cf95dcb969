package v1

import "maps"

// FindingDetails are the extra facts of a finding, for people and scripts. Each code writes
// only some of them; the field comments say which. Fields are declared in the byte order of
// their JSON keys, so a document prints its details sorted by key, as a map would. A pointer
// field is printed whenever its code sets it, even when the value is zero or empty.
type FindingDetails struct {
	// Admission is the API server's own answer to the image the finding predicts admission
	// writes, with --confirm-with-admission (UnresolvedImageReference, ImageStreamTagNotFound,
	// ImageResolutionSkipped of a controller-owned StatefulSet).
	Admission *AdmissionCheck `json:"admission,omitempty"`
	// AdmissionError is the API server's refusal of the object the controller tried to create,
	// as its FailedCreate Event quotes it (PodCreateFailed).
	AdmissionError string `json:"admissionError,omitempty"`
	// ApplyError is the API server's refusal of the StatefulSet's server-side dry-run apply, its
	// first line (ApplyRefused).
	ApplyError string `json:"applyError,omitempty"`
	// BlockedBy is the lower pod whose refusal stops the controller's slow-start batch before it
	// tries this one (PodCreateFailed under Parallel; the refusal's reason and details are that
	// pod's).
	BlockedBy string `json:"blockedBy,omitempty"`
	// Blocks are the other pods a stuck pod keeps from being created, updated or Ready, each as
	// "<pod> (not created|not updated|not ready)" (StaleRevisionStuck, CurrentRevisionFailing,
	// PodUnschedulable, PodStuckTerminating).
	Blocks []string `json:"blocks,omitempty"`
	// Cause is why admission did not rewrite the image: StreamCreatedAfterTemplate,
	// TagCreatedAfterTemplate or Unknown (UnresolvedImageReference).
	Cause string `json:"cause,omitempty"`
	// Causes are the fields the API server names in that refusal, each as "field: message"
	// (ApplyRefused).
	Causes []string `json:"causes,omitempty"`
	// Checks are the PodSecurity checks the pod fails, each with what to set (PodCreateFailed,
	// reason PodSecurity).
	Checks []string `json:"checks,omitempty"`
	// Claim is the Pending PersistentVolumeClaim the pod waits for (VolumeClaimPending).
	Claim string `json:"claim,omitempty"`
	// ClaimEvents are the claim's last Warning events, newest first, as "Reason: message"
	// (VolumeClaimPending).
	ClaimEvents []string `json:"claimEvents,omitempty"`
	// ClusterIP is the governing Service's spec.clusterIP (ServiceMissing, reason NotHeadless).
	ClusterIP *string `json:"clusterIP,omitempty"`
	// CurrentOwnerUID is the UID of the object that now has the name of the terminating
	// StatefulSet's owner (StatefulSetTerminating, reason OwnerRecreated).
	CurrentOwnerUID string `json:"currentOwnerUID,omitempty"`
	// CurrentUID is the UID of today's StatefulSet of the orphan's owner name, when one exists
	// (OrphanedRevision).
	CurrentUID string `json:"currentUID,omitempty"`
	// Events are the pod's last Warning events, newest first, as "Reason: message" with
	// " (xN)" when repeated (findings about one pod of a live StatefulSet).
	Events []string `json:"events,omitempty"`
	// Expected names the change stsdiag expected the controller or the kubelet to make by
	// itself and that did not come by its deadline (StaleRevisionStuck of a crash-looping pod
	// the controller was to replace at its Ready moment: ReplacedWhenReady).
	Expected string `json:"expected,omitempty"`
	// ExpectedBy is that deadline (RFC 3339).
	ExpectedBy string `json:"expectedBy,omitempty"`
	// FailingPods are the pods whose container fails to pull or start the image
	// (UnresolvedImageReference, ImageStreamTagNotFound, ImageTriggerStale).
	FailingPods []string `json:"failingPods,omitempty"`
	// FieldPath is the trigger's fieldPath (ImageTriggerInvalid, ImageTriggerStale).
	FieldPath *string `json:"fieldPath,omitempty"`
	// Finalizers hold the terminating object (PodStuckTerminating, StatefulSetTerminating,
	// PodsWithoutStatefulSet of a StatefulSet being deleted).
	Finalizers []string `json:"finalizers,omitempty"`
	// From is the trigger's from.name, <stream>:<tag> (ImageTriggerInvalid, ImageTriggerStale).
	From *string `json:"from,omitempty"`
	// Holder is the holder identity of kube-controller-manager's leader Lease, "" when released
	// (ControllerManagerNotRunning).
	Holder string `json:"holder,omitempty"`
	// ImageStream is the ImageStream the image name refers to (image lookup findings).
	ImageStream string `json:"imageStream,omitempty"`
	// InitContainer is true when the container is an init container.
	InitContainer bool `json:"initContainer,omitempty"`
	// Kind is the kind of the orphaned objects: Pod or ControllerRevision (OrphanedRevision).
	Kind string `json:"kind,omitempty"`
	// LastExitCode is the exit code of the container's last termination, when it has one
	// (findings of a pod stuck at startup).
	LastExitCode *int32 `json:"lastExitCode,omitempty"`
	// LastExitMessage is the message of the container's last termination, when it has one
	// (findings about a container stuck at startup).
	LastExitMessage string `json:"lastExitMessage,omitempty"`
	// LastExitReason is the reason of the container's last termination, e.g. Error or
	// OOMKilled (findings about a container stuck at startup).
	LastExitReason string `json:"lastExitReason,omitempty"`
	// Lease is the leader Lease read, namespace/name (ControllerManagerNotRunning).
	Lease string `json:"lease,omitempty"`
	// Logs are the last lines of the previous run of the failing container, with check
	// --logs N (findings about a container stuck at startup).
	Logs []string `json:"logs,omitempty"`
	// MaxUnavailable is the rolling update's budget, scaled (StaleRevisionStuck of a Parallel
	// rollout that deletes nothing).
	MaxUnavailable *int `json:"maxUnavailable,omitempty"`
	// Missing is the Secret or ConfigMap the kubelet cannot find, as "secret/<name>" or
	// "configmap/<name>" (findings of a pod stuck at startup with reason FailedMount or
	// CreateContainerConfigError, when the kubelet's message names it).
	Missing string `json:"missing,omitempty"`
	// MissingFor is how long the pod the controller must create has been missing, as far as
	// the objects tell (PodCreateFailed).
	MissingFor string `json:"missingFor,omitempty"`
	// MissingKey is the key of that Secret or ConfigMap the kubelet cannot find (reasons
	// FailedMount and CreateContainerConfigError, when the message names a key).
	MissingKey string `json:"missingKey,omitempty"`
	// NewOwnerRevisions are the ControllerRevisions the recreated owner created after the
	// deletion began (StatefulSetTerminating, reason OwnerRecreated).
	NewOwnerRevisions []string `json:"newOwnerRevisions,omitempty"`
	// Node is the terminating pod's spec.nodeName, "" when never scheduled (PodStuckTerminating),
	// or the lost node of a pod the controller waits on (RolloutBlocked).
	Node *string `json:"node,omitempty"`
	// NodeCondition says the node's state in words, e.g. "has been Ready=False for 10m0s"
	// (PodStuckTerminating, when nodes could be listed; RolloutBlocked on a lost node).
	NodeCondition string `json:"nodeCondition,omitempty"`
	// NodeReady is the node's Ready condition status, Unknown when it has none, or NodeGone
	// (PodStuckTerminating, when nodes could be listed; RolloutBlocked on a lost node).
	NodeReady string `json:"nodeReady,omitempty"`
	// NodeReadySince is how long the node's Ready condition has had its status
	// (PodStuckTerminating; RolloutBlocked on a lost node).
	NodeReadySince string `json:"nodeReadySince,omitempty"`
	// NodeReason is the reason of the node's Ready condition (PodStuckTerminating;
	// RolloutBlocked on a lost node).
	NodeReason string `json:"nodeReason,omitempty"`
	// NodeReasons say why no node takes the pod, as the scheduler counts them: "N <reason>",
	// sorted (PodUnschedulable of preflight).
	NodeReasons []string `json:"nodeReasons,omitempty"`
	// NotRenewedFor is how long the leader Lease has not been renewed
	// (ControllerManagerNotRunning).
	NotRenewedFor string `json:"notRenewedFor,omitempty"`
	// Object is what the controller could not create: pod, or claim for the pod's
	// PersistentVolumeClaim (PodCreateFailed).
	Object string `json:"object,omitempty"`
	// Ordinal is the stuck pod's ordinal (findings about one pod of a live StatefulSet).
	Ordinal *int `json:"ordinal,omitempty"`
	// Overdue is how long the pod has been terminating past its grace period
	// (PodStuckTerminating).
	Overdue string `json:"overdue,omitempty"`
	// OwnerKind is the kind of the terminating StatefulSet's controller owner, gone or recreated
	// (StatefulSetTerminating, reasons OwnerRecreated and OwnerGone).
	OwnerKind string `json:"ownerKind,omitempty"`
	// OwnerName is that owner's name (StatefulSetTerminating).
	OwnerName string `json:"ownerName,omitempty"`
	// OwnerUID is the UID in the owner reference: of the terminating StatefulSet's owner
	// (StatefulSetTerminating) or of the orphan's StatefulSet (OrphanedRevision).
	OwnerUID string `json:"ownerUID,omitempty"`
	// Partition is the rolling update's partition after the apply (UpdateHeldByPartition).
	Partition *int `json:"partition,omitempty"`
	// Patch is the template image change that repairs the finding (UnresolvedImageReference,
	// ImageTriggerStale).
	Patch *ImagePatchDetails `json:"patch,omitempty"`
	// PodLabels are the template's labels (ServiceMissing, reason SelectorMismatch).
	PodLabels map[string]string `json:"podLabels,omitempty"`
	// PodResourceVersion is the pod's resourceVersion at diagnosis (findings about one pod of a
	// live StatefulSet).
	PodResourceVersion *string `json:"podResourceVersion,omitempty"`
	// PodRevision is the pod's controller-revision-hash label (findings about one pod).
	PodRevision *string `json:"podRevision,omitempty"`
	// PodUID is the pod's UID (findings about one pod).
	PodUID *string `json:"podUID,omitempty"`
	// Pods are the pods concerned: on an older revision (OnDeleteStale), using the image
	// (image lookup findings), or without their StatefulSet (PodsWithoutStatefulSet).
	Pods []string `json:"pods,omitempty"`
	// Policy is the webhook or ValidatingAdmissionPolicy that denied the pod (PodCreateFailed,
	// reason AdmissionDenied).
	Policy string `json:"policy,omitempty"`
	// Quota is the ResourceQuota that refused the object (PodCreateFailed, reason
	// QuotaExceeded).
	Quota string `json:"quota,omitempty"`
	// ReadinessGate is the pod readiness gate (spec.readinessGates conditionType) that keeps the
	// pod not Ready (reason ReadinessGate).
	ReadinessGate string `json:"readinessGate,omitempty"`
	// ReadinessGateStatus is the gate's condition: Missing (nothing ever wrote it) or False.
	ReadinessGateStatus string `json:"readinessGateStatus,omitempty"`
	// Reason repeats the finding's reason (ServiceMissing, ImageResolutionSkipped,
	// ImageTriggerInvalid).
	Reason string `json:"reason,omitempty"`
	// Registry is the registry host asked for the image (CurrentRevisionFailing and
	// ImageUnverified of preflight).
	Registry string `json:"registry,omitempty"`
	// RegistryAnswer is what the registry answered the HEAD of the image's manifest, or why it
	// could not be asked (CurrentRevisionFailing and ImageUnverified of preflight).
	RegistryAnswer string `json:"registryAnswer,omitempty"`
	// RenewTime is the leader Lease's spec.renewTime, RFC 3339 (ControllerManagerNotRunning).
	RenewTime string `json:"renewTime,omitempty"`
	// Replicas is spec.replicas after the apply (UpdateHeldByPartition).
	Replicas *int `json:"replicas,omitempty"`
	// RestartCount is the container's restart count (findings of a pod stuck at startup
	// because a container exits: reason CrashLoopBackOff; RolloutBlocked of a pod whose init
	// container exited non-zero).
	RestartCount *int32 `json:"restartCount,omitempty"`
	// ReusedBy are the objects of the terminating StatefulSet's names that another controller
	// owns, as "pod/<name>" (StatefulSetTerminating).
	ReusedBy []string `json:"reusedBy,omitempty"`
	// Revision is the ControllerRevision that set the unresolved image (UnresolvedImageReference).
	Revision string `json:"revision,omitempty"`
	// Revisions are the orphaned ControllerRevisions (OrphanedRevision, kind ControllerRevision).
	Revisions []string `json:"revisions,omitempty"`
	// Rollback says why fix did not roll the finding back (written by fix and wait --fix).
	Rollback string `json:"rollback,omitempty"`
	// RunningFor is how long the init container the pod waits on has been running
	// (RolloutBlocked of a pod whose init container never completes).
	RunningFor string `json:"runningFor,omitempty"`
	// SavedCopy is the ConfigMap, namespace/name, in which `stsdiag migrate` keeps the original
	// StatefulSet while it migrates one (PodsWithoutStatefulSet): it exists if migrate began the
	// migration.
	SavedCopy string `json:"savedCopy,omitempty"`
	// Selector is the governing Service's selector, null when it has none (ServiceMissing,
	// reason SelectorMismatch).
	Selector *map[string]string `json:"selector,omitempty"`
	// Service is the governing Service's name, spec.serviceName (ServiceMissing).
	Service string `json:"service,omitempty"`
	// ServiceAccount is the ServiceAccount the pod names and that does not exist
	// (PodCreateFailed, reason ServiceAccountMissing).
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// ShortBy is, per resource over the quota, how much is missing, as "pods: 1"
	// (PodCreateFailed, reason QuotaExceeded).
	ShortBy []string `json:"shortBy,omitempty"`
	// Skipped says in words why admission never resolves the name (ImageResolutionSkipped).
	Skipped string `json:"skipped,omitempty"`
	// StorageClass is the claim's StorageClass, "" for none (VolumeClaimPending of preflight).
	StorageClass string `json:"storageClass,omitempty"`
	// Tag is the ImageStream tag the image name refers to (image lookup findings).
	Tag string `json:"tag,omitempty"`
	// TargetRevision is the revision a deleted pod is recreated from, "" when the controller has
	// not created it yet (StaleRevisionStuck).
	TargetRevision *string `json:"targetRevision,omitempty"`
	// TemplateImage says the template no longer uses the image the pods run (image lookup
	// findings about pods only).
	TemplateImage string `json:"templateImage,omitempty"`
	// TerminatingFor is how long the StatefulSet has been terminating (StatefulSetTerminating).
	TerminatingFor string `json:"terminatingFor,omitempty"`
	// Trigger is the index of the trigger in the annotation (ImageTriggerInvalid of one trigger,
	// ImageTriggerStale).
	Trigger *int `json:"trigger,omitempty"`
	// UID is the terminating StatefulSet's UID (StatefulSetTerminating).
	UID string `json:"uid,omitempty"`
	// UnavailablePods are the replicas counted against maxUnavailable (StaleRevisionStuck of a
	// Parallel rollout that deletes nothing).
	UnavailablePods *int `json:"unavailablePods,omitempty"`
	// UpdateRevision is the revision new pods get, when known (findings of a live StatefulSet's
	// pods).
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Volume is the pod volume the kubelet cannot set up (reason FailedMount).
	Volume string `json:"volume,omitempty"`
	// WaitedFor is how long the controller has waited on the pod (RolloutBlocked).
	WaitedFor string `json:"waitedFor,omitempty"`
	// WaitingFor is what the controller waits for the pod to be: Running, Ready or gone
	// (RolloutBlocked).
	WaitingFor string `json:"waitingFor,omitempty"`
}

// ImagePatchDetails is a JSON-patch replace of one image field of a StatefulSet's template.
type ImagePatchDetails struct {
	// From is the image as diagnosed (the patch tests it first).
	From string `json:"from"`
	// Path is the JSON pointer of the image field.
	Path string `json:"path"`
	// To is the image written.
	To string `json:"to"`
}

// AdmissionResult says how the API server's admission answered an image prediction.
type AdmissionResult string

// Results of an admission check.
const (
	// AdmissionConfirmed: admission wrote exactly the image predicted.
	AdmissionConfirmed AdmissionResult = "Confirmed"
	// AdmissionDiffers: admission wrote another image (or left the image as it is); the finding's
	// resolvedImage and patch are what admission wrote, not the prediction.
	AdmissionDiffers AdmissionResult = "Differs"
	// AdmissionUnconfirmed: admission could not be asked (no permission to create pods, or the
	// probe was refused, e.g. by a quota or a policy); the finding keeps the prediction.
	AdmissionUnconfirmed AdmissionResult = "Unconfirmed"
)

// AdmissionCheck is what the API server's admission (OpenShift's ImagePolicy plugin, and any
// other admission that mutates pods) wrote for an image in a server-side dry-run create
// (dryRun=All: nothing is persisted) of a probe pod in the StatefulSet's namespace, with
// --confirm-with-admission.
type AdmissionCheck struct {
	// Error is why admission could not be asked, as the API server said it (Unconfirmed).
	Error string `json:"error,omitempty"`
	// Predicted is the image stsdiag predicted admission writes.
	Predicted string `json:"predicted"`
	// Result is Confirmed, Differs or Unconfirmed.
	Result AdmissionResult `json:"result"`
	// Written is the image admission wrote (Confirmed, Differs); the image asked about itself
	// when admission leaves it as it is (then the finding has no resolvedImage and no patch).
	Written string `json:"written,omitempty"`
}

// DeepCopy copies the details.
func (d FindingDetails) DeepCopy() FindingDetails {
	c := d
	for _, s := range []*[]string{&c.Blocks, &c.Causes, &c.Checks, &c.ClaimEvents, &c.Events, &c.FailingPods, &c.Finalizers, &c.Logs,
		&c.NewOwnerRevisions, &c.NodeReasons, &c.Pods, &c.ReusedBy, &c.Revisions, &c.ShortBy} {
		if *s != nil {
			*s = append([]string(nil), (*s)...)
		}
	}
	for _, p := range []**string{&c.ClusterIP, &c.FieldPath, &c.From, &c.Node, &c.PodResourceVersion, &c.PodRevision, &c.PodUID, &c.TargetRevision} {
		*p = clonePtr(*p)
	}
	for _, p := range []**int{&c.MaxUnavailable, &c.Ordinal, &c.Partition, &c.Replicas, &c.Trigger, &c.UnavailablePods} {
		*p = clonePtr(*p)
	}
	c.Admission = clonePtr(d.Admission)
	c.LastExitCode = clonePtr(d.LastExitCode)
	c.RestartCount = clonePtr(d.RestartCount)
	c.Patch = clonePtr(d.Patch)
	c.PodLabels = maps.Clone(d.PodLabels)
	if d.Selector != nil {
		s := maps.Clone(*d.Selector)
		c.Selector = &s
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
