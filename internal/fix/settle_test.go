package fix

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// completeSet is a one-replica StatefulSet the controller reports complete.
func completeSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 1},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1,
			CurrentRevision: "web-b", UpdateRevision: "web-b"},
	}
}

func readyPodSince(since time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(since)}}}}},
	}
}

// statusFollower reports the StatefulSet complete at once, as the controller's status says.
func statusFollower(set *appsv1.StatefulSet) repair.Follower {
	return func(ctx context.Context, _, _ string, done func(*appsv1.StatefulSet) bool) error {
		if done(set) {
			return nil
		}
		<-ctx.Done()
		return rollout.ErrTimeout
	}
}

// TestFollowSettledWaitsForThePods: fix --wait does not call a rollout complete on the
// controller's status alone: its pod became Ready just now, and complete comes only once it has
// been Ready for the settle time (4s: more than the fake clientset takes to start under -race).
func TestFollowSettledWaitsForThePods(t *testing.T) {
	set := completeSet()
	since := time.Now().Truncate(time.Second)
	kube := fake.NewClientset(readyPodSince(since))
	var log bytes.Buffer
	o := Options{Clients: gather.Clients{Clients: read.Clients{Kube: kube}}, Steady: 4 * time.Second}
	if _, err := followSettled(context.Background(), statusFollower(set), o, "shop", "web", &log); err != nil {
		t.Fatal(err)
	}
	if ready := time.Since(since); ready < 4*time.Second {
		t.Errorf("complete when the pod had been Ready for %s, less than the 4s settle time", ready)
	}
	if !strings.Contains(log.String(), "complete by the controller's status; pod web-0 Ready since") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestFollowSettledTimesOutOnACrash: a pod that is not Ready while the status still says
// complete (a crash between two Ready moments) never settles: the wait times out.
func TestFollowSettledTimesOutOnACrash(t *testing.T) {
	pod := readyPodSince(time.Now().Add(-time.Hour))
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	kube := fake.NewClientset(pod)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var result model.FixResult
	o := Options{Clients: gather.Clients{Clients: read.Clients{Kube: kube}}, Steady: time.Second}
	followed, err := followSettled(ctx, statusFollower(completeSet()), o, "shop", "web", &bytes.Buffer{})
	result.Rollout = verdict.DecideRollout(verdict.RolloutFacts{Followed: []verdict.Followed{followed}})
	if err == nil || result.Rollout != apiv1.RolloutTimedOut {
		t.Errorf("err %v rollout %q, want a timeout", err, result.Rollout)
	}
}
