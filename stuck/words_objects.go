package stuck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stsdiag/stsdiag/stuck/facts"
)

func (w words) setTerminating(s facts.SetTerminating) {
	f := w.f
	f.Message = fmt.Sprintf("StatefulSet %s has been terminating for %s", f.StatefulSet, s.Age)
	if o := s.Owner; o != nil && o.Exists {
		f.Message += fmt.Sprintf("; its owner %s %s (UID %s) was deleted and recreated (UID %s): the new %s cannot create its own StatefulSet %s until this one is gone",
			o.Kind, o.Name, o.UID, o.CurrentUID, o.Kind, f.StatefulSet)
		if len(o.NewRevisions) > 0 {
			f.Message += fmt.Sprintf("; the new owner already created ControllerRevision(s) %s after this deletion began", strings.Join(o.NewRevisions, ", "))
		}
	} else if o != nil {
		f.Message += fmt.Sprintf("; its owner %s %s (UID %s) no longer exists", o.Kind, o.Name, o.UID)
	}
	if len(s.Finalizers) > 0 {
		f.Message += "; finalizers: " + strings.Join(s.Finalizers, ", ")
	}
	if s.OwnedPods > 0 {
		f.Message += fmt.Sprintf("; %d pod(s) still owned by it", s.OwnedPods)
	}
	if len(s.ReusedBy) > 0 {
		f.Message += "; objects of its name are owned by another controller: " + strings.Join(s.ReusedBy, ", ")
	}
	f.Remedy = fmt.Sprintf("find what holds the deletion (%s get statefulset %s -n %s -o jsonpath='{.metadata.finalizers}' and the owners of its pods); a new owner of the same name cannot take over until it is gone",
		w.cli, f.StatefulSet, f.Namespace)
}

func (w words) podTerminating(s facts.PodTerminating) {
	f := w.f
	condition := nodeCondition(s.NodeState)
	if s.NodeState.Listed && s.Node != "" {
		f.Details.NodeCondition = condition
	}
	var cause string
	switch {
	case len(s.Finalizers) > 0:
		cause = "finalizers " + strings.Join(s.Finalizers, ", ") + " hold it"
	case s.NodeState.Lost:
		cause = fmt.Sprintf("its node %s %s", s.Node, condition)
	case s.Node == "":
		cause = "it was never scheduled; the API server should have removed it at once"
	case !s.NodeState.Listed:
		cause = fmt.Sprintf("the kubelet on node %s has not confirmed the containers stopped (the node's state is unknown: nodes cannot be listed)", s.Node)
	default:
		cause = fmt.Sprintf("the kubelet on node %s has not confirmed the containers stopped", s.Node)
	}
	f.Message = fmt.Sprintf("%s was deleted but is still terminating %s after its grace period ended: %s", f.Pod, s.Overdue, cause)
	f.Message += fmt.Sprintf("; the controller never creates a second %s while it exists", f.Pod)
	f.Message += w.blocks(s.Blocked)
	f.Short = fmt.Sprintf("terminating for %s: %s", s.Overdue, cause)
	switch {
	case len(s.Finalizers) > 0:
		f.Remedy = fmt.Sprintf("find the controller that owns finalizers %s and why it does not remove them; once it is safe: %s patch pod %s -n %s --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'",
			strings.Join(s.Finalizers, ", "), w.cli, f.Pod, f.Namespace)
	case s.NodeState.Lost:
		f.Remedy = fmt.Sprintf("confirm node %s is really down (powered off, or its kubelet will never come back) — a force delete while the pod still runs lets two pods share one identity — then: %s delete pod %s -n %s --grace-period=0 --force (stsdiag fix --force-lost-node does this with a UID precondition)",
			s.Node, w.cli, f.Pod, f.Namespace)
	default:
		f.Remedy = fmt.Sprintf("check the kubelet and container runtime on node %s (%s describe pod %s -n %s); if the node is lost, force-delete the pod as the StatefulSet documentation describes",
			s.Node, w.cli, f.Pod, f.Namespace)
	}
}

// nodeCondition says a node's state in words.
func nodeCondition(s facts.NodeState) string {
	switch {
	case s.Gone:
		return "no longer exists"
	case s.Ready == "":
		return "has no Ready condition"
	}
	return fmt.Sprintf("has been Ready=%s for %s", s.Ready, s.Since)
}

func (w words) orphanPod(s facts.OrphanPod) {
	f := w.f
	f.Message = fmt.Sprintf("pod %s belongs to StatefulSet %s with UID %s, %s", f.Pod, f.StatefulSet, s.OwnerUID, w.ownerFate(s.Fate))
	f.Short = "pod of a StatefulSet that " + ownerShort[s.Fate.State]
	if s.HoldsOrdinal {
		f.Message += fmt.Sprintf("; the new StatefulSet cannot adopt it nor create its own %s while it exists", f.Pod)
	}
	f.Message += "; deleting the pod keeps its PersistentVolumeClaims for the StatefulSet of that name"
	f.Remedy = fmt.Sprintf("%s delete pod %s -n %s", w.cli, f.Pod, f.Namespace)
	if len(s.HeldBy) > 0 {
		f.Remedy = fmt.Sprintf("the pod is held by finalizers %s: find the controller that owns them", strings.Join(s.HeldBy, ", "))
	}
}

func (w words) orphanRevisions(s facts.OrphanRevisions) {
	f := w.f
	f.Message = fmt.Sprintf("%d ControllerRevision(s) (%s) belong to StatefulSet %s with UID %s, %s",
		len(s.Revisions), strings.Join(s.Revisions, ", "), f.StatefulSet, s.OwnerUID, w.ownerFate(s.Fate))
	f.Short = fmt.Sprintf("%d revision(s) of a StatefulSet that %s", len(s.Revisions), ownerShort[s.Fate.State])
	f.Remedy = fmt.Sprintf("%s delete controllerrevision -n %s %s", w.cli, f.Namespace, strings.Join(s.Revisions, " "))
}

var ownerShort = map[facts.OwnerState]string{facts.OwnerGone: "no longer exists", facts.OwnerReplaced: "was deleted and recreated", facts.OwnerTerminating: "is stuck terminating"}

func (w words) ownerFate(fate facts.OwnerFate) string {
	var s string
	switch fate.State {
	case facts.OwnerReplaced:
		s = fmt.Sprintf("but today's StatefulSet %s has UID %s (deleted and recreated)", w.f.StatefulSet, fate.CurrentUID)
	case facts.OwnerTerminating:
		s = fmt.Sprintf("which has been terminating for %s", fate.TerminatingFor)
		if r := fate.Recreated; r != nil {
			s += fmt.Sprintf(" while its %s %s was recreated (UID %s, was %s)", r.Kind, r.Name, r.CurrentUID, r.UID)
		}
	default:
		s = "which no longer exists"
	}
	if fate.Deleting != nil {
		s += fmt.Sprintf("; it has been terminating for %s", *fate.Deleting)
	} else {
		s += "; the garbage collector has not removed it"
	}
	return s
}

func (w words) service(s facts.ServiceProblem) {
	f := w.f
	dns := fmt.Sprintf("%s-0.%s.%s.svc", f.StatefulSet, s.Service, f.Namespace)
	create := fmt.Sprintf("apiVersion: v1, kind: Service, metadata: {name: %s, namespace: %s}, spec: {clusterIP: None, selector: %s}", s.Service, f.Namespace, flowMap(s.Wanted))
	switch f.Reason {
	case facts.ServiceNotFound:
		f.Message = fmt.Sprintf("StatefulSet %s names Service %q (spec.serviceName), which does not exist in namespace %s: its pods get no stable DNS names (%s)",
			f.StatefulSet, s.Service, f.Namespace, dns)
		f.Short = fmt.Sprintf("Service %s does not exist: pods get no DNS names", s.Service)
		f.Remedy = fmt.Sprintf("create the headless Service: %s apply -f - <<< '{%s}' (spec.serviceName cannot be changed)", w.cli, create)
		if s.SelectsApp {
			f.Remedy = fmt.Sprintf("%s create service clusterip %s --clusterip=None -n %s (it selects app=%s)", w.cli, s.Service, f.Namespace, s.Service)
		}
	case facts.ServiceNotHeadless:
		kind := fmt.Sprintf("clusterIP %s", s.ClusterIP)
		if s.ExternalName {
			kind = "type ExternalName"
		}
		f.Message = fmt.Sprintf("Service %s, the governing Service of StatefulSet %s, is not headless (%s): cluster DNS publishes no per-pod names (%s) for it",
			s.Service, f.StatefulSet, kind, dns)
		f.Short = fmt.Sprintf("Service %s is not headless (%s)", s.Service, kind)
		f.Remedy = fmt.Sprintf("the clusterIP of a Service cannot be changed and spec.serviceName is immutable: recreate Service %s with clusterIP: None (%s delete service %s -n %s, then create {%s}); give clients that need a virtual IP a second Service",
			s.Service, w.cli, s.Service, f.Namespace, create)
	default:
		why := fmt.Sprintf("its selector %s does not select the pods (labels %s)", flowMap(s.Selector), flowMap(s.PodLabels))
		if len(s.Selector) == 0 {
			why = "it has no selector, so no endpoints are created for the pods"
		}
		f.Message = fmt.Sprintf("Service %s, the governing Service of StatefulSet %s, does not cover its pods: %s; they get no stable DNS names (%s)",
			s.Service, f.StatefulSet, why, dns)
		f.Short = fmt.Sprintf("Service %s does not select the pods", s.Service)
		selector, _ := json.Marshal(s.Wanted) // a map of strings always marshals
		f.Remedy = fmt.Sprintf(`%s patch service %s -n %s --type=json -p '[{"op":"replace","path":"/spec/selector","value":%s}]'`, w.cli, s.Service, f.Namespace, selector)
	}
}

// flowMap prints labels as a YAML flow map, keys sorted: {app: web}.
func flowMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
