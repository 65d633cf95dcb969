// Package plan turns a diagnosis into the safe repairs fix, wait --fix, watch --fix and canary's
// rollback make, and proves nothing unsafe can be planned (the invariants in planner.go). It is
// pure: package repair applies a plan, each action proven again on fresh data first.
package plan

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Policy says which repairs beyond the default ones a plan may hold.
type Policy struct {
	// Rollback also plans rollbacks of failing update revisions to an earlier revision whose
	// pods are Ready (--rollback; see planRollbacks).
	Rollback bool
	// ForceLostNode also plans ForceDeletePod for pods stuck terminating on a lost node
	// (fix --force-lost-node).
	ForceLostNode bool
}

// Everything is the policy of fresh re-planning: an action planned under any policy is proven
// again by a fresh plan that may hold it.
var Everything = Policy{Rollback: true, ForceLostNode: true}

// Planner turns a diagnosis into safe actions. fix, wait --fix, watch --fix and the executor's
// fresh proofs all plan with it.
//
// Whatever the findings say, a plan never holds:
//   - an action kind but PatchImage, DeletePod, ForceDeletePod and Rollback (never a
//     PersistentVolumeClaim or StatefulSet delete, never a scale);
//   - an action on a StatefulSet out of the snapshot's scope;
//   - a ForceDeletePod of a pod that is not in the snapshot as diagnosed, or has finalizers;
//   - a DeletePod of a pod whose current template fails (a CurrentRevisionFailing finding on it,
//     or the pod on its StatefulSet's update revision), unless it waits for a template change
//     (AfterPatch) that an earlier PatchImage or Rollback of its StatefulSet makes;
//   - a patch without its tests: a PatchImage tests the StatefulSet's UID and the image as
//     diagnosed, a Rollback its UID, generation and every image.
type Planner struct {
	Policy Policy
}

// Plan is what a planner decided: the actions in the order they are applied (template changes,
// then deletes), and the error findings no action repairs.
type Plan struct {
	Actions    []model.Action
	Unrepaired []stuck.Finding
}

// For lists the actions on one StatefulSet.
func (p Plan) For(namespace, statefulSet string) []model.Action {
	var out []model.Action
	for _, a := range p.Actions {
		if a.Namespace == namespace && a.StatefulSet == statefulSet {
			out = append(out, a)
		}
	}
	return out
}

// Plan plans the safe repairs of a diagnosis of snap.
func (p Planner) Plan(rep *model.Report, snap *stuck.Objects) Plan {
	o := indexSnapshot(rep, snap)
	actions, unrepaired := planImagesAndStale(rep, o)
	var deletes []model.Action
	if p.Policy.Rollback {
		var rollbacks []model.Action
		rollbacks, deletes, unrepaired = planRollbacks(o, actions, unrepaired)
		actions = append(actions, rollbacks...)
	}
	actions = inOrder(actions, deletes)
	if p.Policy.ForceLostNode {
		forced := planForceDeletes(rep, o)
		actions = append(actions, forced...)
		unrepaired = withoutPods(unrepaired, apiv1.PodStuckTerminating, forced)
	}
	return Plan{Actions: actions, Unrepaired: unrepaired}
}

// inOrder puts template changes first (patches, then rollbacks, as planned) and the deletes
// after them, by namespace and pod: a delete that waits for a change always follows it.
func inOrder(actions, moreDeletes []model.Action) []model.Action {
	var head, tail []model.Action
	for _, a := range actions {
		if IsDelete(a.Kind()) {
			tail = append(tail, a)
		} else {
			head = append(head, a)
		}
	}
	tail = append(tail, moreDeletes...)
	sort.SliceStable(tail, func(i, j int) bool {
		if tail[i].Namespace != tail[j].Namespace {
			return tail[i].Namespace < tail[j].Namespace
		}
		return tail[i].Pod < tail[j].Pod
	})
	return append(head, tail...)
}

func IsDelete(kind apiv1.ActionKind) bool {
	return kind == apiv1.DeletePod || kind == apiv1.ForceDeletePod
}

// objects indexes what the planner checks in the snapshot.
type objects struct {
	snap *stuck.Objects
	sets map[string]*appsv1.StatefulSet // namespace/name → in-scope StatefulSet
	pods map[string]*corev1.Pod         // namespace/name → pod
	// failing marks namespace/pod with a CurrentRevisionFailing finding.
	failing map[string]bool
}

func indexSnapshot(rep *model.Report, snap *stuck.Objects) objects {
	o := objects{snap: snap, sets: map[string]*appsv1.StatefulSet{}, pods: map[string]*corev1.Pod{}, failing: map[string]bool{}}
	for _, f := range rep.Findings {
		if f.Code == apiv1.CurrentRevisionFailing && f.Pod != "" {
			o.failing[types.NamespacedName{Namespace: f.Namespace, Name: f.Pod}.String()] = true
		}
	}
	for i := range snap.StatefulSets {
		set := &snap.StatefulSets[i]
		if snap.InScope(set.Namespace, set.Name) {
			o.sets[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String()] = set
		}
	}
	for i := range snap.Pods {
		o.pods[types.NamespacedName{Namespace: snap.Pods[i].Namespace, Name: snap.Pods[i].Name}.String()] = &snap.Pods[i]
	}
	return o
}

// set is the in-scope StatefulSet of a finding or action (nil when out of scope or absent).
func (o objects) set(namespace, name string) *appsv1.StatefulSet {
	return o.sets[types.NamespacedName{Namespace: namespace, Name: name}.String()]
}

// templateFails reports whether deleting the pod would only bring it back from the same
// failing template: a CurrentRevisionFailing finding is on it, or it runs its StatefulSet's
// update revision.
func (o objects) templateFails(namespace, statefulSet, pod string) bool {
	if o.failing[types.NamespacedName{Namespace: namespace, Name: pod}.String()] {
		return true
	}
	p, set := o.pods[types.NamespacedName{Namespace: namespace, Name: pod}.String()], o.set(namespace, statefulSet)
	return p != nil && set != nil && set.Status.UpdateRevision != "" && controller.PodRevision(p) == set.Status.UpdateRevision
}

// forceDeletable reports whether the pod is in the snapshot as diagnosed (same UID) and no
// finalizer holds it: a force delete would skip what a finalizer still has to do.
func (o objects) forceDeletable(namespace string, target *stuck.PodRef) bool {
	p := o.pods[types.NamespacedName{Namespace: namespace, Name: target.Name}.String()]
	return p != nil && p.UID == target.UID && len(p.Finalizers) == 0
}
