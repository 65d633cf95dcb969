package rollout_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/internal/rollout"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// readyPod is a Running pod whose Ready condition turned True at ready and whose one container
// (re)started at started.
func readyPod(name string, ready, started time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}}
}

func set(replicas, minReady int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.StatefulSetSpec{Replicas: &replicas, MinReadySeconds: minReady}}
}

func TestSettled(t *testing.T) {
	now := t0
	cases := []struct {
		name    string
		set     *appsv1.StatefulSet
		pods    []*corev1.Pod
		settle  time.Duration
		ok      bool
		pod     string
		notRdy  bool
		at      time.Time
		comment string
	}{
		{name: "ready long enough", set: set(2, 0), settle: 10 * time.Second, ok: true,
			pods: []*corev1.Pod{readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour)), readyPod("web-1", t0.Add(-10*time.Second), t0.Add(-11*time.Second))}},
		{name: "the crash loop's Ready second", set: set(1, 0), settle: 10 * time.Second, pod: "web-0", at: t0.Add(9 * time.Second),
			pods: []*corev1.Pod{readyPod("web-0", t0.Add(-time.Second), t0.Add(-2*time.Second))}},
		{name: "restarted after Ready: the restart counts", set: set(1, 0), settle: 10 * time.Second, pod: "web-0", at: t0.Add(7 * time.Second),
			pods: []*corev1.Pod{readyPod("web-0", t0.Add(-time.Hour), t0.Add(-3*time.Second))}},
		{name: "minReadySeconds longer than settle", set: set(1, 30), settle: 10 * time.Second, pod: "web-0", at: t0.Add(10 * time.Second),
			pods: []*corev1.Pod{readyPod("web-0", t0.Add(-20*time.Second), t0.Add(-21*time.Second))}},
		{name: "missing pod", set: set(2, 0), settle: 10 * time.Second, pod: "web-1", notRdy: true,
			pods: []*corev1.Pod{readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))}},
		{name: "zero settle still needs every pod Ready", set: set(1, 0), ok: true,
			pods: []*corev1.Pod{readyPod("web-0", t0, t0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, u := rollout.Settled(c.set, c.pods, now, c.settle)
			if ok != c.ok || u.Pod != c.pod || u.NotReady != c.notRdy || !u.At.Equal(c.at) {
				t.Errorf("Settled = %t %+v, want %t pod %q notReady %t at %s", ok, u, c.ok, c.pod, c.notRdy, c.at)
			}
		})
	}
}

// TestSettledOutlivesThePreviousRun: a container that crashed after a 30 s run and restarted 15 s
// ago is not settled until it has run 40 s (its previous run + 10 s), whatever settle says: a crash
// loop with runs longer than settle is not Complete between two crashes.
func TestSettledOutlivesThePreviousRun(t *testing.T) {
	pod := readyPod("web-0", t0.Add(-15*time.Second), t0.Add(-15*time.Second))
	pod.Status.ContainerStatuses[0].RestartCount = 1
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1,
		StartedAt: metav1.NewTime(t0.Add(-55 * time.Second)), FinishedAt: metav1.NewTime(t0.Add(-25 * time.Second))}
	ok, u := rollout.Settled(set(1, 0), []*corev1.Pod{pod}, t0, 10*time.Second)
	if want := t0.Add(25 * time.Second); ok || !u.At.Equal(want) || u.Need != 40*time.Second {
		t.Errorf("Settled = %t %+v, want unsettled until %s (need 40s)", ok, u, want)
	}
}

func TestSettledNotReady(t *testing.T) {
	terminated := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	terminated.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	notReady := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	sidecarDown := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	always := corev1.ContainerRestartPolicyAlways
	sidecarDown.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
	sidecarDown.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	terminating := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	for name, pod := range map[string]*corev1.Pod{"container exited while the condition says Ready": terminated, "Ready False": notReady,
		"sidecar not running": sidecarDown, "terminating": terminating} {
		if ok, u := rollout.Settled(set(1, 0), []*corev1.Pod{pod}, t0, 10*time.Second); ok || !u.NotReady || u.Pod != "web-0" {
			t.Errorf("%s: Settled = %t %+v, want not Ready web-0", name, ok, u)
		}
	}
}

func TestSettledLivenessWindow(t *testing.T) {
	pod := readyPod("web-0", t0.Add(-15*time.Second), t0.Add(-16*time.Second))
	// Kubernetes' defaults (period 10 s, failureThreshold 3) on a probe that leaves them zero,
	// after an initial delay of 5 s: 35 s. The template's probe counts (pods are read slimmed).
	s := set(1, 0)
	s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", LivenessProbe: &corev1.Probe{InitialDelaySeconds: 5}}}
	ok, u := rollout.Settled(s, []*corev1.Pod{pod}, t0, 10*time.Second)
	if want := t0.Add(20 * time.Second); ok || !u.At.Equal(want) || u.Need != 35*time.Second {
		t.Errorf("Settled = %t %+v, want unsettled until %s (need 35s)", ok, u, want)
	}
}

func TestSettledAmongPicksOwnPods(t *testing.T) {
	s := set(1, 0)
	s.UID = "web-uid"
	own := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	own.OwnerReferences = []metav1.OwnerReference{{UID: "web-uid", Controller: new(true)}}
	orphan := readyPod("web-0", t0.Add(-time.Hour), t0.Add(-time.Hour))
	if ok, _ := rollout.SettledAmong(s, []corev1.Pod{*orphan}, t0, time.Second); ok {
		t.Error("a pod of another owner settled the StatefulSet")
	}
	if ok, u := rollout.SettledAmong(s, []corev1.Pod{*orphan, *own}, t0, time.Second); !ok {
		t.Errorf("own pod not seen: %+v", u)
	}
}
