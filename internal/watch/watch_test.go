package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/watch"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// stuckObjects: web-0 on the old revision in ImagePullBackOff under OrderedReady (kubernetes#67250).
func stuckObjects() []runtime.Object {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, CurrentRevision: "web-a", UpdateRevision: "web-b"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "pod-uid", ResourceVersion: "3",
			Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app:typo"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}},
	}
	return []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set, pod}
}

func run(t *testing.T, kube *fake.Clientset, opts watch.Options) (*watch.Metrics, context.CancelFunc) {
	t.Helper()
	metrics := watch.NewMetrics()
	ctrl := watch.New(gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}, opts, metrics)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = ctrl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return metrics, cancel
}

func deletes(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			n++
		}
		if a.GetVerb() == "delete" && a.GetResource().Resource != "pods" {
			panic("deleted " + a.GetResource().Resource)
		}
	}
	return n
}

func TestReportOnlyNeverRepairs(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	metrics, _ := run(t, kube, watch.Options{Hold: 0})
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")) == 1, nil
	})
	if err != nil {
		t.Fatal("the finding was never counted")
	}
	time.Sleep(200 * time.Millisecond)
	if n := deletes(kube); n != 0 {
		t.Fatalf("report mode deleted %d pods", n)
	}
}

func TestFixRepairsOnceAfterMinStuck(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	start := time.Now()
	metrics, _ := run(t, kube, watch.Options{Fix: true, Hold: 300 * time.Millisecond})
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return deletes(kube) == 1, nil
	})
	if err != nil {
		t.Fatal("never repaired")
	}
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
		t.Errorf("repaired after %s, before --min-stuck", elapsed)
	}
	time.Sleep(300 * time.Millisecond)
	if n := deletes(kube); n != 1 {
		t.Errorf("%d deletes, want exactly 1", n)
	}
	if got := testutil.ToFloat64(metrics.Repairs.WithLabelValues("DeletePod", "done", "shop")); got != 1 {
		t.Errorf("stsdiag_repairs_total = %v", got)
	}
	events, _ := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	reasons := map[string]int{}
	for _, e := range events.Items {
		reasons[e.Reason+"/"+e.Type]++
	}
	if reasons["StaleRevisionStuck/Warning"] == 0 || reasons["StaleRevisionStuck/Normal"] == 0 {
		t.Errorf("events %v: want the finding and the repair, reason StaleRevisionStuck", reasons)
	}
}

func TestRepairBudgetPerNamespace(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	// Every delete "fails" as if the pod were replaced meanwhile, so the finding stays.
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	metrics, _ := run(t, kube, watch.Options{Fix: true, MaxRepairsPerHour: 1})
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.Repairs.WithLabelValues("DeletePod", "ratelimited", "shop")) >= 1, nil
	})
	if err != nil {
		t.Fatalf("the second repair was not held back: %d deletes", deletes(kube))
	}
	if n := deletes(kube); n != 1 {
		t.Errorf("%d deletes with a budget of 1 per hour", n)
	}
}

// TestSelectorScopesWatch: watch -l diagnoses only the StatefulSets the selector matches; the
// stuck set outside it is neither counted nor repaired.
func TestSelectorScopesWatch(t *testing.T) {
	for _, c := range []struct {
		selector string
		want     float64
	}{{"app=web", 1}, {"app=db", 0}} {
		t.Run(c.selector, func(t *testing.T) {
			sel, err := labels.Parse(c.selector)
			if err != nil {
				t.Fatal(err)
			}
			// stuckObjects' StatefulSet carries no labels of its own: give it app=web.
			objs := stuckObjects()
			objs[1].(*appsv1.StatefulSet).Labels = map[string]string{"app": "web"}
			kube := fake.NewClientset(objs...)
			metrics := watch.NewMetrics()
			ctrl := watch.New(gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", Selector: sel, OpenShift: openshift.ModeNever},
				watch.Options{Hold: 0, Fix: true, MaxRepairsPerHour: 10}, metrics)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = ctrl.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
				return testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")) == c.want && c.want > 0, nil
			})
			if got := testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")); got != c.want {
				t.Errorf("findings counted %v, want %v", got, c.want)
			}
			if c.want == 0 && deletes(kube) != 0 {
				t.Error("a StatefulSet outside -l was repaired")
			}
		})
	}
}

// TestOnePodPerPass: watch --fix removes one pod of a StatefulSet per pass and the next only
// once the removed pod is back (another UID) and Ready.
func TestOnePodPerPass(t *testing.T) {
	objs := stuckObjects()
	set := objs[1].(*appsv1.StatefulSet)
	set.Spec.Replicas = ptr.To[int32](2)
	second := objs[2].(*corev1.Pod).DeepCopy()
	second.Name, second.UID = "web-1", "pod-uid-1"
	kube := fake.NewClientset(append(objs, second)...)
	// Deletes are recorded, not carried out: the pod stays as it was.
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	run(t, kube, watch.Options{Fix: true, Hold: 50 * time.Millisecond})
	deleted := func() []string {
		var out []string
		for _, a := range kube.Actions() {
			if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
				out = append(out, d.GetName())
			}
		}
		return out
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(deleted()) >= 1, nil
	})
	if err != nil {
		t.Fatal("never repaired")
	}
	time.Sleep(time.Second)
	if got := deleted(); len(got) != 1 {
		t.Fatalf("deleted %v before the first pod came back Ready, want one pod", got)
	}
	first := deleted()[0]
	// The controller recreates the removed pod on the update revision and it becomes Ready.
	back := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: first, Namespace: "shop", UID: "new-uid",
			Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app:good"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if err := kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "shop", first); err != nil {
		t.Fatal(err)
	}
	if err := kube.Tracker().Add(back); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(deleted()) >= 2, nil
	})
	if err != nil {
		t.Fatalf("deleted %v: the other pod was not repaired once the first was back and Ready", deleted())
	}
	if got := deleted(); got[1] == first {
		t.Errorf("deleted %v: the second repair removed the same pod", got)
	}
}

// Start-up: stsdiag_startup_seconds{phase="synced"} once the caches synced, then
// {phase="diagnosed"} only once every StatefulSet found then was diagnosed (its finding counted).
// Events go through Options.Events when set, not through the informers' client.
func TestStartupSecondsAndEventsClient(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	events := fake.NewClientset()
	metrics, _ := run(t, kube, watch.Options{Events: events.CoreV1()})
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.Startup.WithLabelValues("diagnosed")) > 0, nil
	})
	if err != nil {
		t.Fatal("stsdiag_startup_seconds{phase=diagnosed} never set")
	}
	if got := testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")); got != 1 {
		t.Fatalf("diagnosed set with %v findings counted; want 1", got)
	}
	synced, diagnosed := testutil.ToFloat64(metrics.Startup.WithLabelValues("synced")), testutil.ToFloat64(metrics.Startup.WithLabelValues("diagnosed"))
	if synced <= 0 || diagnosed < synced {
		t.Fatalf("synced %vs, diagnosed %vs; want 0 < synced ≤ diagnosed", synced, diagnosed)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		list, err := events.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Reason == "StaleRevisionStuck", nil
	})
	if err != nil {
		t.Fatal("no StaleRevisionStuck Event through Options.Events")
	}
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "events" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Fatalf("the informers' client was used to %s an Event", a.GetVerb())
		}
	}
}

// TestFixProvesOnTheCaches: watch --fix proves the delete on its informers' caches (no write
// precedes it in the repair), so the repair sends no LIST: no pod is listed between the finding
// (the caches synced) and the delete.
func TestFixProvesOnTheCaches(t *testing.T) {
	kube := fake.NewClientset(stuckObjects()...)
	metrics, _ := run(t, kube, watch.Options{Fix: true, Hold: 300 * time.Millisecond})
	podLists := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
				n++
			}
		}
		return n
	}
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(metrics.FindingsTotal.WithLabelValues("StaleRevisionStuck", "shop")) == 1, nil
	})
	if err != nil {
		t.Fatal("the finding was never counted")
	}
	synced := podLists()
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return deletes(kube) == 1, nil
	})
	if err != nil {
		t.Fatal("never repaired")
	}
	if n := podLists() - synced; n != 0 {
		t.Errorf("%d LISTs of pods for the repair, want none: the proof reads the caches", n)
	}
}
