package predict

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The scheduler's reasons, each its filter plugin's (pkg/scheduler/framework/plugins@v1.37.2),
// in the order the default profile runs them (apis/config/v1/default_plugins.go:36-53); a node
// reports the first filter it fails (RunFilterPlugins).
const (
	// nodeunschedulable/node_unschedulable.go:52
	reasonUnschedulable = "node(s) were unschedulable"
	// tainttoleration/taint_toleration.go:133
	reasonTaint = "node(s) had untolerated taint(s)"
	// nodeaffinity/node_affinity.go:65
	reasonAffinity = "node(s) didn't match Pod's node affinity/selector"
	// noderesources/fit.go:717
	reasonTooManyPods = "Too many pods"
)

// Placement is where the scheduler could put one pod.
type Placement struct {
	// Fits: a node takes the pod; Node names it when known ("" for a replacement predicted to take
	// its predecessor's room on a node not read).
	Fits bool
	Node string
	// Message is the scheduler's own sentence when no node takes it ("0/3 nodes are available:
	// 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."); Reasons its
	// counts, sorted.
	Message string
	Reasons []string
}

// Scheduler models kube-scheduler's filters over the cluster's nodes: NodeUnschedulable,
// TaintToleration, NodeAffinity (nodeSelector and required node affinity) and NodeResourcesFit
// (pods, cpu, memory, ephemeral storage and extended resources against allocatable minus what
// the node's pods request). Inter-pod affinity, topology spread, ports and volume limits are not
// modelled. It places pods one after another, each taking its room, as the controller creates
// them: a placement is feasibility, not the node the scheduler would score best.
type Scheduler struct {
	Nodes []corev1.Node
	// PodsOn reads the pods bound to a node that are not terminal (the scheduler's cache,
	// scheduler.go:654@v1.37.2); it is called once per node, and only for a node whose static
	// filters a pod passes and whose allocatable could hold it.
	PodsOn func(node string) ([]corev1.Pod, error)

	use map[string]*nodeUse
	// gone are the pods replacements delete (namespace/name): no longer on their nodes.
	gone map[string]bool
	// pending are the requests of pods placed on a node whose pods were not read yet.
	pending map[string][]corev1.ResourceList
}

// nodeUse is what a node's pods request, and how many there are.
type nodeUse struct {
	requested corev1.ResourceList
	pods      int
}

// Place finds a node for pod; old is the pod a replacement deletes first (its room is freed).
// It fails when a node's pods cannot be read: the pod is then not judged.
func (s *Scheduler) Place(pod, old *corev1.Pod) (Placement, error) {
	if pod.Spec.NodeName != "" {
		return Placement{Fits: true, Node: pod.Spec.NodeName}, nil // the scheduler is bypassed
	}
	if s.use == nil {
		s.use, s.gone, s.pending = map[string]*nodeUse{}, map[string]bool{}, map[string][]corev1.ResourceList{}
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	nodes := append([]corev1.Node(nil), s.Nodes...)
	if old != nil && old.Spec.NodeName == "" && sameConstraints(pod, old) &&
		within(requests, resourcehelper.PodRequests(old, resourcehelper.PodResourcesOptions{})) {
		// A pod predicted from its StatefulSet's status (SettledPods), node unknown: its successor,
		// asking no more and placed under the same constraints, takes the room it leaves.
		return Placement{Fits: true}, nil
	}
	if old != nil && old.Spec.NodeName != "" {
		s.gone[old.Namespace+"/"+old.Name] = true
		u, read := s.use[old.Spec.NodeName]
		if read {
			u.remove(old)
		}
		for i := range nodes {
			if nodes[i].Name != old.Spec.NodeName {
				continue
			}
			// A replacement that asks no more than its predecessor fits where it ran, if the node
			// passes its static filters: the room is the old pod's (no read of the node's pods).
			if within(requests, resourcehelper.PodRequests(old, resourcehelper.PodResourcesOptions{})) && len(s.static(pod, &nodes[i])) == 0 {
				if read {
					u.add(requests)
				} else {
					s.pending[old.Spec.NodeName] = append(s.pending[old.Spec.NodeName], requests)
				}
				return Placement{Fits: true, Node: old.Spec.NodeName}, nil
			}
			// Otherwise its node is the first tried.
			nodes[0], nodes[i] = nodes[i], nodes[0]
		}
	}
	counts := map[string]int{}
	for i := range nodes {
		node := &nodes[i]
		reasons, err := s.fit(pod, requests, node)
		if err != nil {
			return Placement{}, err
		}
		if len(reasons) == 0 {
			s.use[node.Name].add(requests)
			return Placement{Fits: true, Node: node.Name}, nil
		}
		for _, r := range reasons {
			counts[r]++
		}
	}
	// FitError.Error (pkg/scheduler/framework/types.go:1470-1512@v1.37.2): each reason with the
	// number of nodes giving it, sorted as strings.
	var reasons []string
	for r, n := range counts {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	msg := fmt.Sprintf("0/%d nodes are available", len(s.Nodes))
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, ", ")
	}
	return Placement{Message: msg + ".", Reasons: reasons}, nil
}

// fit returns the reasons the node does not take the pod, none when it does.
func (s *Scheduler) fit(pod *corev1.Pod, requests corev1.ResourceList, node *corev1.Node) ([]string, error) {
	if reasons := s.static(pod, node); len(reasons) > 0 {
		return reasons, nil
	}
	return s.resourcesFit(requests, node)
}

// static are the filters that read no other pod.
func (s *Scheduler) static(pod *corev1.Pod, node *corev1.Node) []string {
	logger := logr.Discard()
	// NodeUnschedulable: a cordoned node, unless the pod tolerates its taint
	// (node_unschedulable.go:141-160@v1.37.2).
	if node.Spec.Unschedulable && !schedulingcorev1.TolerationsTolerateTaint(logger, pod.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
		return []string{reasonUnschedulable}
	}
	// TaintToleration: NoSchedule and NoExecute taints (taint_toleration.go:118-134,
	// helper/taint.go:23-28).
	if _, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); untolerated {
		return []string{reasonTaint}
	}
	// NodeAffinity: nodeSelector and requiredDuringScheduling terms (node_affinity.go:222-233).
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return []string{reasonAffinity}
	}
	return nil
}

// resourcesFit is NodeResourcesFit's Filter (fitsRequest, noderesources/fit.go:710-790@v1.37.2).
func (s *Scheduler) resourcesFit(requests corev1.ResourceList, node *corev1.Node) ([]string, error) {
	allocatable := node.Status.Allocatable
	// What no node of this size can ever hold needs no read of its pods.
	var reasons []string
	for name, q := range requests {
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		if a, ok := allocatable[name]; !ok || q.Cmp(a) > 0 {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	if len(reasons) > 0 {
		sort.Strings(reasons)
		return reasons, nil
	}
	u, err := s.nodeUse(node.Name)
	if err != nil {
		return nil, err
	}
	if max, ok := allocatable[corev1.ResourcePods]; ok && int64(u.pods+1) > max.Value() {
		reasons = append(reasons, reasonTooManyPods)
	}
	for name, q := range requests {
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		free := allocatable[name].DeepCopy()
		free.Sub(u.requested[name])
		if q.Cmp(free) > 0 {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	sort.Strings(reasons)
	return reasons, nil
}

// nodeUse reads the node's pods once. The pods replacements delete are not counted: each is gone
// before its successor is created.
func (s *Scheduler) nodeUse(node string) (*nodeUse, error) {
	if u, ok := s.use[node]; ok {
		return u, nil
	}
	u := &nodeUse{requested: corev1.ResourceList{}}
	if s.PodsOn != nil {
		pods, err := s.PodsOn(node)
		if err != nil {
			return nil, err
		}
		for i := range pods {
			p := &pods[i]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if s.gone[p.Namespace+"/"+p.Name] {
				continue
			}
			u.add(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		}
	}
	for _, r := range s.pending[node] {
		u.add(r)
	}
	delete(s.pending, node)
	s.use[node] = u
	return u, nil
}

// sameConstraints reports whether two pods meet the same scheduling filters: the fields the
// modelled filters read (nodeSelector, affinity, tolerations), and those of the ones not modelled
// (topology spread, scheduler, runtime class and its overhead).
func sameConstraints(a, b *corev1.Pod) bool {
	x, y := a.Spec, b.Spec
	return apiequality.Semantic.DeepEqual(
		[]any{x.NodeSelector, x.Affinity, x.Tolerations, x.TopologySpreadConstraints, x.SchedulerName, x.RuntimeClassName, x.Overhead},
		[]any{y.NodeSelector, y.Affinity, y.Tolerations, y.TopologySpreadConstraints, y.SchedulerName, y.RuntimeClassName, y.Overhead})
}

// within reports whether every request of a is at most b's.
func within(a, b corev1.ResourceList) bool {
	for name, q := range a {
		if have, ok := b[name]; q.Sign() > 0 && (!ok || q.Cmp(have) > 0) {
			return false
		}
	}
	return true
}

func (u *nodeUse) add(requests corev1.ResourceList) {
	u.pods++
	for name, q := range requests {
		sum := u.requested[name].DeepCopy()
		sum.Add(q)
		u.requested[name] = sum
	}
}

func (u *nodeUse) remove(pod *corev1.Pod) {
	u.pods--
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		left := u.requested[name].DeepCopy()
		left.Sub(q)
		if left.Sign() < 0 {
			left = resource.Quantity{}
		}
		u.requested[name] = left
	}
}
