package repair_test

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
)

// watchedSet is the one StatefulSet the follower watches.
func watchedSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2}}
}

// TestWatchFollower: the follower ends when done says so of a state the watch delivers, with
// rollout.ErrTimeout when the deadline passes, and with context.Canceled when cancelled.
func TestWatchFollower(t *testing.T) {
	kube := fake.NewClientset(watchedSet())
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
