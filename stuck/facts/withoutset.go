package facts

import (
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// WithoutSet are the facts of PodsWithoutStatefulSet: pods the StatefulSet controller created,
// with no controller any more, whose StatefulSet is gone, being deleted, or has not adopted them.
type WithoutSet struct {
	// State is what became of the StatefulSet of the pods' name: WithoutSetGone, WithoutSetDeleting
	// or WithoutSetNotAdopted.
	State WithoutSetState
	// Pods are the pods without a controller, by name.
	Pods []string
	// SavedCopy is namespace/name of the ConfigMap `stsdiag migrate` keeps the original in.
	SavedCopy string
	// HeldBy are the finalizers of the StatefulSet being deleted; DeletingFor how long it has been.
	HeldBy      []string
	DeletingFor time.Duration
	// Selected: the live StatefulSet's selector matches the pods (WithoutSetNotAdopted); when it
	// does not, the controller never adopts them and cannot create pods of their names.
	Selected bool
	// For is how long the live StatefulSet has existed without adopting them.
	For time.Duration
}

// WithoutSetState is what became of the StatefulSet of pods without a controller.
type WithoutSetState string

// States of PodsWithoutStatefulSet; each is the finding's reason.
const (
	// WithoutSetGone: no StatefulSet of that name exists (deleted with --cascade=orphan).
	WithoutSetGone WithoutSetState = "StatefulSetGone"
	// WithoutSetDeleting: it is being deleted; its finalizers hold it.
	WithoutSetDeleting WithoutSetState = "StatefulSetDeleting"
	// WithoutSetNotAdopted: a live StatefulSet of that name has not adopted them within the
	// settle time (the controller adopts an orphan its selector matches on its next sync).
	WithoutSetNotAdopted WithoutSetState = "NotAdopted"
)

// Code is the finding code the facts explain.
func (WithoutSet) Code() apiv1.Code { return apiv1.PodsWithoutStatefulSet }
