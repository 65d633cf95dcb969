package stuck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// TestSummaries: the status is decided from every rule's findings at once, with a message.
func TestSummaries(t *testing.T) {
	set := func(name string, terminating, complete, observed bool) rollout {
		return rollout{summary: apiv1.StatefulSetSummary{Namespace: "shop", Name: name, Replicas: 3, ReadyReplicas: 2, UpdateRevision: name + "-b"},
			terminating: terminating, complete: complete, observed: observed, updated: 1}
	}
	finding := func(name, pod string, code apiv1.Code, sev apiv1.Severity, short string) Finding {
		return Finding{Finding: apiv1.Finding{Namespace: "shop", StatefulSet: name, Pod: pod, Code: code, Severity: sev}, Short: short}
	}
	sets := []rollout{set("done", false, true, true), set("going", false, false, true), set("new", false, false, false),
		set("erring", false, true, true), set("warned", false, true, true), set("gone", true, false, true)}
	findings := []Finding{
		finding("erring", "erring-0", apiv1.StaleRevisionStuck, apiv1.SeverityError, "ImagePullBackOff on old revision erring-a"),
		finding("erring", "erring-1", apiv1.PodUnschedulable, apiv1.SeverityError, "no node fits"),
		finding("warned", "", apiv1.ServiceMissing, apiv1.SeverityWarning, "no Service"),
		finding("gone", "", apiv1.StatefulSetTerminating, apiv1.SeverityError, "terminating"),
	}
	want := []struct {
		status  apiv1.RolloutStatus
		message string
	}{
		{apiv1.StatusComplete, "rollout complete: 2 of 3 pods ready on revision done-b"},
		{apiv1.StatusProgressing, "2 of 3 pods ready, 1 updated to revision going-b"},
		{apiv1.StatusProgressing, "waiting for the controller to observe the latest spec"},
		{apiv1.StatusStuck, "StaleRevisionStuck: erring-0: ImagePullBackOff on old revision erring-a (1 more errors)"},
		{apiv1.StatusComplete, "rollout complete: 2 of 3 pods ready on revision warned-b"},
		{apiv1.StatusTerminating, "the StatefulSet is being deleted"},
	}
	got := summaries(sets, findings)
	if len(got) != len(want) || summaries(nil, findings) != nil {
		t.Fatalf("got %d summaries, want %d (and none of no sets)", len(got), len(want))
	}
	for i, s := range got {
		if s.Status != want[i].status || s.Message != want[i].message {
			t.Errorf("%s: %s %q, want %s %q", s.Name, s.Status, s.Message, want[i].status, want[i].message)
		}
	}
}

// TestWaitingOn: a Progressing message names the pod the controller's sync stops at, and what
// its containers say.
func TestWaitingOn(t *testing.T) {
	pending := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}}}
	v := &controller.View{Ordinals: []controller.Ordinal{
		{Name: "web-0", Next: controller.Nothing},
		{Name: "web-1", Next: controller.WaitRunning, Holds: true, Pod: pending},
		{Name: "web-2", Next: controller.Create},
	}}
	if got, want := waitingOn(v), "the controller waits for web-1 to be Running (Pending, ErrImagePull)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	v.Ordinals[1].Holds = false
	if got := waitingOn(v); got != "" || waitingOn(nil) != "" {
		t.Errorf("%q, want none when no ordinal holds", got)
	}
}
