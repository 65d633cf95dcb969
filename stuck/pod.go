package stuck

import (
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// startupProblem returns why the pod is stuck at startup, or nil if it is not.
func (ix *index) startupProblem(pod *corev1.Pod) *facts.Startup {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	if pod.Spec.NodeName == "" {
		p, settling := ix.pendingClaim(pod)
		if p != nil || settling {
			return p
		}
		for _, c := range pod.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
				continue
			}
			if c.LastTransitionTime.IsZero() || ix.now.Sub(c.LastTransitionTime.Time) >= ix.settle {
				return &facts.Startup{Kind: facts.Unschedulable, Reason: corev1.PodReasonUnschedulable, Waiting: c.Message}
			}
			ix.wake(c.LastTransitionTime.Add(ix.settle))
		}
		return nil
	}
	containers := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		containers[c.Name] = c.Image
	}
	for _, c := range pod.Spec.Containers {
		containers[c.Name] = c.Image
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecars[c.Name] = isSidecar(c)
	}
	check := func(statuses []corev1.ContainerStatus, init bool) *facts.Startup {
		for _, st := range statuses {
			// A sidecar is restarted whatever its exit code, like an app container
			// (computeInitContainerActions, kuberuntime_container.go:1207-1209@v1.37.2).
			runsToCompletion := init && !sidecars[st.Name]
			p := ix.containerProblem(st, runsToCompletion)
			if p == nil {
				continue
			}
			p.Container, p.Image, p.Init = st.Name, containers[st.Name], init
			if p.Image == "" {
				p.Image = st.Image
			}
			if p.Reason == facts.CrashLoopBackOff && !runsToCompletion {
				p.ReadyInRuns = readyDuringLastRun(pod, st)
			}
			return p
		}
		return nil
	}
	if p := check(pod.Status.InitContainerStatuses, true); p != nil {
		return p
	}
	if p := check(pod.Status.ContainerStatuses, false); p != nil {
		return p
	}
	if p, settling := ix.mountFailed(pod); p != nil || settling {
		return p
	}
	return ix.notReady(pod, containers)
}

// notReady returns a NotReady problem for a pod Running but not Ready for longer than the
// threshold (a readiness probe that keeps failing). The StatefulSet controller treats it like any
// pod that is not Running and Ready (isRunningAndReady, stateful_set_utils.go:467@v1.37.2): under
// OrderedReady it waits on it (stateful_set_control.go:476@v1.37.2, :423@v1.25.16).
func (ix *index) notReady(pod *corev1.Pod, images map[string]string) *facts.Startup {
	if ix.notReadyAfter <= 0 || pod.Status.Phase != corev1.PodRunning {
		return nil
	}
	ready := controller.ReadyCondition(pod)
	if ready == nil || ready.Status == corev1.ConditionTrue || ready.LastTransitionTime.IsZero() {
		return nil
	}
	if ix.nodeLost(pod.Spec.NodeName) {
		// Not the pod's readiness: the node lifecycle controller marked it not Ready when its
		// node stopped reporting (MarkPodsNotReady, controller_utils.go:121-156@v1.37.2); the
		// controller's wait says so (nextSteps).
		return nil
	}
	since := ix.now.Sub(ready.LastTransitionTime.Time)
	if since < ix.notReadyAfter {
		ix.wake(ready.LastTransitionTime.Add(ix.notReadyAfter))
		return nil
	}
	p := &facts.Startup{Kind: facts.ContainerNotReady, Reason: "NotReady", NotReadyFor: since.Round(time.Second), ReadyMessage: ready.Message}
	if gate := pendingGate(ready); gate != nil {
		// Every container is Ready: the gate alone holds the pod back, and only the controller
		// that owns the gate writes its condition.
		p.Kind, p.Reason, p.Gate = facts.ReadinessGatePending, facts.ReadinessGateReason, gate
		return p
	}
	for _, st := range pod.Status.ContainerStatuses {
		if !st.Ready {
			p.Container, p.Image = st.Name, images[st.Name]
			if p.Image == "" {
				p.Image = st.Image
			}
			break
		}
	}
	if e := ix.lastEvent("Pod", pod.Namespace, pod.Name, pod.UID, "Unhealthy"); e != nil {
		p.Probe = strings.TrimSpace(e.Message)
	}
	return p
}

// pendingGate returns the first readiness gate that keeps a pod whose containers are all Ready
// from being Ready, nil when none does. The kubelet's Ready condition is ContainersReady and
// every gate's condition True; when only a gate is missing, it says so with reason
// ReadinessGatesNotReady and, per gate, `corresponding condition of pod readiness gate "X" does
// not exist.` or `the status of pod readiness gate "X" is not "True", but S`
// (GeneratePodReadyCondition, pkg/kubelet/status/generate.go:127-167@v1.37.2). The condition
// is read, not spec.readinessGates: pods are read slimmed of their spec (snapshot.Slim).
func pendingGate(ready *corev1.PodCondition) *facts.Gate {
	if ready.Reason != readinessGatesNotReady {
		return nil
	}
	if m := gateMissingRE.FindStringSubmatch(ready.Message); m != nil {
		return &facts.Gate{Condition: m[1], Status: "Missing"}
	}
	if m := gateStatusRE.FindStringSubmatch(ready.Message); m != nil {
		return &facts.Gate{Condition: m[1], Status: m[2]}
	}
	return nil
}

const readinessGatesNotReady = "ReadinessGatesNotReady"

var (
	gateMissingRE = regexp.MustCompile(`corresponding condition of pod readiness gate "([^"]+)" does not exist`)
	gateStatusRE  = regexp.MustCompile(`the status of pod readiness gate "([^"]+)" is not "True", but (\w+)`)
)

// pendingClaim returns the first PVC of an unscheduled pod that will not bind by itself.
// settling is true when a claim is Pending for a reason that may still resolve (a volume being
// provisioned or bound) and has been so for less than the settle time: the pod waits for it.
func (ix *index) pendingClaim(pod *corev1.Pod) (p *facts.Startup, settling bool) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		pvc, ok := ix.pvcs[pod.Namespace+"/"+name]
		if !ok || pvc.Status.Phase != corev1.ClaimPending {
			continue
		}
		claim, certain, waitsForPod := ix.claimPendingReason(pvc)
		if waitsForPod {
			continue
		}
		if !certain && ix.now.Sub(pvc.CreationTimestamp.Time) < ix.settle {
			ix.wake(pvc.CreationTimestamp.Add(ix.settle))
			settling = true
			continue
		}
		claim.Name = name
		return &facts.Startup{Kind: facts.ClaimPending, Reason: "PersistentVolumeClaimPending", Claim: &claim}, false
	}
	return nil, settling
}

// claimPendingReason says why a Pending claim does not bind. certain is true when it can never
// bind as it is (a missing StorageClass); waitsForPod when binding waits for the pod to be
// scheduled (WaitForFirstConsumer): then the claim is not the cause.
func (ix *index) claimPendingReason(pvc *corev1.PersistentVolumeClaim) (claim facts.Claim, certain, waitsForPod bool) {
	className := ""
	if pvc.Spec.StorageClassName != nil {
		className = *pvc.Spec.StorageClassName
	}
	event := ix.lastEventMessage("PersistentVolumeClaim", pvc.Namespace, pvc.Name)
	if ix.storageClasses != nil {
		if className == "" && pvc.Spec.StorageClassName == nil {
			if ix.defaultClass == nil {
				return facts.Claim{Why: facts.NoDefaultClass, Event: event}, true, false
			}
			className = ix.defaultClass.Name
		}
		if className != "" {
			sc, ok := ix.storageClasses[className]
			if !ok {
				return facts.Claim{Why: facts.ClassMissing, Class: className, Event: event}, true, false
			}
			if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				return facts.Claim{}, false, true
			}
		}
	}
	if event != "" {
		// The volume controller has tried and complained (ProvisioningFailed, FailedBinding).
		return facts.Claim{Why: facts.VolumeControllerEvent, Class: className, Event: event}, true, false
	}
	if className == "" {
		return facts.Claim{Why: facts.NoMatchingVolume}, false, false
	}
	return facts.Claim{Why: facts.NotProvisioned, Class: className}, false, false
}
