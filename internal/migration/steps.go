package migration

import (
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// Observed is what the next step is decided on, read afresh.
type Observed struct {
	// Set is the StatefulSet of the name, nil when there is none.
	Set *appsv1.StatefulSet
	// Saved is the saved copy, nil when there is none.
	Saved *Saved
	// Pods are the namespace's pods the original's selector matches; Claims the namespace's
	// claims.
	Pods   []corev1.Pod
	Claims []corev1.PersistentVolumeClaim
	// Deleted are the pod deletions seen since this run began.
	Deleted []Deletion
	// CopyRemoved: this run removed the saved copy (the migration's last step).
	CopyRemoved bool
}

// Deletion is a pod seen deleted, with the UID of its controller then ("" for none).
type Deletion struct {
	Pod   string
	UID   types.UID
	Owner types.UID
}

// ActionKind is what to do next.
type ActionKind string

// Next actions.
const (
	// Done: the migration is complete.
	Done ActionKind = "Done"
	// Wait: something else must happen first (the garbage collector, finalizers, the
	// controller); read again.
	Wait ActionKind = "Wait"
	// Fail: the migration cannot go on by itself; Why says why.
	Fail ActionKind = "Fail"
	// The writes, each with its preconditions.
	GrowClaim     ActionKind = "GrowClaim"
	SaveCopy      ActionKind = "SaveCopy"
	RefreshRecord ActionKind = "RefreshRecord"
	DeleteOrphan  ActionKind = "DeleteOrphan"
	Create        ActionKind = "Create"
	MarkProven    ActionKind = "MarkProven"
	ApplySpec     ActionKind = "ApplySpec"
	RemoveCopy    ActionKind = "RemoveCopy"
)

// WhyKind says why a migration waits or failed.
type WhyKind string

// Why a migration waits (W) or fails (F).
const (
	// W: the original is being deleted; finalizers hold it.
	WaitDeleting WhyKind = "Deleting"
	// W: pods or revisions still name the deleted original as their controller.
	WaitOrphaning WhyKind = "Orphaning"
	// W: the controller has not synced the StatefulSet (status.observedGeneration).
	WaitNotSynced WhyKind = "NotSynced"
	// W: a pod has not been adopted yet.
	WaitNotAdopted WhyKind = "NotAdopted"
	// W: a recorded pod is missing (the controller recreates it).
	WaitPodMissing WhyKind = "PodMissing"
	// F: the StatefulSet changed (another UID or generation) since it was planned or saved.
	ChangedSincePlanned WhyKind = "ChangedSincePlanned"
	ChangedSinceSaved   WhyKind = "ChangedSinceSaved"
	// F: the controller computed another revision for the running template.
	RevisionChanged WhyKind = "RevisionChanged"
	// F: a pod's controller is another object, or its revision label changed.
	PodOwnedByOther    WhyKind = "PodOwnedByOther"
	PodRevisionChanged WhyKind = "PodRevisionChanged"
	// F: a recorded claim is gone or was replaced.
	ClaimChanged WhyKind = "ClaimChanged"
	// F: a StatefulSet of the name exists that migrate did not create.
	ForeignStatefulSet WhyKind = "ForeignStatefulSet"
	// F: there is no StatefulSet of the name and no saved copy.
	NotFound WhyKind = "NotFound"
)

// Why is why a migration waits or failed, with its facts.
type Why struct {
	Kind WhyKind
	// Object is the pod or claim concerned.
	Object     string
	Finalizers []string
	From, To   string
}

// Action is the next step.
type Action struct {
	Kind  ActionKind
	Phase apiv1.MigrationPhase
	// Claim is the claim to grow, as read (its UID and resourceVersion are the patch's
	// preconditions), and To its new request.
	Claim *corev1.PersistentVolumeClaim
	To    resource.Quantity
	// Saved is the saved copy to create or update (SaveCopy, RefreshRecord, MarkProven) or
	// delete (RemoveCopy).
	Saved *Saved
	// Object is the StatefulSet to delete (DeleteOrphan: its UID and resourceVersion), create
	// (Create) or update (ApplySpec).
	Object *appsv1.StatefulSet
	Why    Why
	// Proof is the adoption proven (MarkProven) or found so far.
	Proof *apiv1.MigrationProof
}

// Next decides the next step of the migration planned (p; nil when resuming from the saved copy
// alone) on what was read.
func Next(p *Plan, o Observed) Action {
	if o.Saved == nil {
		return beforeSave(p, o)
	}
	s, set := o.Saved, o.Set
	switch {
	case set == nil:
		for i := range o.Pods {
			if ref := metav1.GetControllerOfNoCopy(&o.Pods[i]); ref != nil && ref.UID == s.Record.OldUID {
				return Action{Kind: Wait, Phase: apiv1.PhaseDeleted, Why: Why{Kind: WaitOrphaning, Object: o.Pods[i].Name}}
			}
		}
		return Action{Kind: Create, Phase: apiv1.PhaseDeleted, Object: CreateObject(s.Final, s.Original, s.Record.OldUID)}
	case set.UID == s.Record.OldUID:
		if set.DeletionTimestamp != nil {
			return Action{Kind: Wait, Phase: apiv1.PhaseDeleting, Why: Why{Kind: WaitDeleting, Finalizers: set.Finalizers}}
		}
		if set.Generation != s.Record.OldGeneration {
			return Action{Kind: Fail, Phase: apiv1.PhaseSaved, Why: Why{Kind: ChangedSinceSaved, From: fmt.Sprint(s.Record.OldGeneration), To: fmt.Sprint(set.Generation)}}
		}
		if set.Status.ObservedGeneration < set.Generation {
			return Action{Kind: Wait, Phase: apiv1.PhaseSaved, Why: Why{Kind: WaitNotSynced}}
		}
		if r := RecordOf(set, o.Pods, o.Claims); !sameRecord(r, s.Record) {
			refreshed := *s
			refreshed.Record = r
			return Action{Kind: RefreshRecord, Phase: apiv1.PhaseSaved, Saved: &refreshed}
		}
		return Action{Kind: DeleteOrphan, Phase: apiv1.PhaseSaved, Object: set}
	case set.UID == s.Record.Proven:
		if NeedsApply(set, s.Final) {
			return Action{Kind: ApplySpec, Phase: apiv1.PhaseProven, Object: Applied(set, s.Final)}
		}
		return Action{Kind: RemoveCopy, Phase: apiv1.PhaseProven, Saved: s}
	case set.Annotations[apiv1.MigratedFromAnnotation] == string(s.Record.OldUID):
		proof, why, wait := Prove(s.Record, set, o.Pods, o.Claims, o.Deleted)
		switch {
		case why == nil:
			proven := *s
			proven.Record.Proven = set.UID
			return Action{Kind: MarkProven, Phase: apiv1.PhaseCreated, Saved: &proven, Proof: proof}
		case wait:
			return Action{Kind: Wait, Phase: apiv1.PhaseCreated, Why: *why, Proof: proof}
		}
		return Action{Kind: Fail, Phase: apiv1.PhaseCreated, Why: *why, Proof: proof}
	}
	return Action{Kind: Fail, Phase: apiv1.PhaseCreated, Why: Why{Kind: ForeignStatefulSet, Object: string(set.UID)}}
}

// beforeSave: no saved copy. Before the migration began, grow the claims, then save; once this
// run removed the copy, done.
func beforeSave(p *Plan, o Observed) Action {
	if o.CopyRemoved {
		return Action{Kind: Done, Phase: apiv1.PhaseDone}
	}
	set := o.Set
	if p == nil || set == nil {
		return Action{Kind: Fail, Phase: apiv1.PhaseNotStarted, Why: Why{Kind: NotFound}}
	}
	if set.UID != p.Running.UID || set.Generation != p.Running.Generation {
		return Action{Kind: Fail, Phase: apiv1.PhaseNotStarted, Why: Why{Kind: ChangedSincePlanned, From: fmt.Sprint(p.Running.Generation), To: fmt.Sprint(set.Generation)}}
	}
	for _, g := range p.Growths {
		i := slices.IndexFunc(o.Claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == g.Claim })
		if i < 0 || o.Claims[i].UID != g.UID {
			return Action{Kind: Fail, Phase: apiv1.PhaseNotStarted, Why: Why{Kind: ClaimChanged, Object: g.Claim}}
		}
		claim := &o.Claims[i]
		if request := claim.Spec.Resources.Requests[corev1.ResourceStorage]; request.Cmp(g.To) < 0 {
			return Action{Kind: GrowClaim, Phase: apiv1.PhaseNotStarted, Claim: claim, To: g.To}
		}
	}
	if set.Status.ObservedGeneration < set.Generation {
		return Action{Kind: Wait, Phase: apiv1.PhaseNotStarted, Why: Why{Kind: WaitNotSynced}}
	}
	return Action{Kind: SaveCopy, Phase: apiv1.PhaseNotStarted,
		Saved: &Saved{Original: Clean(set), Final: p.Final, Record: RecordOf(set, o.Pods, o.Claims)}}
}

// Prove checks that the new StatefulSet adopted every recorded pod instead of replacing it: the
// controller synced it and computed the recorded update revision (and, its status naming no
// current revision, started its history there: stateful_set_control.go:326-329@v1.37.2); each
// pod is the recorded one (same UID), controlled by the new StatefulSet, with its revision label
// unchanged — or was replaced by a pod the new StatefulSet controls (its controller recreates a
// Failed pod whatever the strategy; the proof names the replacement and the deletions seen);
// each recorded claim is there
// with its UID. It returns the proof so far, and why it does not hold yet (wait: true, read
// again) or will not (wait: false).
func Prove(r Record, set *appsv1.StatefulSet, pods []corev1.Pod, claims []corev1.PersistentVolumeClaim, deleted []Deletion) (*apiv1.MigrationProof, *Why, bool) {
	proof := &apiv1.MigrationProof{OldUID: string(r.OldUID), NewUID: string(set.UID),
		CurrentRevision: apiv1.RevisionChange{From: r.CurrentRevision, To: set.Status.CurrentRevision},
		UpdateRevision:  apiv1.RevisionChange{From: r.UpdateRevision, To: set.Status.UpdateRevision}, Pods: []apiv1.AdoptedPod{}}
	for _, d := range deleted {
		proof.PodsDeleted = append(proof.PodsDeleted, fmt.Sprintf("%s (%s) owned by %s", d.Pod, d.UID, orNone(string(d.Owner))))
	}
	if set.Status.ObservedGeneration < set.Generation || set.Status.UpdateRevision == "" {
		return proof, &Why{Kind: WaitNotSynced}, true
	}
	if set.Status.UpdateRevision != r.UpdateRevision {
		return proof, &Why{Kind: RevisionChanged, Object: "updateRevision", From: r.UpdateRevision, To: set.Status.UpdateRevision}, false
	}
	if set.Status.CurrentRevision != r.UpdateRevision {
		return proof, &Why{Kind: RevisionChanged, Object: "currentRevision", From: r.UpdateRevision, To: set.Status.CurrentRevision}, false
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	var waiting *Why
	for _, rec := range r.Pods {
		pod := byName[rec.Name]
		adopted := apiv1.AdoptedPod{Name: rec.Name, UID: string(rec.UID), Revision: rec.Revision}
		switch {
		case pod == nil:
			if waiting == nil {
				waiting = &Why{Kind: WaitPodMissing, Object: rec.Name}
			}
			continue
		case pod.UID != rec.UID:
			// Replaced: by the new StatefulSet's controller only once it controlled the pod (a
			// Failed pod is recreated whatever the strategy); the deletions seen say when.
			switch ref := metav1.GetControllerOfNoCopy(pod); {
			case ref == nil:
				if waiting == nil {
					waiting = &Why{Kind: WaitNotAdopted, Object: rec.Name}
				}
				continue
			case ref.UID != set.UID:
				return proof, &Why{Kind: PodOwnedByOther, Object: rec.Name, To: ref.Kind + "/" + ref.Name + " " + string(ref.UID)}, false
			}
			adopted.ReplacedBy, adopted.Owner = string(pod.UID), string(set.UID)
		default:
			ref := metav1.GetControllerOfNoCopy(pod)
			switch {
			case ref == nil:
				if waiting == nil {
					waiting = &Why{Kind: WaitNotAdopted, Object: rec.Name}
				}
				continue
			case ref.UID != set.UID:
				return proof, &Why{Kind: PodOwnedByOther, Object: rec.Name, To: ref.Kind + "/" + ref.Name + " " + string(ref.UID)}, false
			case pod.Labels[appsv1.ControllerRevisionHashLabelKey] != rec.Revision:
				return proof, &Why{Kind: PodRevisionChanged, Object: rec.Name, From: rec.Revision, To: pod.Labels[appsv1.ControllerRevisionHashLabelKey]}, false
			}
			adopted.Owner = string(ref.UID)
		}
		proof.Pods = append(proof.Pods, adopted)
	}
	if waiting != nil {
		return proof, waiting, true
	}
	for _, rec := range r.Claims {
		i := slices.IndexFunc(claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == rec.Name })
		if i < 0 || claims[i].UID != rec.UID {
			return proof, &Why{Kind: ClaimChanged, Object: rec.Name}, false
		}
		proof.ClaimsKept++
	}
	sort.Slice(proof.Pods, func(i, j int) bool { return proof.Pods[i].Name < proof.Pods[j].Name })
	return proof, nil, false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Phase is where a migration stands, as read: for migrate --status.
func Phase(o Observed) apiv1.MigrationPhase {
	s, set := o.Saved, o.Set
	if s == nil {
		if set == nil || set.DeletionTimestamp != nil {
			for i := range o.Pods {
				if metav1.GetControllerOfNoCopy(&o.Pods[i]) == nil && o.Pods[i].DeletionTimestamp == nil {
					return apiv1.PhaseOrphaned
				}
			}
		}
		if set == nil {
			return apiv1.PhaseNotStarted
		}
		return apiv1.PhaseDone
	}
	switch {
	case set == nil:
		return apiv1.PhaseDeleted
	case set.UID == s.Record.OldUID && set.DeletionTimestamp != nil:
		return apiv1.PhaseDeleting
	case set.UID == s.Record.OldUID:
		return apiv1.PhaseSaved
	case set.UID == s.Record.Proven:
		return apiv1.PhaseProven
	}
	return apiv1.PhaseCreated
}
