package rollout

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// DefaultSettle is how long, by default, every replica must have stayed Ready with no container
// restarted before a rollout the controller reports complete is called Complete. It is the
// kubelet's first crash-loop back-off (initialCrashLoopBackOff = 10 s, kubelet.go:173@v1.37.2): a container
// that exits within its first 10 s is seen exited, or restarted, within the window, whatever
// the second of Ready a kubelet ≥ 1.34 gives a crash-looping pod without a readiness probe
// (kubernetes#133066).
const DefaultSettle = 10 * time.Second

// The kubelet's probe defaults, where an object (a test's, or one read before defaulting) leaves
// them zero: periodSeconds 10, failureThreshold 3 (SetDefaults_Probe,
// pkg/apis/core/v1/defaults.go@v1.37.2).
const (
	probePeriodDefault    = 10
	probeFailureThreshold = 3
)

// Unsettled says why a rollout whose status is complete is not yet Complete: the pod and what it
// has not done for long enough. Zero when settled.
type Unsettled struct {
	Pod string
	// NotReady is true when the pod is not Ready now, or a container of it is not running (a
	// crash between two Ready moments): only a change can settle it.
	NotReady bool
	// Since is when the pod last became Ready or a container of it last (re)started; Need is
	// how long it must stay so; At = Since + Need.
	Since time.Time
	Need  time.Duration
	At    time.Time
}

// String is one line for wait's progress log.
func (u Unsettled) String() string {
	if u.NotReady {
		return fmt.Sprintf("pod %s is not Ready with every container running", u.Pod)
	}
	return fmt.Sprintf("pod %s Ready since %s, must stay so for %s", u.Pod, u.Since.UTC().Format(time.RFC3339), u.Need)
}

// Settled reports whether every pod of the StatefulSet's ordinal range has been Ready, with each
// container (sidecars included) running and not restarted, for at least settle, the set's
// minReadySeconds, each container's liveness window and, for a container that exited before,
// its previous run + 10 s (initialDelaySeconds + periodSeconds ×
// failureThreshold: the time the kubelet takes to kill a container whose liveness probe fails,
// prober/worker.go@v1.37.2). The time it checks from is the later of the Ready condition's last
// transition and each container's start, so a restart or a Ready→not-Ready→Ready flip between
// two looks starts the window again.
//
// It returns the pod that settles last (or is not Ready): At is when the rollout will have
// settled if nothing changes (zero when a pod is not Ready or missing). pods are the
// StatefulSet's own pods (any order; others are ignored).
func Settled(set *appsv1.StatefulSet, pods []*corev1.Pod, now time.Time, settle time.Duration) (bool, Unsettled) {
	start := 0
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	replicas := int(controller.Replicas(set))
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	// The template's probes: pods as read are slimmed of theirs (snapshot.Slim).
	liveness := livenessWindow(&set.Spec.Template.Spec)
	var last Unsettled
	for i := start; i < start+replicas; i++ {
		name := fmt.Sprintf("%s-%d", set.Name, i)
		pod := byName[name]
		if pod == nil {
			return false, Unsettled{Pod: name, NotReady: true}
		}
		since, previous, ok := readySince(pod)
		if !ok {
			return false, Unsettled{Pod: name, NotReady: true}
		}
		need := max(settle, time.Duration(set.Spec.MinReadySeconds)*time.Second, liveness)
		if previous > 0 {
			// A container that exited before must outlive its previous run, as the crash-loop
			// rule asks of a restarted container (stuck's runGrace, stuck/kubelet.go):
			// a loop whose runs last longer than settle is not called Complete between crashes.
			need = max(need, previous+recoveredGrace)
		}
		if u := (Unsettled{Pod: name, Since: since, Need: need, At: since.Add(need)}); u.At.After(last.At) {
			last = u
		}
	}
	if now.Before(last.At) {
		return false, last
	}
	return true, Unsettled{}
}

// recoveredGrace is how much longer than its previous run a restarted container must run before
// it counts as settled.
const recoveredGrace = 10 * time.Second

// readySince is when the pod last became Ready or a container last started, and the longest
// previous run of a container that exited before (zero: none, or its times unknown); false when
// the pod is terminating, not Ready, or a container (a sidecar included) is not running.
func readySince(pod *corev1.Pod) (time.Time, time.Duration, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return time.Time{}, 0, false
	}
	var since time.Time
	ready := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
			since = c.LastTransitionTime.Time
		}
	}
	if !ready {
		return time.Time{}, 0, false
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecars[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	statuses := pod.Status.ContainerStatuses
	for _, st := range pod.Status.InitContainerStatuses {
		if sidecars[st.Name] {
			statuses = append(statuses, st)
		}
	}
	var previous time.Duration
	for _, st := range statuses {
		run := st.State.Running
		if run == nil {
			return time.Time{}, 0, false
		}
		if run.StartedAt.After(since) {
			since = run.StartedAt.Time
		}
		if t := st.LastTerminationState.Terminated; t != nil && !t.StartedAt.IsZero() && !t.FinishedAt.IsZero() {
			previous = max(previous, t.FinishedAt.Sub(t.StartedAt.Time))
		}
	}
	return since, previous, true
}

// livenessWindow is the longest time a container's liveness probe may fail before the kubelet
// restarts it.
func livenessWindow(spec *corev1.PodSpec) time.Duration {
	var longest time.Duration
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		p := c.LivenessProbe
		if p == nil {
			continue
		}
		period, failures := p.PeriodSeconds, p.FailureThreshold
		if period <= 0 {
			period = probePeriodDefault
		}
		if failures <= 0 {
			failures = probeFailureThreshold
		}
		longest = max(longest, time.Duration(p.InitialDelaySeconds+period*failures)*time.Second)
	}
	return longest
}

// SettledAmong is Settled with the StatefulSet's pods picked from all by their controller
// reference.
func SettledAmong(set *appsv1.StatefulSet, all []corev1.Pod, now time.Time, settle time.Duration) (bool, Unsettled) {
	var pods []*corev1.Pod
	for k := range all {
		if ref := metav1.GetControllerOfNoCopy(&all[k]); ref != nil && ref.UID == set.UID {
			pods = append(pods, &all[k])
		}
	}
	return Settled(set, pods, now, settle)
}
