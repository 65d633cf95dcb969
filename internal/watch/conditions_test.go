package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/stsdiag/stsdiag/internal/watch"
)

// kstatusOf runs cli-utils' kstatus status.Compute on a StatefulSet, as Flux, Helm 4 and kpt do.
func kstatusOf(t *testing.T, set *appsv1.StatefulSet) *status.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(set)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apps/v1")
	u.SetKind("StatefulSet")
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func stalledOf(set *appsv1.StatefulSet) *appsv1.StatefulSetCondition {
	return conditionOf(set, watch.ConditionStalled)
}

// conditionOf is the StatefulSet's condition of that type, nil when it has none.
func conditionOf(set *appsv1.StatefulSet, typ appsv1.StatefulSetConditionType) *appsv1.StatefulSetCondition {
	for i := range set.Status.Conditions {
		if set.Status.Conditions[i].Type == typ {
			return &set.Status.Conditions[i]
		}
	}
	return nil
}

// waitStalled polls the StatefulSet until cond accepts its Stalled condition.
func waitStalled(t *testing.T, kube *fake.Clientset, what string, cond func(*appsv1.StatefulSetCondition) bool) *appsv1.StatefulSet {
	t.Helper()
	var set *appsv1.StatefulSet
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		set, err = kube.AppsV1().StatefulSets("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && cond(stalledOf(set)), nil
	})
	if err != nil {
		t.Fatalf("%s: conditions %+v", what, set.Status.Conditions)
	}
	return set
}

func statusPatches(kube *fake.Clientset) []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "statefulsets" {
			out = append(out, p)
		}
	}
	return out
}

// TestStalledCondition: Stalled=True with the finding's code once it held for --min-stuck, written
// again after a controller's status update drops it (≤ v1.36), False once the set recovers; kstatus
// computes Failed, then Current.
func TestStalledCondition(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	start := time.Now()
	run(t, kube, watch.Options{Hold: 300 * time.Millisecond})

	set := waitStalled(t, kube, "Stalled=True", func(c *appsv1.StatefulSetCondition) bool { return c != nil && c.Status == corev1.ConditionTrue })
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
		t.Errorf("Stalled=True after %s, before --min-stuck", elapsed)
	}
	c := stalledOf(set)
	if c.Reason != "StaleRevisionStuck" || c.Message != "web-0: ImagePullBackOff on old revision web-a; never replaced. Remedy: kubectl delete pod web-0 -n shop" {
		t.Errorf("condition %+v", c)
	}
	if res := kstatusOf(t, set); res.Status != status.FailedStatus || res.Message != c.Message {
		t.Errorf("kstatus while stuck: %s %q, want Failed", res.Status, res.Message)
	}
	patches := statusPatches(kube)
	if len(patches) != 1 || patches[0].GetSubresource() != "status" || patches[0].GetPatchType() != types.StrategicMergePatchType {
		t.Fatalf("want one strategic merge patch of statefulsets/status, got %d: %+v", len(patches), patches)
	}
	if got := string(patches[0].GetPatch()); got != `{"status":{"conditions":[{"type":"Stalled","status":"True","lastTransitionTime":"`+c.LastTransitionTime.UTC().Format(time.RFC3339)+`","reason":"StaleRevisionStuck","message":"`+c.Message+`"}]}}` {
		t.Errorf("the patch touches more than the condition: %s", got)
	}

	// A v1.35 controller's status update: the status rebuilt from scratch, the condition gone.
	set.Status.Conditions = nil
	if _, err := kube.AppsV1().StatefulSets("shop").UpdateStatus(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStalled(t, kube, "Stalled=True again", func(c *appsv1.StatefulSetCondition) bool { return c != nil && c.Status == corev1.ConditionTrue })
	if n := len(statusPatches(kube)); n != 2 {
		t.Errorf("%d status patches, want 2 (the first and the re-assertion)", n)
	}

	// The rollout recovers: web-0 replaced on the update revision and Ready.
	pod, _ := kube.CoreV1().Pods("shop").Get(context.Background(), "web-0", metav1.GetOptions{})
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = "web-b"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if _, err := kube.CoreV1().Pods("shop").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	set, _ = kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	set.Status.Replicas, set.Status.ReadyReplicas, set.Status.AvailableReplicas, set.Status.CurrentReplicas, set.Status.UpdatedReplicas = 1, 1, 1, 1, 1
	set.Status.CurrentRevision = "web-b"
	if _, err := kube.AppsV1().StatefulSets("shop").UpdateStatus(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	set = waitStalled(t, kube, "Stalled=False", func(c *appsv1.StatefulSetCondition) bool { return c != nil && c.Status == corev1.ConditionFalse })
	if c := stalledOf(set); c.Reason != watch.ReasonRecovered {
		t.Errorf("condition %+v", c)
	}
	if res := kstatusOf(t, set); res.Status != status.CurrentStatus {
		t.Errorf("kstatus after recovery: %s %q, want Current", res.Status, res.Message)
	}
}

// TestNoConditions: --no-conditions never writes status; neither does a healthy set, ever.
func TestNoConditions(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	metrics, _ := run(t, kube, watch.Options{NoConditions: true})
	waitCounted(t, metrics)
	time.Sleep(200 * time.Millisecond)
	if p := statusPatches(kube); len(p) != 0 {
		t.Errorf("--no-conditions patched: %+v", p)
	}

	objects := stuckObjects()
	pod := objects[2].(*corev1.Pod)
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = "web-b"
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	set := objects[1].(*appsv1.StatefulSet)
	set.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1,
		UpdatedReplicas: 1, CurrentRevision: "web-b", UpdateRevision: "web-b"}
	healthy := fake.NewClientset(objects...)
	run(t, healthy, watch.Options{})
	time.Sleep(500 * time.Millisecond)
	if p := statusPatches(healthy); len(p) != 0 {
		t.Errorf("a healthy set was patched: %+v", p)
	}
}

// TestConditionsForbidden: without patch statefulsets/status the condition is turned off once,
// and the rest of the monitor goes on.
func TestConditionsForbidden(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	kube.PrependReactor("patch", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets/status"}, "web", nil)
	})
	metrics, _ := run(t, kube, watch.Options{})
	waitCounted(t, metrics)
	time.Sleep(300 * time.Millisecond)
	if p := statusPatches(kube); len(p) != 1 {
		t.Errorf("%d patch attempts after a Forbidden, want 1", len(p))
	}
}

func waitCounted(t *testing.T, metrics *watch.Metrics) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")) == 1, nil
	})
	if err != nil {
		t.Fatal("the finding was never counted")
	}
}
