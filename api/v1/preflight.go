package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Finding codes only `preflight` reports (added with it). Where a cause is one `check` reports
// after the apply, preflight reports it with check's code: PodCreateFailed (a refusal of the pod
// or its claim, the ResourceQuota counted for every pod), PodUnschedulable, VolumeClaimPending,
// CurrentRevisionFailing (an image the registry does not have), StaleRevisionStuck (the pods
// kubernetes#67250 leaves behind), OnDeleteStale, the OpenShift image codes.
const (
	// ApplyRefused: the API server refuses the apply itself (a server-side dry-run apply):
	// an immutable field, validation, an admission webhook or policy on StatefulSets.
	ApplyRefused Code = "ApplyRefused"
	// ImageUnverified: the registry of an image could not be asked whether it holds it
	// (unreachable, or it refused the credentials the node may not need), a warning: the
	// kubelet may still pull it.
	ImageUnverified Code = "ImageUnverified"
	// UpdateHeldByPartition: the apply makes a new revision that the rolling update's partition
	// (at or above spec.replicas) keeps from every pod, a warning.
	UpdateHeldByPartition Code = "UpdateHeldByPartition"
)

// PreflightVerdict is preflight's answer for the whole input.
type PreflightVerdict string

// Verdicts of preflight.
const (
	// PreflightClear: every rollout the apply starts would finish by itself.
	PreflightClear PreflightVerdict = "Clear"
	// PreflightWouldNotFinish: a finding says a rollout would not finish by itself — an error
	// (the apply refused included), an ImageStream tag not imported yet (ImageStreamTagNotFound),
	// OnDelete pods left on an older revision (OnDeleteStale): what wait would wait on forever.
	PreflightWouldNotFinish PreflightVerdict = "WouldNotFinish"
)

// PreflightChange is what the apply does to one StatefulSet.
type PreflightChange string

// Changes an apply makes.
const (
	// ChangeCreate: the StatefulSet does not exist yet.
	ChangeCreate PreflightChange = "Create"
	// ChangeRollout: the template changes: a new update revision, a rollout.
	ChangeRollout PreflightChange = "Rollout"
	// ChangeNoRollout: the template is the update revision's already (replicas or other fields
	// may change; missing pods are still created).
	ChangeNoRollout PreflightChange = "NoRollout"
	// ChangeRefused: the API server refuses the apply (finding ApplyRefused).
	ChangeRefused PreflightChange = "Refused"
)

// PodAction is what the controller would do to create one pod.
type PodAction string

// Pod actions, in the order the controller takes them.
const (
	// PodCreate: the pod does not exist; the controller creates it (and its claims).
	PodCreate PodAction = "Create"
	// PodReplace: the pod runs another revision; the rolling update deletes it and creates it
	// again from the update revision (its claims kept).
	PodReplace PodAction = "Replace"
)

// ImageCheck is what preflight learned of one image.
type ImageCheck string

// Image checks.
const (
	// ImageFound: the registry answered the HEAD of the image's manifest.
	ImageFound ImageCheck = "Found"
	// ImageNotFound: the registry says it does not hold the image (404).
	ImageNotFound ImageCheck = "NotFound"
	// ImageUnauthorized: the registry refused the credentials tried (401, 403).
	ImageUnauthorized ImageCheck = "Unauthorized"
	// ImageUnreachable: the registry could not be asked (DNS, connection, TLS, timeout, 5xx).
	ImageUnreachable ImageCheck = "Unreachable"
	// ImageFromStream: an OpenShift ImageStream holds the image (the name admission writes is
	// the stream's): no registry is asked.
	ImageFromStream ImageCheck = "ImageStream"
	// ImageSkipped: --skip-images, or an image an ImageStream finding already explains.
	ImageSkipped ImageCheck = "Skipped"
)

// Preflight is the document `preflight -o json|yaml` prints (kind Preflight, added with the
// preflight command; fields are only ever added): for every StatefulSet of the manifests,
// whether the rollout their apply starts would finish by itself, judged before the apply
// against the cluster it is about to meet.
type Preflight struct {
	metav1.TypeMeta `json:",inline"`
	// Result is Clear or WouldNotFinish (exit 1).
	Result PreflightVerdict `json:"result"`
	// OpenShift is true when OpenShift's image lookup was modelled (the image API is served).
	OpenShift bool `json:"openshift"`
	// StatefulSets are the StatefulSets of the input, in the input's order.
	StatefulSets []PreflightStatefulSet `json:"statefulSets"`
	// Findings, most severe first: what would keep a rollout from finishing, or put it at risk.
	Findings []Finding `json:"findings"`
	// Warnings are what could not be judged (a namespace that does not exist yet, data that
	// could not be read), also printed on stderr. They never change the exit code.
	Warnings []string `json:"warnings,omitempty"`
	// Server is the release whose controller rules the verdicts follow.
	Server *ServerInfo `json:"server,omitempty"`
}

// PreflightStatefulSet is one StatefulSet of the input and what its apply would do.
type PreflightStatefulSet struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Source is the file (or STDIN) the manifest came from.
	Source string `json:"source,omitempty"`
	// Change is Create, Rollout, NoRollout or Refused.
	Change PreflightChange `json:"change"`
	// Replicas is spec.replicas after the apply (1 when unset).
	Replicas int32 `json:"replicas"`
	// CurrentRevision is status.currentRevision before the apply ("" for a new StatefulSet).
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the ControllerRevision the controller makes the update revision for the
	// applied template: an existing one when the template is one it recorded before (a revert
	// reuses its revision), else the name the controller will give the new one.
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Pods are the pods the controller would create or replace, in the order it would.
	Pods []PreflightPod `json:"pods"`
	// Images are the images of the applied template, each as written and as pulled.
	Images []PreflightImage `json:"images"`
	// Status is WouldNotFinish when a finding of the StatefulSet says its rollout would not finish
	// by itself, else Clear.
	Status PreflightVerdict `json:"status"`
	// Message says why in one line: the first such finding (code, pod, short message), or what
	// the apply does.
	Message string `json:"message,omitempty"`
}

// PreflightPod is a pod the controller would create, or delete and create again.
type PreflightPod struct {
	Name    string `json:"name"`
	Ordinal int    `json:"ordinal"`
	// Action is Create or Replace.
	Action PodAction `json:"action"`
	// Revision is the revision it would be created from (controller-revision-hash).
	Revision string `json:"revision"`
	// Node is a node it would fit on, "" when none or not judged.
	Node string `json:"node,omitempty"`
}

// PreflightImage is one container image of the applied template.
type PreflightImage struct {
	Container string `json:"container"`
	// InitContainer is true for an init container.
	InitContainer bool `json:"initContainer,omitempty"`
	// Image is the image as the manifest writes it.
	Image string `json:"image"`
	// Pulled is what the kubelet would pull: the image as admission writes it (OpenShift's
	// image lookup may replace a local name by a digest), with the default registry spelled out.
	Pulled string `json:"pulled,omitempty"`
	// Check is Found, NotFound, Unauthorized, Unreachable, ImageStream or Skipped.
	Check ImageCheck `json:"check"`
	// Digest is the manifest digest the registry or the ImageStream gave.
	Digest string `json:"digest,omitempty"`
	// Answer is the registry's answer when it was not Found (status and message, or the error).
	Answer string `json:"answer,omitempty"`
}

// NewPreflight returns an empty Preflight document (lists as [] rather than null).
func NewPreflight() *Preflight {
	p := &Preflight{Result: PreflightClear, StatefulSets: []PreflightStatefulSet{}, Findings: []Finding{}}
	p.SetGroupVersionKind(GroupVersion.WithKind("Preflight"))
	return p
}

// DeepCopyObject lets cli-runtime printers print the document.
func (p *Preflight) DeepCopyObject() runtime.Object {
	c := *p
	c.StatefulSets = make([]PreflightStatefulSet, len(p.StatefulSets))
	for i, s := range p.StatefulSets {
		s.Pods = append([]PreflightPod(nil), s.Pods...)
		s.Images = append([]PreflightImage(nil), s.Images...)
		c.StatefulSets[i] = s
	}
	if p.StatefulSets == nil {
		c.StatefulSets = nil
	}
	c.Findings = copyFindings(p.Findings)
	c.Warnings = append([]string(nil), p.Warnings...)
	c.Server = copyServer(p.Server)
	return &c
}
