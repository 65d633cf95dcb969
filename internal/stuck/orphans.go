package stuck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/statefulset"
)

// ownerState says what happened to the StatefulSet that controls an object.
type ownerState int

const (
	ownerLive ownerState = iota
	ownerGone
	ownerReplaced
	ownerTerminating
)

func (ix *index) owner(namespace string, ref *metav1.OwnerReference) (ownerState, *appsv1.StatefulSet) {
	set := ix.sets[snapshot.Key(namespace, ref.Name)]
	switch {
	case set == nil:
		return ownerGone, nil
	case set.UID != ref.UID:
		return ownerReplaced, set
	case set.DeletionTimestamp != nil:
		return ownerTerminating, set
	}
	return ownerLive, set
}

func isStatefulSetRef(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == "StatefulSet" && strings.HasPrefix(ref.APIVersion, "apps/")
}

// orphans reports pods and ControllerRevisions whose controlling StatefulSet is gone or was
// replaced by a new object of the same name. Objects already being deleted get the
// TerminatingAfter grace: the garbage collector removes them in seconds.
func (d *diagnosis) orphans(s *snapshot.Snapshot) {
	for i := range s.Pods {
		pod := &s.Pods[i]
		ref, state, set, orphan := d.orphaned(s, pod)
		if !orphan {
			continue
		}
		f := model.Finding{Finding: apiv1.Finding{Code: apiv1.OrphanedRevision, Severity: apiv1.SeverityWarning, Namespace: pod.Namespace, StatefulSet: ref.Name, Pod: pod.Name,
			Details: apiv1.FindingDetails{Kind: "Pod", OwnerUID: string(ref.UID), PodRevision: model.Ptr(statefulset.PodRevision(pod)), PodUID: model.Ptr(string(pod.UID))}}}
		f.Message = fmt.Sprintf("pod %s belongs to StatefulSet %s with UID %s, %s", pod.Name, ref.Name, ref.UID, d.ownerFate(state, set, pod.DeletionTimestamp))
		f.Short = "pod of a StatefulSet that " + ownerShort[state]
		if state == ownerReplaced {
			f.Details.CurrentUID = string(set.UID)
			if _, ok := ordinal(set.Name, pod.Name); ok {
				f.Message += fmt.Sprintf("; the new StatefulSet cannot adopt it nor create its own %s while it exists", pod.Name)
			}
		}
		f.Message += "; deleting the pod keeps its PersistentVolumeClaims for the StatefulSet of that name"
		f.Remedy = fmt.Sprintf("%s delete pod %s -n %s", d.opts.CLI, pod.Name, pod.Namespace)
		if pod.DeletionTimestamp != nil && len(pod.Finalizers) > 0 {
			f.Remedy = fmt.Sprintf("the pod is held by finalizers %s: find the controller that owns them", strings.Join(pod.Finalizers, ", "))
		}
		d.add(f)
	}

	type group struct {
		namespace, name string
		uid             types.UID
		state           ownerState
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
		f := model.Finding{Finding: apiv1.Finding{Code: apiv1.OrphanedRevision, Severity: apiv1.SeverityWarning, Namespace: g.namespace, StatefulSet: g.name,
			Details: apiv1.FindingDetails{Kind: "ControllerRevision", OwnerUID: string(g.uid), Revisions: g.revisions}}}
		f.Message = fmt.Sprintf("%d ControllerRevision(s) (%s) belong to StatefulSet %s with UID %s, %s",
			len(g.revisions), strings.Join(g.revisions, ", "), g.name, g.uid, d.ownerFate(g.state, g.set, nil))
		if g.set != nil {
			f.Details.CurrentUID = string(g.set.UID)
		}
		f.Short = fmt.Sprintf("%d revision(s) of a StatefulSet that %s", len(g.revisions), ownerShort[g.state])
		f.Remedy = fmt.Sprintf("%s delete controllerrevision -n %s %s", d.opts.CLI, g.namespace, strings.Join(g.revisions, " "))
		d.add(f)
	}
}

// orphaned reports whether obj's controlling StatefulSet is gone or replaced (and in scope, and
// obj not within its deletion grace).
func (d *diagnosis) orphaned(s *snapshot.Snapshot, obj metav1.Object) (*metav1.OwnerReference, ownerState, *appsv1.StatefulSet, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if !isStatefulSetRef(ref) || !s.InScope(obj.GetNamespace(), ref.Name) {
		return nil, ownerLive, nil, false
	}
	state, set := d.ix.owner(obj.GetNamespace(), ref)
	switch state {
	case ownerGone:
		// The garbage collector removes it in seconds unless something holds it.
		return ref, state, set, !d.recentlyDeleted(obj.GetDeletionTimestamp())
	case ownerReplaced:
		// A pod with an ordinal's name keeps the new StatefulSet from creating that pod, even
		// while it terminates.
		if _, isPod := obj.(*corev1.Pod); isPod {
			if _, ok := ordinal(set.Name, obj.GetName()); ok {
				return ref, state, set, true
			}
		}
		return ref, state, set, !d.recentlyDeleted(obj.GetDeletionTimestamp())
	case ownerTerminating:
		// Deleting an owner deletes or releases its dependents in seconds; one that still
		// depends on an owner terminating for longer is held by something.
		_, _, ownerReplaced := d.replacedOwner(set)
		return ref, state, set, ownerReplaced || !d.recentlyDeleted(set.DeletionTimestamp)
	}
	return ref, state, set, false
}

var ownerShort = map[ownerState]string{ownerGone: "no longer exists", ownerReplaced: "was deleted and recreated", ownerTerminating: "is stuck terminating"}

func (d *diagnosis) ownerFate(state ownerState, set *appsv1.StatefulSet, deleting *metav1.Time) string {
	var s string
	switch state {
	case ownerReplaced:
		s = fmt.Sprintf("but today's StatefulSet %s has UID %s (deleted and recreated)", set.Name, set.UID)
	case ownerTerminating:
		s = fmt.Sprintf("which has been terminating for %s", d.ix.now.Sub(set.DeletionTimestamp.Time).Round(time.Second))
		if ref, owner, replaced := d.replacedOwner(set); replaced && owner.Exists {
			s += fmt.Sprintf(" while its %s %s was recreated (UID %s, was %s)", ref.Kind, ref.Name, owner.UID, ref.UID)
		}
	default:
		s = "which no longer exists"
	}
	if deleting != nil {
		s += fmt.Sprintf("; it has been terminating for %s", d.ix.now.Sub(deleting.Time).Round(1e9))
	} else {
		s += "; the garbage collector has not removed it"
	}
	return s
}

func (d *diagnosis) recentlyDeleted(ts *metav1.Time) bool {
	recent := ts != nil && d.ix.now.Sub(ts.Time) < d.opts.TerminatingAfter
	if recent {
		d.ix.wake(ts.Add(d.opts.TerminatingAfter))
	}
	return recent
}
