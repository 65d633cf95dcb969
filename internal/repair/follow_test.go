package repair_test

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
)

// stuckCluster: web-0 on the old revision in ImagePullBackOff under OrderedReady
// (kubernetes#67250): fix deletes it, and the rollout then still has to happen.
func stuckCluster() []runtime.Object {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "web-a", UpdateRevision: "web-b"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "pod-uid",
			Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app:typo"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}},
	}
	return []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set, pod}
}

// TestWatchFollower: the follower ends when done says so of a state the watch delivers, with
// rollout.ErrTimeout when the deadline passes, and with context.Canceled when cancelled.
func TestWatchFollower(t *testing.T) {
	kube := fake.NewClientset(stuckCluster()...)
	follow := repair.WatchFollower(kube)
	observed := func(set *appsv1.StatefulSet) bool { return set.Status.ObservedGeneration >= 3 }

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := follow(ctx, "shop", "web", observed); !errors.Is(err, rollout.ErrTimeout) || errors.Is(err, context.Canceled) {
		t.Errorf("deadline: %v, want rollout.ErrTimeout", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := follow(ctx, "shop", "web", observed); errors.Is(err, rollout.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}

	done := make(chan error, 1)
	go func() { done <- follow(context.Background(), "shop", "web", observed) }()
	time.Sleep(100 * time.Millisecond)
	set, _ := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	set.Status.ObservedGeneration = 3
	if _, err := kube.AppsV1().StatefulSets("shop").UpdateStatus(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("observed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follower missed the status update")
	}
}
