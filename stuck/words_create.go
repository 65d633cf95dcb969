package stuck

import (
	"fmt"
	"regexp"
	"strings"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

func (w words) createFailed(s facts.CreateFailed) {
	f := w.f
	object := "pod " + s.Pod
	if r := s.Refusal; r != nil && r.Kind == facts.KindClaim {
		object = fmt.Sprintf("PersistentVolumeClaim %s of pod %s", r.Name, s.Pod)
	}
	next := "the controller retries it"
	if s.Ordered {
		next = "the controller (OrderedReady) retries it and creates or updates no later pod until it exists"
	}
	if s.Replaced {
		next += "; the update deleted it, so the StatefulSet runs one replica short"
	}
	if r := s.Refusal; r != nil && s.BlockedBy != "" {
		f.Message = fmt.Sprintf("the controller has not tried to create pod %s: it creates missing pods in slow-start batches and stops after a batch with a failure, and the API server refuses %s of an earlier batch (%s): %s; %s is created once %s is",
			s.Pod, s.BlockedBy, r.Reason, r.Error, s.Pod, s.BlockedBy)
		f.Short = fmt.Sprintf("not tried: %s is refused first: %s", s.BlockedBy, refusalShort(r))
		f.Remedy = w.refusalRemedy(r)
	} else if r != nil {
		f.Message = fmt.Sprintf("the controller cannot create %s: the API server refuses it (%s): %s; %s", object, r.Reason, r.Error, next)
		f.Short = fmt.Sprintf("cannot create %s: %s", shortObject(s), refusalShort(r))
		f.Remedy = w.refusalRemedy(r)
	} else {
		f.Message = fmt.Sprintf("%s has been missing for up to %s and the controller has not created it; no FailedCreate Event since says why (Events expire after 1h by default; a stale PersistentVolumeClaim or a pod of that name owned by another controller leave none); %s", s.Pod, s.MissingFor, next)
		f.Short = fmt.Sprintf("%s not created for up to %s", s.Pod, s.MissingFor)
		f.Remedy = fmt.Sprintf("find why the controller cannot create it: %s get events -n %s --field-selector involvedObject.name=%s, its claims (%s get pvc -n %s) and that kube-controller-manager runs; it creates the pod by itself once it can",
			w.cli, f.Namespace, f.StatefulSet, w.cli, f.Namespace)
	}
	f.Message += w.blocks(s.Blocked)
}

func shortObject(s facts.CreateFailed) string {
	if r := s.Refusal; r != nil && r.Kind == facts.KindClaim {
		return "claim " + r.Name
	}
	return s.Pod
}

func refusalShort(r *facts.Refusal) string {
	switch r.Reason {
	case facts.QuotaExceeded:
		if r.Quota.Missing != "" {
			return fmt.Sprintf("ResourceQuota %s requires %s", r.Quota.Name, r.Quota.Missing)
		}
		return fmt.Sprintf("ResourceQuota %s exceeded (short by %s)", r.Quota.Name, strings.Join(r.Quota.Short, ", "))
	case facts.PodSecurity:
		return fmt.Sprintf("PodSecurity %s: %d check(s) fail", r.Level, len(r.Checks))
	case facts.ServiceAccountMissing:
		return fmt.Sprintf("ServiceAccount %s does not exist", r.ServiceAccount)
	case facts.AdmissionDenied:
		return fmt.Sprintf("%s %s denies it: %s", r.PolicyKind, r.Policy, r.Denial)
	case facts.LimitRange:
		return "LimitRange: " + r.Denial
	case facts.SecurityContextConstraints:
		return "no SecurityContextConstraints admits it"
	}
	return string(r.Reason)
}

// mustSet finds the settings PodSecurity's checks ask for ("must set X=Y").
var mustSet = regexp.MustCompile(`must set ([^)]+)`)

func (w words) refusalRemedy(r *facts.Refusal) string {
	f := w.f
	set := fmt.Sprintf("statefulset/%s -n %s", f.StatefulSet, f.Namespace)
	after := "; the controller then creates it by itself (nothing to delete)"
	switch r.Reason {
	case facts.QuotaExceeded:
		if r.Quota.Missing != "" {
			return fmt.Sprintf("ResourceQuota %s requires every pod to set %s: set it in the containers' resources of %s%s", r.Quota.Name, r.Quota.Missing, set, after)
		}
		return fmt.Sprintf("ResourceQuota %s is short by %s (used %s of %s): raise it (%s edit resourcequota %s -n %s) or free that much in the namespace%s",
			r.Quota.Name, strings.Join(r.Quota.Short, ", "), r.Quota.Used, r.Quota.Limited, w.cli, r.Quota.Name, f.Namespace, after)
	case facts.PodSecurity:
		var fields []string
		for _, c := range r.Checks {
			for _, m := range mustSet.FindAllStringSubmatch(c, -1) {
				fields = append(fields, m[1])
			}
		}
		change := "set " + strings.Join(fields, "; ")
		if len(fields) < len(r.Checks) {
			// Some checks forbid rather than require (host namespaces, hostPath, privileged).
			change = "change what these checks name: " + strings.Join(r.Checks, "; ")
		}
		return fmt.Sprintf("the namespace enforces PodSecurity %s: in the pod template of %s %s (or, if the workload needs it, lower the namespace's pod-security.kubernetes.io/enforce level)%s",
			r.Level, set, change, after)
	case facts.SecurityContextConstraints:
		return fmt.Sprintf("no SecurityContextConstraints the pod's ServiceAccount may use admits it (%s): fit the pod template's securityContext of %s to restricted-v2 (no fixed runAsUser, fsGroup or privileges), or grant an SCC: oc adm policy add-scc-to-user SCC -z SERVICEACCOUNT -n %s%s",
			r.Denial, set, f.Namespace, after)
	case facts.ServiceAccountMissing:
		return fmt.Sprintf("%s create serviceaccount %s -n %s (or fix spec.template.spec.serviceAccountName of %s)%s", w.cli, r.ServiceAccount, f.Namespace, set, after)
	case facts.LimitRange:
		return fmt.Sprintf("a LimitRange of namespace %s refuses the pod's resources (%s): fit the containers' resources of %s to it (%s describe limitrange -n %s) or change the LimitRange%s",
			f.Namespace, r.Denial, set, w.cli, f.Namespace, after)
	case facts.AdmissionDenied:
		return fmt.Sprintf("%s %s denies the pod (%s): change the pod template of %s to satisfy it, or ask the policy's owner%s", r.PolicyKind, r.Policy, r.Denial, set, after)
	}
	return fmt.Sprintf("fix what the API server says in %s%s", set, after)
}

func (w words) waitBlocked(s facts.WaitBlocked) {
	f := w.f
	state := s.Phase
	if s.Waiting != "" {
		state += ", " + s.Waiting
	}
	scope := "the controller"
	if s.Condemned {
		scope = "the controller's scale down"
	}
	if s.Node != "" {
		condition := nodeCondition(s.NodeState)
		if s.NodeState.Reason != "" {
			condition += " (" + s.NodeState.Reason + ")"
		}
		f.Details.NodeCondition = condition
		f.Message = fmt.Sprintf("%s waits for %s to be %s and has for %s: its node %s %s, so nothing reports the pod's state; %s",
			scope, s.Pod, waitWord[s.Step], s.For, s.Node, condition, evictionWords[s.NodeState.Eviction])
		f.Message += w.blocks(s.Blocked)
		f.Short = fmt.Sprintf("waits %s for %s: node %s %s", s.For, s.Pod, s.Node, condition)
		f.Remedy = fmt.Sprintf("bring node %s back (its kubelet); if it is really down (powered off, or its kubelet will never come back) — a force delete while the pod still runs lets two pods share one identity — then: %s delete pod %s -n %s --grace-period=0 --force",
			s.Node, w.cli, s.Pod, f.Namespace)
		return
	}
	if in := s.Init; in != nil && !in.Running {
		f.Message = fmt.Sprintf("%s waits for %s to be %s and has for %s: its init container %q (image %q) exited with %s and the kubelet restarts it (restarted %d times so far), so no app container starts",
			scope, s.Pod, waitWord[s.Step], s.For, in.Container, in.Image, strings.TrimPrefix(lastExit(in.LastExit), "last "), in.Restarts)
		f.Message += w.blocks(s.Blocked)
		f.Short = fmt.Sprintf("waits %s for %s: init container %q exited %d", s.For, s.Pod, in.Container, in.LastExit.Code)
		f.Remedy = fmt.Sprintf("init container %q fails: read `%s logs %s -n %s -c %s`, then fix it in statefulset/%s; if the pod runs an old revision, deleting it makes the controller recreate it",
			in.Container, w.cli, s.Pod, f.Namespace, in.Container, f.StatefulSet)
		return
	}
	if in := s.Init; in != nil {
		f.Message = fmt.Sprintf("%s waits for %s to be %s and has for %s: its init container %q (image %q) has been running for %s and has not completed, so no app container starts",
			scope, s.Pod, waitWord[s.Step], s.For, in.Container, in.Image, in.For)
		f.Message += w.blocks(s.Blocked)
		f.Short = fmt.Sprintf("waits %s for %s: init container %q running for %s", s.For, s.Pod, in.Container, in.For)
		f.Remedy = fmt.Sprintf("read what init container %q waits for: %s logs %s -n %s -c %s; make what it waits for available, or fix the init container in statefulset/%s; if the pod runs an old revision, deleting it makes the controller recreate it",
			in.Container, w.cli, s.Pod, f.Namespace, in.Container, f.StatefulSet)
		return
	}
	f.Message = fmt.Sprintf("%s waits for %s to be %s and has for %s (it is %s); no rule stsdiag knows explains why, and it will not change by itself",
		scope, s.Pod, waitWord[s.Step], s.For, state)
	f.Message += w.blocks(s.Blocked)
	f.Short = fmt.Sprintf("waits %s for %s to be %s (%s)", s.For, s.Pod, waitWord[s.Step], state)
	f.Remedy = fmt.Sprintf("read why in %s describe pod %s -n %s (its events and conditions), fix the cause in statefulset/%s; if the pod runs an old revision, deleting it makes the controller recreate it",
		w.cli, s.Pod, f.Namespace, f.StatefulSet)
}

var evictionWords = map[facts.Eviction]string{
	facts.Evicted:       "the node lifecycle controller evicts it once its toleration of the node's taint ends (300 s by default), and the pod then stays terminating until the node comes back or it is force-deleted",
	facts.NoNodeReady:   "no node of the cluster is Ready, so the node lifecycle controller evicts nothing (it removes the taints: \"master disruption mode\"), and the pod stays as it is until the node comes back or it is deleted",
	facts.ZoneDisrupted: "most nodes of its zone are not Ready, so the node lifecycle controller stops evicting there (partial zone disruption), and the pod stays as it is until the node comes back or it is deleted",
}

var waitWord = map[controller.Step]string{controller.WaitRunning: "Running", controller.WaitReady: "Ready",
	controller.WaitTerminated: "gone", controller.WaitAvailable: "Available"}

func (w words) neverObserved(s facts.NeverObserved) {
	f := w.f
	f.Message = fmt.Sprintf("StatefulSet %s has existed for %s and the StatefulSet controller has never synced it (status.observedGeneration is 0): no pod is created or updated until kube-controller-manager runs with its statefulset controller", f.StatefulSet, s.For)
	f.Short = fmt.Sprintf("never synced by the StatefulSet controller in %s", s.For)
	f.Remedy = "check that kube-controller-manager runs (its pod, leader election Lease kube-system/kube-controller-manager) and that --controllers includes statefulset; nothing to delete"
}

func (w words) canaryPaused(s facts.CanaryPaused) {
	f := w.f
	since := ""
	if s.For > 0 {
		since = " for " + s.For.String()
	}
	f.Message = fmt.Sprintf("stsdiag watch paused the canary of StatefulSet %s at partition %d of %d replicas%s: the analysis of its step could not tell whether revision %s is healthy, and watch takes no step until the analysis, the template or the partition changes; the controller moves no pod below the partition. Watch says: %s", f.StatefulSet, s.Partition, s.Replicas, since, s.Revision, s.Message)
	f.Short = fmt.Sprintf("canary of revision %s paused at partition %d: analysis inconclusive", s.Revision, s.Partition)
	f.Remedy = fmt.Sprintf("see why the analysis could not tell (is Prometheus reachable? does the query have data?), then fix the analysis (%s, %s) and watch goes on; or step it by hand: %s stsdiag canary %s -n %s --steps %s; or roll back: kubectl rollout undo statefulset/%s -n %s; nothing to delete",
		apiv1.AnnotationCanaryAnalysis, apiv1.AnnotationCanaryAnalysisArgs, w.cli, f.StatefulSet, f.Namespace, s.Steps, f.StatefulSet, f.Namespace)
}

func (w words) canaryNotStarted(s facts.CanaryNotStarted) {
	f := w.f
	f.Message = fmt.Sprintf("StatefulSet %s declares a canary (%s) and its revision %s has waited %s with the partition at %d of %d replicas: no pod moves until stsdiag watch sets the first step, and no watch has", f.StatefulSet, apiv1.AnnotationCanarySteps, s.Revision, s.For, s.Partition, s.Replicas)
	f.Short = fmt.Sprintf("canary of revision %s not started in %s", s.Revision, s.For)
	f.Remedy = fmt.Sprintf("run stsdiag watch with deploy/watch-fix's rights (it steps the canary), or step it by hand: %s stsdiag canary %s -n %s --steps %s; or remove the annotation %s and lower the partition; nothing to delete",
		w.cli, f.StatefulSet, f.Namespace, s.Steps, apiv1.AnnotationCanarySteps)
}
