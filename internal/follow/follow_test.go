package follow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// fixedSource serves the same objects at the fake clock's time; nothing ever changes.
type fixedSource struct {
	clock *clocktesting.FakeClock
	snap  stuck.Objects
}

func (s *fixedSource) Snapshot(context.Context) (*stuck.Objects, []string, error) {
	c := s.snap
	c.Now = s.clock.Now()
	return &c, nil, nil
}

func (s *fixedSource) Changes() <-chan struct{} { return nil }

// unschedulable: web-0 cannot be scheduled since the moment wait starts.
func unschedulable(since time.Time) stuck.Objects {
	set := appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 1},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "web-a", UpdateRevision: "web-a"},
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "pod-uid",
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: "web-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", LastTransitionTime: metav1.NewTime(since)}}},
	}
	return stuck.Objects{StatefulSets: []appsv1.StatefulSet{set}, Pods: []corev1.Pod{pod}}
}

// TestWakesWhenARuleMatures: nothing changes in the cluster, yet the gate diagnoses again when
// the Unschedulable settle time passes and again when the grace passes: Stuck, not a timeout.
func TestWakesWhenARuleMatures(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	src := &fixedSource{clock: clock, snap: unschedulable(start)}
	done := make(chan *model.WaitResult, 1)
	go func() {
		res, _ := follow.Run(context.Background(), src, follow.Options{Hold: 5 * time.Second, Diagnosis: stuck.DefaultOptions(), Clock: clock})
		done <- res
	}()
	// Settle (10 s) + grace (5 s): step the clock whenever the gate waits on it.
	for _, step := range []time.Duration{10 * time.Second, 5 * time.Second} {
		waitForTimer(t, clock)
		clock.Step(step + 10*time.Millisecond)
	}
	select {
	case res := <-done:
		if res.Result != apiv1.WaitStuck || len(res.Findings) != 1 || res.Findings[0].Code != apiv1.PodUnschedulable {
			t.Fatalf("result %s findings %+v", res.Result, res.Findings)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate did not wake up when the settle time and the grace passed")
	}
}

// TestInterruptedIsNotATimeout: cancelling the context (a signal) is Interrupted; its deadline
// passing is TimedOut.
func TestInterruptedIsNotATimeout(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	src := &fixedSource{clock: clocktesting.NewFakeClock(start), snap: unschedulable(start)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, _ := follow.Run(ctx, src, follow.Options{Hold: time.Minute, Diagnosis: stuck.DefaultOptions(), Clock: src.clock}); res.Result != apiv1.WaitInterrupted {
		t.Errorf("cancelled: %s, want Interrupted", res.Result)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if res, _ := follow.Run(ctx, src, follow.Options{Hold: time.Minute, Diagnosis: stuck.DefaultOptions(), Clock: src.clock}); res.Result != apiv1.WaitTimedOut {
		t.Errorf("deadline: %s, want TimedOut", res.Result)
	}
}

func waitForTimer(t *testing.T, clock *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the gate never set a timer")
		}
		time.Sleep(time.Millisecond)
	}
}

// complete: web-0 Ready on the only revision, the rollout complete.
func complete() stuck.Objects {
	s := unschedulable(time.Time{})
	s.StatefulSets[0].Status.Replicas, s.StatefulSets[0].Status.ReadyReplicas, s.StatefulSets[0].Status.AvailableReplicas, s.StatefulSets[0].Status.UpdatedReplicas = 1, 1, 1, 1
	s.Pods[0].Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	return s
}

// TestSettle: with Settle the gate says Complete only once the rollout has stayed complete with
// no finding for it (canary's --hold), waking up by itself when it has.
func TestSettle(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	src := &fixedSource{clock: clock, snap: complete()}
	done := make(chan *model.WaitResult, 1)
	go func() {
		res, _ := follow.Run(context.Background(), src, follow.Options{Hold: 5 * time.Second, Settle: 30 * time.Second, Diagnosis: stuck.DefaultOptions(), Clock: clock})
		done <- res
	}()
	waitForTimer(t, clock)
	select {
	case res := <-done:
		t.Fatalf("complete before the settle time: %s", res.Result)
	default:
	}
	clock.Step(30*time.Second + 10*time.Millisecond)
	select {
	case res := <-done:
		if res.Result != apiv1.WaitComplete || res.Message != "rollout complete and healthy for 30s" {
			t.Fatalf("result %s: %s", res.Result, res.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate did not wake up when the settle time passed")
	}
}

// TestStop: a Stop verdict ends the gate before any diagnosis counts.
func TestStop(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	src := &fixedSource{clock: clocktesting.NewFakeClock(start), snap: complete()}
	res, _ := follow.Run(context.Background(), src, follow.Options{Diagnosis: stuck.DefaultOptions(), Clock: src.clock,
		Stop: func(*stuck.Objects) (apiv1.Verdict, string) {
			return apiv1.CanaryStopped, "someone else changed it"
		}})
	if res.Result != apiv1.CanaryStopped || res.Message != "someone else changed it" {
		t.Errorf("result %s: %s", res.Result, res.Message)
	}
}

// seqSource serves one snapshot after the other, signalling a change after each (the
// informers' view of a pod that changes).
type seqSource struct {
	clock   *clocktesting.FakeClock
	snaps   []stuck.Objects
	next    int
	changes chan struct{}
}

func (s *seqSource) Snapshot(context.Context) (*stuck.Objects, []string, error) {
	c := s.snaps[min(s.next, len(s.snaps)-1)]
	s.next++
	c.Now = s.clock.Now()
	return &c, nil, nil
}

func (s *seqSource) Changes() <-chan struct{} { return s.changes }

// blip: the controller's status says complete because web-0 was Ready for the second its run
// lasted (a kubelet ≥ 1.34 crash loop without a readiness probe, kubernetes#133066).
func blip(readyAt time.Time) stuck.Objects {
	s := complete()
	s.Pods[0].Status.Conditions[0].LastTransitionTime = metav1.NewTime(readyAt)
	s.Pods[0].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(readyAt)}}}}
	return s
}

// TestSteadyWaitsOutTheReadyBlip: a rollout complete by the controller's status, whose pod
// became Ready a second ago, is not Complete until it has stayed Ready for Steady; the gate
// wakes up by itself then.
func TestSteadyWaitsOutTheReadyBlip(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	src := &fixedSource{clock: clock, snap: blip(start.Add(-time.Second))}
	done := make(chan *model.WaitResult, 1)
	go func() {
		res, _ := follow.Run(context.Background(), src, follow.Options{Hold: 5 * time.Second, Steady: 10 * time.Second, Diagnosis: stuck.DefaultOptions(), Clock: clock})
		done <- res
	}()
	waitForTimer(t, clock)
	select {
	case res := <-done:
		t.Fatalf("%s while the pod had been Ready for 1s of the 10s", res.Result)
	default:
	}
	clock.Step(9*time.Second + 10*time.Millisecond)
	select {
	case res := <-done:
		if res.Result != apiv1.WaitComplete {
			t.Fatalf("result %s: %s", res.Result, res.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gate did not wake up when the pod had been Ready for 10s")
	}
}

// TestSteadyCrashAfterBlipIsNotComplete: the pod crashes after its Ready second and the status
// goes back to incomplete: the gate never says Complete (here it runs into its deadline).
func TestSteadyCrashAfterBlipIsNotComplete(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	crashed := blip(start.Add(-time.Second))
	crashed.StatefulSets[0].Status.ReadyReplicas, crashed.StatefulSets[0].Status.AvailableReplicas = 0, 0
	crashed.Pods[0].Status.Conditions[0].Status = corev1.ConditionFalse
	crashed.Pods[0].Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		StartedAt: metav1.NewTime(start.Add(-time.Second)), FinishedAt: metav1.NewTime(start)}}
	src := &seqSource{clock: clock, snaps: []stuck.Objects{blip(start.Add(-time.Second)), crashed}, changes: make(chan struct{}, 1)}
	src.changes <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, _ := follow.Run(ctx, src, follow.Options{Hold: time.Minute, Steady: 10 * time.Second, Diagnosis: stuck.DefaultOptions(), Clock: clock})
	if res.Result != apiv1.WaitTimedOut {
		t.Errorf("result %s (%s), want TimedOut: the pod crashed after its Ready second", res.Result, res.Message)
	}
	if src.next < 2 {
		t.Errorf("the crash was never looked at (%d snapshots)", src.next)
	}
}

// watchCanary: web declares watch's canary on 3 replicas and watch moved web-2 to revision
// web-b (partition 2): the controller's status, partition respected, is complete. paused adds
// watch's Reconciling condition of a canary whose analysis could not tell.
func watchCanary(paused bool) stuck.Objects {
	set := appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2, Annotations: map[string]string{apiv1.AnnotationCanarySteps: "1,50%"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 2, UpdatedReplicas: 1,
			CurrentRevision: "web-a", UpdateRevision: "web-b"},
	}
	if paused {
		set.Status.Conditions = []appsv1.StatefulSetCondition{{Type: apiv1.ConditionReconciling, Status: corev1.ConditionTrue, Reason: apiv1.ReasonCanaryPaused,
			Message: "analysis error-ratio Inconclusive", LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC))}}
	}
	s := stuck.Objects{StatefulSets: []appsv1.StatefulSet{set}}
	for i, rev := range []string{"web-a", "web-a", "web-b"} {
		s.Pods = append(s.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("pod-%d", i)),
				Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return s
}

// TestWaitFollowsWatchCanaryToTheEnd: wait (Stepping false) does not call a canary watch steps
// Complete at a step's partition, though the controller's status is: it keeps waiting (here
// to its deadline); canary (Stepping true, it steps the partition itself) does. Once the canary
// reached every replica, wait says Complete; a canary watch paused is Stuck once held for Hold.
func TestWaitFollowsWatchCanaryToTheEnd(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	run := func(snap stuck.Objects, stepping bool, deadline time.Duration) *model.WaitResult {
		t.Helper()
		clock := clocktesting.NewFakeClock(start)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		done := make(chan *model.WaitResult, 1)
		go func() {
			res, _ := follow.Run(ctx, &fixedSource{clock: clock, snap: snap}, follow.Options{Stepping: stepping, Hold: 5 * time.Second, Diagnosis: stuck.DefaultOptions(), Clock: clock})
			done <- res
		}()
		for {
			select {
			case res := <-done:
				return res
			case <-time.After(10 * time.Millisecond):
				if clock.HasWaiters() {
					clock.Step(5*time.Second + 10*time.Millisecond)
				}
			}
		}
	}
	if res := run(watchCanary(false), false, 300*time.Millisecond); res.Result != apiv1.WaitTimedOut {
		t.Errorf("wait at a step of watch's canary: %s, want TimedOut (still waiting)", res.Result)
	}
	if res := run(watchCanary(false), true, 5*time.Second); res.Result != apiv1.WaitComplete {
		t.Errorf("canary's own step: %s, want Complete", res.Result)
	}
	done := watchCanary(false)
	done.StatefulSets[0].Status.UpdatedReplicas, done.StatefulSets[0].Status.CurrentReplicas, done.StatefulSets[0].Status.CurrentRevision = 3, 3, "web-b"
	done.StatefulSets[0].Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](3) // parked again
	for i := range done.Pods {
		done.Pods[i].Labels[appsv1.ControllerRevisionHashLabelKey] = "web-b"
	}
	if res := run(done, false, 5*time.Second); res.Result != apiv1.WaitComplete {
		t.Errorf("wait once watch's canary reached every replica: %s, want Complete", res.Result)
	}
	res := run(watchCanary(true), false, 5*time.Second)
	if res.Result != apiv1.WaitStuck || len(res.Findings) != 1 || res.Findings[0].Reason != apiv1.ReasonCanaryPaused {
		t.Errorf("wait on a canary watch paused: %s %+v, want Stuck with RolloutBlocked CanaryPaused", res.Result, res.Findings)
	}
}
