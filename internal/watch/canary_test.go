package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/watch"
)

// annotatedObjects: a 4-replica set declaring a canary, no pods (nothing to diagnose), the
// partition at 0, update and current revisions as given.
func annotatedObjects(current, update string, partition int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2,
			Annotations: map[string]string{"stsdiag.io/canary-steps": "1,50%", "stsdiag.io/canary-hold": "1s"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: current, UpdateRevision: update},
	}
}

func shop() *corev1.Namespace { return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}} }

func partitionNow(t *testing.T, kube *fake.Clientset) (int32, string) {
	t.Helper()
	set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *set.Spec.UpdateStrategy.RollingUpdate.Partition, set.Annotations["stsdiag.io/canary-step"]
}

func waitPartition(t *testing.T, kube *fake.Clientset, want int32) string {
	t.Helper()
	var note string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		p, n := partitionNow(t, kube)
		note = n
		return p == want, nil
	})
	if err != nil {
		p, _ := partitionNow(t, kube)
		t.Fatalf("partition %d, want %d", p, want)
	}
	return note
}

// TestCanaryParksBetweenRollouts: with nothing pending watch holds the partition at replicas.
func TestCanaryParksBetweenRollouts(t *testing.T) {
	kube := fake.NewClientset(shop(), annotatedObjects("web-a", "web-a", 0))
	metrics, _ := run(t, kube, watch.Options{Hold: time.Hour})
	note := waitPartition(t, kube, 4)
	if note != "parked: partition 4 (spec.replicas) while revision web-a is current" {
		t.Errorf("annotation %q", note)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("parked", "shop")) == 1, nil
	})
	if err != nil {
		t.Error("stsdiag_canary_steps_total{parked} never 1")
	}
}

// TestCanaryFirstStepAtOnce: a template change behind the parked partition gets the first step's
// partition at once (no pod moved yet, nothing to hold), recorded in the annotation, an Event and
// the metric.
func TestCanaryFirstStepAtOnce(t *testing.T) {
	kube := fake.NewClientset(shop(), annotatedObjects("web-a", "web-b", 4))
	metrics, _ := run(t, kube, watch.Options{Hold: time.Hour})
	note := waitPartition(t, kube, 3)
	if note != "step 1 (1 of 3): partition 3, revision web-b" {
		t.Errorf("annotation %q", note)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("advanced", "shop")) == 1, nil
	})
	if err != nil {
		t.Error("stsdiag_canary_steps_total{advanced} never 1")
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		events, _ := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		for _, e := range events.Items {
			if e.Reason == "CanaryStep" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Error("no CanaryStep Event")
	}
}

// TestCanaryNotAnnotatedUntouched: without the annotation watch never writes the partition.
func TestCanaryNotAnnotatedUntouched(t *testing.T) {
	set := annotatedObjects("web-a", "web-b", 4)
	set.Annotations = nil
	kube := fake.NewClientset(shop(), set)
	run(t, kube, watch.Options{Hold: 0, Fix: true})
	time.Sleep(300 * time.Millisecond)
	for _, a := range kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "statefulsets" && a.GetSubresource() == "" {
			t.Fatalf("patched an unannotated StatefulSet: %v", a)
		}
	}
}

// TestCanaryBudget: each step takes one action from --max-repairs-per-hour of the namespace: with
// a budget of 1, of two annotated sets waiting for their first step one steps, the other is
// postponed.
func TestCanaryBudget(t *testing.T) {
	other := annotatedObjects("db-a", "db-b", 4)
	other.Name, other.UID = "db", "db-uid"
	kube := fake.NewClientset(shop(), annotatedObjects("web-a", "web-b", 4), other)
	metrics, _ := run(t, kube, watch.Options{Hold: time.Hour, MaxRepairsPerHour: 1})
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("ratelimited", "shop")) >= 1 &&
			testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("advanced", "shop")) >= 1, nil
	})
	if err != nil {
		t.Fatal("never one step and one postponed")
	}
	time.Sleep(200 * time.Millisecond)
	if got := testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("advanced", "shop")); got != 1 {
		t.Errorf("stsdiag_canary_steps_total{advanced} = %v, want 1", got)
	}
	moved := 0
	for _, name := range []string{"web", "db"} {
		set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *set.Spec.UpdateStrategy.RollingUpdate.Partition == 3 {
			moved++
		}
	}
	if moved != 1 {
		t.Errorf("%d sets stepped, want 1", moved)
	}
}

// TestCanaryReleased: the annotation removed, the partition watch parked goes back to 0 and its
// stsdiag.io/canary-step annotation away.
func TestCanaryReleased(t *testing.T) {
	set := annotatedObjects("web-a", "web-a", 4)
	set.Annotations = map[string]string{"stsdiag.io/canary-step": "parked: partition 4 (spec.replicas) while revision web-a is current"}
	kube := fake.NewClientset(shop(), set)
	run(t, kube, watch.Options{Hold: time.Hour})
	waitPartition(t, kube, 0)
	if _, note := partitionNow(t, kube); note != "" {
		t.Errorf("annotation still %q", note)
	}
}
