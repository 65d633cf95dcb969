package stuck

import (
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// ownerLive is the state of an object whose StatefulSet is live: not an orphan.
const ownerLive facts.OwnerState = 0

func (ix *index) owner(namespace string, ref *metav1.OwnerReference) (facts.OwnerState, *appsv1.StatefulSet) {
	set := ix.sets[key(namespace, ref.Name)]
	switch {
	case set == nil:
		return facts.OwnerGone, nil
	case set.UID != ref.UID:
		return facts.OwnerReplaced, set
	case set.DeletionTimestamp != nil:
		return facts.OwnerTerminating, set
	}
	return ownerLive, set
}

func isStatefulSetRef(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == "StatefulSet" && strings.HasPrefix(ref.APIVersion, "apps/")
}

// orphans reports pods and ControllerRevisions whose controlling StatefulSet is gone or was
// replaced by a new object of the same name. Objects already being deleted get the
// TerminatingAfter grace: the garbage collector removes them in seconds.
func (d *diagnosis) orphans(s *Objects) {
	for i := range s.Pods {
		pod := &s.Pods[i]
		ref, state, set, orphan := d.orphaned(s, pod)
		if !orphan {
			continue
		}
		f := Finding{Finding: apiv1.Finding{Code: apiv1.OrphanedRevision, Severity: apiv1.SeverityWarning, Namespace: pod.Namespace, StatefulSet: ref.Name, Pod: pod.Name,
			Details: apiv1.FindingDetails{Kind: "Pod", OwnerUID: string(ref.UID), PodRevision: ptr.To(controller.PodRevision(pod)), PodUID: ptr.To(string(pod.UID))}}}
		fx := facts.OrphanPod{Fate: d.ownerFate(state, set, pod.DeletionTimestamp), OwnerUID: ref.UID}
		if state == facts.OwnerReplaced {
			f.Details.CurrentUID = string(set.UID)
			_, fx.HoldsOrdinal = controller.ParseOrdinal(set.Name, pod.Name)
		}
		if pod.DeletionTimestamp != nil && len(pod.Finalizers) > 0 {
			fx.HeldBy = pod.Finalizers
		}
		f.Facts = fx
		d.add(f)
	}

	type group struct {
		namespace, name string
		uid             types.UID
		state           facts.OwnerState
		set             *appsv1.StatefulSet
		revisions       []string
	}
	groups := map[string]*group{}
	for i := range s.Revisions {
		rev := &s.Revisions[i]
		ref, state, set, orphan := d.orphaned(s, rev)
		if !orphan {
			continue
		}
		key := rev.Namespace + "/" + string(ref.UID)
		g := groups[key]
		if g == nil {
			g = &group{namespace: rev.Namespace, name: ref.Name, uid: ref.UID, state: state, set: set}
			groups[key] = g
		}
		g.revisions = append(g.revisions, rev.Name)
	}
	for _, g := range groups {
		sort.Strings(g.revisions)
		f := Finding{Finding: apiv1.Finding{Code: apiv1.OrphanedRevision, Severity: apiv1.SeverityWarning, Namespace: g.namespace, StatefulSet: g.name,
			Details: apiv1.FindingDetails{Kind: "ControllerRevision", OwnerUID: string(g.uid), Revisions: g.revisions}}}
		if g.set != nil {
			f.Details.CurrentUID = string(g.set.UID)
		}
		f.Facts = facts.OrphanRevisions{Fate: d.ownerFate(g.state, g.set, nil), OwnerUID: g.uid, Revisions: g.revisions}
		d.add(f)
	}
}

// orphaned reports whether obj's controlling StatefulSet is gone or replaced (and in scope, and
// obj not within its deletion grace).
func (d *diagnosis) orphaned(s *Objects, obj metav1.Object) (*metav1.OwnerReference, facts.OwnerState, *appsv1.StatefulSet, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if !isStatefulSetRef(ref) || !s.InScope(obj.GetNamespace(), ref.Name) {
		return nil, ownerLive, nil, false
	}
	state, set := d.ix.owner(obj.GetNamespace(), ref)
	switch state {
	case facts.OwnerGone:
		// The garbage collector removes it in seconds unless something holds it.
		return ref, state, set, !d.recentlyDeleted(obj.GetDeletionTimestamp())
	case facts.OwnerReplaced:
		// A pod with an ordinal's name keeps the new StatefulSet from creating that pod, even
		// while it terminates.
		if _, isPod := obj.(*corev1.Pod); isPod {
			if _, ok := controller.ParseOrdinal(set.Name, obj.GetName()); ok {
				return ref, state, set, true
			}
		}
		return ref, state, set, !d.recentlyDeleted(obj.GetDeletionTimestamp())
	case facts.OwnerTerminating:
		// Deleting an owner deletes or releases its dependents in seconds; one that still
		// depends on an owner terminating for longer is held by something.
		_, _, recreated := d.replacedOwner(set)
		return ref, state, set, recreated || !d.recentlyDeleted(set.DeletionTimestamp)
	}
	return ref, state, set, false
}

// ownerFate says what happened to an orphan's StatefulSet (set: today's of that name, if any)
// and since when the orphan is being deleted.
func (d *diagnosis) ownerFate(state facts.OwnerState, set *appsv1.StatefulSet, deleting *metav1.Time) facts.OwnerFate {
	fate := facts.OwnerFate{State: state}
	switch state {
	case facts.OwnerReplaced:
		fate.CurrentUID = set.UID
	case facts.OwnerTerminating:
		fate.TerminatingFor = d.ix.now.Sub(set.DeletionTimestamp.Time).Round(time.Second)
		if ref, owner, replaced := d.replacedOwner(set); replaced && owner.Exists {
			fate.Recreated = &facts.OwnerChange{Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Exists: true, CurrentUID: owner.UID}
		}
	}
	if deleting != nil {
		fate.Deleting = ptr.To(d.ix.now.Sub(deleting.Time).Round(time.Second))
	}
	return fate
}

func (d *diagnosis) recentlyDeleted(ts *metav1.Time) bool {
	recent := ts != nil && d.ix.now.Sub(ts.Time) < d.opts.TerminatingAfter
	if recent {
		d.ix.wake(ts.Add(d.opts.TerminatingAfter))
	}
	return recent
}
