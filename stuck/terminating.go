package stuck

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
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
	d.podTerminatingAt(r, r.start+i, r.blocked(i), pod)
}

// podTerminatingAt reports a terminating pod of the ordinal, in range or condemned (a scale
// down waits on it the same way, processCondemned :512-518@v1.37.2).
func (d *diagnosis) podTerminatingAt(r *controllerView, ordinal int, blocked []facts.Blocked, pod *corev1.Pod) {
	overdue := d.ix.now.Sub(pod.DeletionTimestamp.Time)
	if overdue < d.opts.TerminatingAfter {
		d.ix.wake(pod.DeletionTimestamp.Add(d.opts.TerminatingAfter))
		return
	}
	f := d.base(r, apiv1.PodStuckTerminating, apiv1.SeverityError, pod, nil)
	node := pod.Spec.NodeName
	fx := facts.PodTerminating{Overdue: overdue.Round(time.Second), Node: node, NodeState: d.nodeState(node), Finalizers: pod.Finalizers, Blocked: blocked}
	f.Reason = "Terminating"
	f.Details.Ordinal = ptr.To(ordinal)
	f.Details.Overdue = fx.Overdue.String()
	f.Details.Node = ptr.To(node)
	if len(pod.Finalizers) > 0 {
		f.Details.Finalizers = pod.Finalizers
	}
	nodeDetails(&f.Details, fx.NodeState, node)
	// Only a pod no finalizer holds may be force-deleted, and only when its node is lost.
	if fx.NodeState.Lost && len(pod.Finalizers) == 0 {
		f.LostNode = node
	}
	f.Facts = fx
	d.add(f)
}

// nodeDetails writes the node's state in the details (not when nodes could not be listed or
// the pod was never scheduled).
func nodeDetails(details *apiv1.FindingDetails, s facts.NodeState, node string) {
	switch {
	case !s.Listed || node == "":
	case s.Gone:
		details.NodeReady = "NodeGone"
	case s.Ready == "":
		details.NodeReady = "Unknown"
	default:
		details.NodeReady, details.NodeReadySince, details.NodeReason = string(s.Ready), s.Since.String(), s.Reason
	}
}

// nodeState is the state of a pod's node, and whether it counts as lost: gone, or not Ready
// (False or Unknown) for longer than the terminating threshold. With nodes unreadable it knows
// nothing.
func (d *diagnosis) nodeState(name string) facts.NodeState {
	if d.ix.nodes == nil {
		return facts.NodeState{}
	}
	if name == "" {
		return facts.NodeState{Listed: true}
	}
	node, ok := d.ix.nodes[name]
	if !ok {
		return facts.NodeState{Listed: true, Gone: true, Lost: true}
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		since := d.ix.now.Sub(c.LastTransitionTime.Time).Round(time.Second)
		if c.Status != corev1.ConditionTrue && since < d.opts.TerminatingAfter {
			d.ix.wake(c.LastTransitionTime.Add(d.opts.TerminatingAfter))
		}
		return facts.NodeState{Listed: true, Ready: c.Status, Since: since, Reason: c.Reason,
			Lost: c.Status != corev1.ConditionTrue && since >= d.opts.TerminatingAfter}
	}
	return facts.NodeState{Listed: true}
}

// replacedOwner reports whether a terminating StatefulSet's controller owner is gone or was
// deleted and recreated (an object of its kind and name now has another UID), as when a
// LeaderWorkerSet is recreated while its StatefulSet still terminates. Then the deletion is not
// "in progress" but in the way of the new owner, whatever its age.
func (d *diagnosis) replacedOwner(set *appsv1.StatefulSet) (*metav1.OwnerReference, Owner, bool) {
	ref := metav1.GetControllerOfNoCopy(set)
	if ref == nil {
		return nil, Owner{}, false
	}
	now, ok := d.snap.Owner(set.Namespace, ref)
	if !ok || (now.Exists && now.UID == ref.UID) {
		return nil, Owner{}, false
	}
	return ref, now, true
}

// newOwnerRevisions lists the ControllerRevisions the new owner created after the StatefulSet's
// deletion began (the LeaderWorkerSet bug: the LWS controller creates a revision during it).
func (d *diagnosis) newOwnerRevisions(set *appsv1.StatefulSet, owner Owner) []string {
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

// eviction says whether the node lifecycle controller evicts the pods of a node that is not
// Ready, following its zone states with the default thresholds (unhealthy-zone-threshold
// 0.55, large-cluster-size-threshold 50): when every zone has no Ready node it removes the
// taints and evicts nothing (handleDisruption, node_lifecycle_controller.go:1088-1106@v1.37.2);
// a zone in partial disruption (more than 2 nodes not Ready, at least 55% of them) with at most
// 50 not Ready stops evicting (ComputeZoneState :1334-1352, ReducedQPSFunc :1269-1274,
// setLimiterInZone :1214-1225); a zone entirely down among healthy zones is evicted at the
// normal rate (enterFullDisruptionFunc = HealthyQPSFunc, :366).
func (d *diagnosis) eviction(name string) facts.Eviction {
	node, ok := d.ix.nodes[name]
	if !ok {
		return facts.Evicted
	}
	type counts struct{ ready, notReady int }
	zones := map[string]*counts{}
	for _, n := range d.ix.nodes {
		k := zoneKey(n)
		if zones[k] == nil {
			zones[k] = &counts{}
		}
		if nodeReady(n) {
			zones[k].ready++
		} else {
			zones[k].notReady++
		}
	}
	anyReady := false
	for _, z := range zones {
		anyReady = anyReady || z.ready > 0
	}
	if !anyReady {
		return facts.NoNodeReady
	}
	z := zones[zoneKey(node)]
	if z.ready > 0 && z.notReady > 2 && float32(z.notReady)/float32(z.ready+z.notReady) >= 0.55 && z.notReady <= 50 {
		return facts.ZoneDisrupted
	}
	return facts.Evicted
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// zoneKey is the node lifecycle controller's zone of a node: region and zone from the
// topology labels, the deprecated failure-domain ones first (GetZoneKey,
// k8s.io/component-helpers node/topology/helpers.go:31-58@v0.37.2, not a dependency here).
func zoneKey(n *corev1.Node) string {
	zone, ok := n.Labels[corev1.LabelFailureDomainBetaZone]
	if !ok {
		zone = n.Labels[corev1.LabelTopologyZone]
	}
	region, ok := n.Labels[corev1.LabelFailureDomainBetaRegion]
	if !ok {
		region = n.Labels[corev1.LabelTopologyRegion]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}
