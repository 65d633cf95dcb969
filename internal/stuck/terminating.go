package stuck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// podTerminating reports a pod of a live StatefulSet that should have been gone for longer than
// the terminating threshold. The controller creates no replacement while the pod object exists
// (processReplica: a created pod is never recreated, stateful_set_control.go:429-445@v1.37.2),
// and under OrderedReady it waits on a terminating pod, stopping every later ordinal and the
// update (:467@v1.37.2, :414@v1.25.16), so the rollout waits for it forever. A pod on a lost node
// is the StatefulSet documentation's force-delete case
// (kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod).
//
// The API server sets a pod's deletionTimestamp to the request time plus its grace period: the
// moment the kubelet should have finished. The threshold counts from there.
func (d *diagnosis) podTerminating(r *controllerView, i int, pod *corev1.Pod) {
	overdue := d.ix.now.Sub(pod.DeletionTimestamp.Time)
	if overdue < d.opts.TerminatingAfter {
		d.ix.wake(pod.DeletionTimestamp.Add(d.opts.TerminatingAfter))
		return
	}
	f := d.base(r, apiv1.PodStuckTerminating, apiv1.SeverityError, pod, nil)
	f.Reason = "Terminating"
	f.Details.Ordinal = model.Ptr(r.start + i)
	f.Details.Overdue = overdue.Round(time.Second).String()
	node := pod.Spec.NodeName
	f.Details.Node = model.Ptr(node)
	if len(pod.Finalizers) > 0 {
		f.Details.Finalizers = pod.Finalizers
	}
	nodeState, lost := d.nodeState(node)
	f.Details.NodeReady, f.Details.NodeReadySince, f.Details.NodeReason, f.Details.NodeCondition =
		nodeState["nodeReady"], nodeState["nodeReadySince"], nodeState["nodeReason"], nodeState["nodeCondition"]
	f.Message = fmt.Sprintf("%s was deleted but is still terminating %s after its grace period ended", pod.Name, overdue.Round(time.Second))
	var cause string
	switch {
	case len(pod.Finalizers) > 0:
		cause = "finalizers " + strings.Join(pod.Finalizers, ", ") + " hold it"
	case lost:
		cause = fmt.Sprintf("its node %s %s", node, nodeState["nodeCondition"])
	case node == "":
		cause = "it was never scheduled; the API server should have removed it at once"
	case d.ix.nodes == nil:
		cause = fmt.Sprintf("the kubelet on node %s has not confirmed the containers stopped (the node's state is unknown: nodes cannot be listed)", node)
	default:
		cause = fmt.Sprintf("the kubelet on node %s has not confirmed the containers stopped", node)
	}
	f.Message += ": " + cause
	f.Message += fmt.Sprintf("; the controller never creates a second %s while it exists", pod.Name)
	if blocked := r.blocked(i); len(blocked) > 0 {
		f.Details.Blocks = blocked
		f.Message += "; it blocks " + strings.Join(blocked, ", ")
	}
	f.Short = fmt.Sprintf("terminating for %s: %s", overdue.Round(time.Second), cause)
	cli := d.opts.CLI
	switch {
	case len(pod.Finalizers) > 0:
		f.Remedy = fmt.Sprintf("find the controller that owns finalizers %s and why it does not remove them; once it is safe: %s patch pod %s -n %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'",
			strings.Join(pod.Finalizers, ", "), cli, pod.Name, pod.Namespace)
	case lost:
		f.LostNode = node
		f.Remedy = fmt.Sprintf("confirm node %s is really down (powered off, or its kubelet will never come back) — a force delete while the pod still runs lets two pods share one identity — then: %s delete pod %s -n %s --grace-period=0 --force (stsdiag fix --force-lost-node does this with a UID precondition)",
			node, cli, pod.Name, pod.Namespace)
	default:
		f.Remedy = fmt.Sprintf("check the kubelet and container runtime on node %s (%s describe pod %s -n %s); if the node is lost, force-delete the pod as the StatefulSet documentation describes",
			node, cli, pod.Name, pod.Namespace)
	}
	d.add(f)
}

// nodeState describes a pod's node for the details, and whether it counts as lost: gone, or not
// Ready (False or Unknown) for longer than the terminating threshold. With nodes unreadable it
// knows nothing.
func (d *diagnosis) nodeState(name string) (map[string]string, bool) {
	if d.ix.nodes == nil || name == "" {
		return map[string]string{}, false
	}
	node, ok := d.ix.nodes[name]
	if !ok {
		return map[string]string{"nodeReady": "NodeGone", "nodeCondition": "no longer exists"}, true
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		since := d.ix.now.Sub(c.LastTransitionTime.Time).Round(time.Second)
		state := map[string]string{"nodeReady": string(c.Status), "nodeReadySince": since.String(),
			"nodeCondition": fmt.Sprintf("has been Ready=%s for %s", c.Status, since)}
		if c.Reason != "" {
			state["nodeReason"] = c.Reason
		}
		if c.Status != corev1.ConditionTrue && since < d.opts.TerminatingAfter {
			d.ix.wake(c.LastTransitionTime.Add(d.opts.TerminatingAfter))
		}
		return state, c.Status != corev1.ConditionTrue && since >= d.opts.TerminatingAfter
	}
	return map[string]string{"nodeReady": "Unknown", "nodeCondition": "has no Ready condition"}, false
}

// replacedOwner reports whether a terminating StatefulSet's controller owner is gone or was
// deleted and recreated (an object of its kind and name now has another UID), as when a
// LeaderWorkerSet is recreated while its StatefulSet still terminates. Then the deletion is not
// "in progress" but in the way of the new owner, whatever its age.
func (d *diagnosis) replacedOwner(set *appsv1.StatefulSet) (*metav1.OwnerReference, snapshot.Owner, bool) {
	ref := metav1.GetControllerOfNoCopy(set)
	if ref == nil {
		return nil, snapshot.Owner{}, false
	}
	now, ok := d.snap.Owner(set.Namespace, ref)
	if !ok || (now.Exists && now.UID == ref.UID) {
		return nil, snapshot.Owner{}, false
	}
	return ref, now, true
}

// newOwnerRevisions lists the ControllerRevisions the new owner created after the StatefulSet's
// deletion began (the LeaderWorkerSet bug: the LWS controller creates a revision during it).
func (d *diagnosis) newOwnerRevisions(set *appsv1.StatefulSet, owner snapshot.Owner) []string {
	var out []string
	for _, rev := range d.ix.owned.Revisions[owner.UID] {
		// Timestamps have one-second resolution: the same second counts as after.
		if rev.Namespace == set.Namespace && !rev.CreationTimestamp.Before(set.DeletionTimestamp) {
			out = append(out, rev.Name)
		}
	}
	sort.Strings(out)
	return out
}
