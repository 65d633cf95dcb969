package predict

import (
	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// The facts of the findings only preflight establishes; a cause check also reports (a pod the
// API server refuses) is stuck's facts.CreateFailed, worded by stuck.

// ApplyRefusal: the API server refuses the StatefulSet's server-side dry-run apply.
type ApplyRefusal struct {
	// Error is the refusal's first line; Causes its field causes, "field: message".
	Error  string
	Causes []string
	// Reason: Immutable (a field of an existing StatefulSet that cannot change), AdmissionDenied
	// (a webhook or ValidatingAdmissionPolicy), Invalid (validation), NamespaceMissing, or Other.
	Reason string
	// Policy names the webhook or policy that denied it (AdmissionDenied).
	Policy, PolicyKind, Denial string
}

// Reasons of an ApplyRefusal.
const (
	ApplyImmutable        = "Immutable"
	ApplyInvalid          = "Invalid"
	ApplyAdmissionDenied  = string(facts.AdmissionDenied)
	ApplyNamespaceMissing = "NamespaceMissing"
	ApplyOther            = "Other"
)

// Code of the facts.
func (ApplyRefusal) Code() apiv1.Code { return apiv1.ApplyRefused }

// Image is an image of the applied template as the registry (or an ImageStream) answered for it.
type Image struct {
	Container, Image, Pulled, Registry, Answer string
	Init                                       bool
	Check                                      apiv1.ImageCheck
	// SecretsTried: the registry refused the pull secrets the kubelet would use (not only this
	// runner's own credentials).
	SecretsTried bool
	// NoStream names the ImageStream that OpenShift's image lookup found missing for a local
	// name ("" when not OpenShift or not a local name): the name is pulled from docker.io.
	NoStream string
	// Pod is the first pod the controller would create from the revision, Revision that revision.
	Pod      string
	Ordinal  int
	Revision string
	Blocked  []facts.Blocked
	Ordered  bool
}

// ImageMissing: the registry does not hold the image (or refuses the pull secrets): the pods
// of the revision would wait in ErrImagePull and ImagePullBackOff.
type ImageMissing struct{ Image }

// Code of the facts: check reports such pods as CurrentRevisionFailing.
func (ImageMissing) Code() apiv1.Code { return apiv1.CurrentRevisionFailing }

// ImageUnchecked: the registry could not be asked, or refused only this runner's credentials.
type ImageUnchecked struct{ Image }

// Code of the facts.
func (ImageUnchecked) Code() apiv1.Code { return apiv1.ImageUnverified }

// Unschedulable: no node takes the pod.
type Unschedulable struct {
	Pod     string
	Ordinal int
	// Message is the scheduler's sentence, Reasons its counts.
	Message string
	Reasons []string
	Blocked []facts.Blocked
	Ordered bool
	Replace bool
}

// Code of the facts.
func (Unschedulable) Code() apiv1.Code { return apiv1.PodUnschedulable }

// ClaimWouldPend: a claim the controller would create would not bind.
type ClaimWouldPend struct {
	Claim, Pod string
	Ordinal    int
	Why        facts.ClaimWhy
	Class      string
	Blocked    []facts.Blocked
	Ordered    bool
}

// Code of the facts.
func (ClaimWouldPend) Code() apiv1.Code { return apiv1.VolumeClaimPending }

// PartitionHolds: the partition keeps the new revision from every pod.
type PartitionHolds struct {
	Revision            string
	Partition, Replicas int
}

// Code of the facts.
func (PartitionHolds) Code() apiv1.Code { return apiv1.UpdateHeldByPartition }
