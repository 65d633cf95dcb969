package oracle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)

// world is a StatefulSet "web" and its pods, as the API server has them.
type world struct {
	set  *appsv1.StatefulSet
	pods []corev1.Pod
}

func newWorld(replicas int32, start int32) *world {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: SetName, Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Ordinals: &appsv1.StatefulSetOrdinals{Start: start},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			CurrentRevision: "web-a", UpdateRevision: "web-a", UpdatedReplicas: replicas, CurrentReplicas: replicas},
	}
	w := &world{set: set}
	for i := range replicas {
		w.pods = append(w.pods, pod(start+i, "web-a", true, t0.Add(-time.Minute)))
	}
	return w
}

func pod(ord int32, rev string, ready bool, since time.Time) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", ord), UID: types.UID(fmt.Sprintf("uid-%d-%s", ord, rev)),
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: ready}}},
	}
}

func (w *world) at(at time.Time) Observation {
	return Observation{At: at, Set: w.set.DeepCopy(), Pods: slices.Clone(w.pods)}
}

func TestCompleteNow(t *testing.T) {
	cases := []struct {
		name   string
		change func(w *world)
		want   bool
	}{
		{"all Ready on the update revision", func(*world) {}, true},
		{"generation not observed", func(w *world) { w.set.Generation = 2 }, false},
		{"status not ready", func(w *world) { w.set.Status.ReadyReplicas = 2 }, false},
		{"a pod missing", func(w *world) { w.pods = w.pods[:2] }, false},
		{"a pod terminating", func(w *world) { w.pods[1].DeletionTimestamp = &metav1.Time{Time: t0} }, false},
		{"a pod not Ready", func(w *world) { w.pods[2].Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"a pod Pending", func(w *world) { w.pods[0].Status.Phase = corev1.PodPending }, false},
		{"a pod beyond the replicas", func(w *world) { w.pods = append(w.pods, pod(5, "web-a", true, t0.Add(-time.Minute))) }, false},
		{"a pod on an old revision", func(w *world) {
			w.set.Status.UpdateRevision = "web-b"
			w.pods[2] = pod(4, "web-b", true, t0.Add(-time.Minute))
		}, false},
		{"not yet available", func(w *world) {
			w.set.Spec.MinReadySeconds = 5
			w.pods[0].Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-2 * time.Second))
		}, false},
		{"available", func(w *world) {
			w.set.Spec.MinReadySeconds = 5
			w.pods[0].Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Second))
		}, true},
		{"below the partition on the current revision", func(w *world) {
			w.set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
			w.set.Status.UpdateRevision = "web-b"
			w.pods[2] = pod(4, "web-b", true, t0.Add(-time.Minute))
		}, true},
		{"at the partition still on the current revision", func(w *world) {
			w.set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
			w.set.Status.UpdateRevision = "web-b"
		}, false},
		{"OnDelete: every pod must be updated", func(w *world) {
			w.set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			w.set.Status.UpdateRevision = "web-b"
		}, false},
	}
	for _, c := range cases {
		w := newWorld(3, 2)
		c.change(w)
		if got, why := CompleteNow(w.at(t0)); got != c.want {
			t.Errorf("%s: complete=%v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

// observe feeds the tracker one observation a second from `from` for d, the world changed by
// step(second) before each, and returns the outcome and when.
func observe(tr *Tracker, w *world, from time.Time, d time.Duration, step func(s int, w *world)) (Outcome, time.Duration) {
	for s := 0; s <= int(d/time.Second); s++ {
		if step != nil {
			step(s, w)
		}
		at := from.Add(time.Duration(s) * time.Second)
		if out := tr.Observe(w.at(at)); out != Pending {
			return out, at.Sub(from)
		}
	}
	return Pending, d
}

func TestTrackerComplete(t *testing.T) {
	w := newWorld(3, 0)
	out, after := observe(Final(), w, t0, 5*time.Minute, nil)
	if out != Complete || after != 20*time.Second {
		t.Fatalf("%s after %s, want complete after the 20 s settle", out, after)
	}
}

// A crash loop without a readiness probe: the pod is Ready for a second each run, the status
// blinks complete — never complete for 20 s, and the blinks are no progress: stuck after 60 s.
func TestTrackerCrashLoopIsStuckNotComplete(t *testing.T) {
	w := newWorld(1, 0)
	out, after := observe(Final(), w, t0, 5*time.Minute, func(s int, w *world) {
		ready := s%7 == 3
		p := &w.pods[0]
		if ready {
			p.Status.ContainerStatuses[0].RestartCount++
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(s) * time.Second))}
			w.set.Status.ReadyReplicas, w.set.Status.AvailableReplicas = 1, 1
		} else {
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(s) * time.Second))}
			w.set.Status.ReadyReplicas, w.set.Status.AvailableReplicas = 0, 0
		}
	})
	if out != Stuck || after < 60*time.Second || after > 70*time.Second {
		t.Fatalf("%s after %s, want stuck after about 60 s", out, after)
	}
}

// A pod that restarts while the status reads complete restarts the settle clock.
func TestTrackerRestartResetsSettle(t *testing.T) {
	w := newWorld(2, 0)
	out, after := observe(Final(), w, t0, 5*time.Minute, func(s int, w *world) {
		if s == 15 {
			w.pods[1].Status.ContainerStatuses[0].RestartCount = 1
		}
	})
	if out != Complete || after != 35*time.Second {
		t.Fatalf("%s after %s, want complete 20 s after the restart", out, after)
	}
}

// Slow progress (a new pod every 20 s) is not stuck; a frozen rollout is, after 60 s.
func TestTrackerProgressAndStuck(t *testing.T) {
	w := newWorld(3, 0)
	w.pods = nil
	w.set.Status.ReadyReplicas, w.set.Status.AvailableReplicas = 0, 0
	out, after := observe(Final(), w, t0, 5*time.Minute, func(s int, w *world) {
		if s%20 == 0 && len(w.pods) < 3 {
			w.pods = append(w.pods, pod(int32(len(w.pods)), "web-a", true, t0.Add(time.Duration(s)*time.Second)))
			w.set.Status.ReadyReplicas, w.set.Status.AvailableReplicas = int32(len(w.pods)), int32(len(w.pods))
		}
	})
	if out != Complete || after != 60*time.Second {
		t.Fatalf("%s after %s, want complete once the third pod settled", out, after)
	}
	frozen := newWorld(2, 0)
	frozen.pods[1].Status.Phase = corev1.PodPending
	frozen.set.Status.ReadyReplicas, frozen.set.Status.AvailableReplicas = 1, 1
	tr := Final()
	if out, after := observe(tr, frozen, t0, 5*time.Minute, nil); out != Stuck || after != 60*time.Second || tr.Why != "status ready 1 available 1 of 2" {
		t.Fatalf("%s after %s (%s), want stuck after 60 s", out, after, tr.Why)
	}
}

func TestTrackerUndecided(t *testing.T) {
	w := newWorld(1, 0)
	w.pods[0].Status.Phase = corev1.PodPending
	w.set.Status.ReadyReplicas = 0
	// A new state every 30 s: never 60 s without progress, never complete.
	out, after := observe(Final(), w, t0, 10*time.Minute, func(s int, w *world) {
		if s%30 == 0 {
			w.pods[0].UID = types.UID(fmt.Sprint("uid-", s))
		}
	})
	if out != Undecided || after != 4*time.Minute {
		t.Fatalf("%s after %s, want undecided at the 4-minute cap", out, after)
	}
	if out, after := observe(Intermediate(), newWorld(1, 0), t0, time.Minute, nil); out != Complete || after != 5*time.Second {
		t.Fatalf("intermediate: %s after %s", out, after)
	}
}

func TestLive(t *testing.T) {
	h := History{Replicas: 3, Steps: []Fault{MissingTag, Good, Crash}}
	revs := []string{"web-1", "web-2", "web-3"}
	w := newWorld(3, 0)
	w.set.Status.UpdateRevision = "web-3"
	w.pods = []corev1.Pod{pod(0, "web-1", false, t0)} // kubernetes#67250: web-0 on the missing tag
	faults, _ := Live(h, revs, w.at(t0))
	if !slices.Equal(faults, []Fault{MissingTag, Crash}) {
		t.Errorf("live %v, want missing-tag (web-0's revision) and crash (the update revision)", faults)
	}
	// Below a partition, pods are created from the current revision: a template PodSecurity
	// refuses is live there even with no pod left.
	h = History{Replicas: 1, Partition: 1, Steps: []Fault{PodSecurity, Good, Good}}
	w = newWorld(1, 0)
	w.pods = nil
	w.set.Status.CurrentRevision, w.set.Status.UpdateRevision = "web-1", "web-3"
	if faults, _ := Live(h, revs, w.at(t0)); !slices.Equal(faults, []Fault{PodSecurity, Good}) {
		t.Errorf("partition: live %v", faults)
	}
	h.Partition = 0
	if faults, _ := Live(h, revs, w.at(t0)); !slices.Equal(faults, []Fault{Good}) {
		t.Errorf("no partition: live %v", faults)
	}
	h = History{Replicas: 2, Steps: []Fault{Quota, Good, Finalizer}}
	w = newWorld(2, 0)
	w.pods[1].DeletionTimestamp = &metav1.Time{Time: t0}
	w.pods[1].Finalizers = []string{FinalizerName}
	faults, terminating := Live(h, revs, w.at(t0))
	if !slices.Equal(faults, []Fault{Quota, Finalizer}) || !slices.Equal(terminating, []string{"web-1"}) {
		t.Errorf("live %v terminating %v", faults, terminating)
	}
	w.pods[1].Finalizers = nil
	if faults, _ := Live(h, revs, w.at(t0)); !slices.Equal(faults, []Fault{Quota}) {
		t.Errorf("no finalizer held: live %v", faults)
	}
}
