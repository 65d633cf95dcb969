package kstatus_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stsdiag/stsdiag/stuck"
	stsdiagkstatus "github.com/stsdiag/stsdiag/stuck/kstatus"
)

// now is the clock of the testdata scenarios.
var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// mapper maps the kinds a StatefulSet's diagnosis reads on plain Kubernetes.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, storagev1.SchemeGroupVersion})
	for _, gvk := range []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"), appsv1.SchemeGroupVersion.WithKind("ControllerRevision"),
		corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		corev1.SchemeGroupVersion.WithKind("Event"), corev1.SchemeGroupVersion.WithKind("Service"),
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	m.Add(storagev1.SchemeGroupVersion.WithKind("StorageClass"), meta.RESTScopeRoot)
	return m
}

// scenario is a testdata scenario's objects in a dynamic fake, read on demand as Helm's watcher
// reads (clusterreader.DynamicClusterReader), and its StatefulSet web as the watcher hands it.
func scenario(t *testing.T, name string) (engine.ClusterReader, *unstructured.Unstructured) {
	t.Helper()
	objs, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", name, "objects.yaml"), now)
	if err != nil {
		t.Fatal(err)
	}
	var all []runtime.Object
	var web *unstructured.Unstructured
	add := func(obj runtime.Object, kind schema.GroupVersionKind) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{Object: u}
		o.SetGroupVersionKind(kind)
		if kind.Kind == "StatefulSet" && o.GetName() == "web" {
			web = o
		}
		all = append(all, o)
	}
	for i := range objs.StatefulSets {
		add(&objs.StatefulSets[i], appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	}
	for i := range objs.Pods {
		add(&objs.Pods[i], corev1.SchemeGroupVersion.WithKind("Pod"))
	}
	for i := range objs.Revisions {
		add(&objs.Revisions[i], appsv1.SchemeGroupVersion.WithKind("ControllerRevision"))
	}
	for i := range objs.Events {
		add(&objs.Events[i], corev1.SchemeGroupVersion.WithKind("Event"))
	}
	for i := range objs.Nodes {
		add(&objs.Nodes[i], corev1.SchemeGroupVersion.WithKind("Node"))
	}
	if web == nil {
		t.Fatalf("%s: no StatefulSet web", name)
	}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, all...)
	return &clusterreader.DynamicClusterReader{DynamicClient: dyn, Mapper: mapper()}, web
}

// reader reads the scenarios at their own moment.
func reader() engine.StatusReader {
	return stsdiagkstatus.NewStatusReader(mapper(), stsdiagkstatus.WithClock(func() time.Time { return now }))
}

func TestStatuses(t *testing.T) {
	cases := []struct {
		scenario string
		want     status.Status
		message  string
	}{
		{"stale-revision-stuck-3-replicas", status.FailedStatus, "StaleRevisionStuck: web-0: ImagePullBackOff on old revision web-a"},
		{"healthy-ordered-ready", status.CurrentStatus, "rollout complete: 3 of 3 pods ready"},
		{"rolling-update-in-progress", status.InProgressStatus, "the controller waits for web-2 to be"},
		{"statefulset-terminating", status.TerminatingStatus, "being deleted"},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			cr, web := scenario(t, c.scenario)
			rs, err := reader().ReadStatusForObject(context.Background(), cr, web)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Status != c.want || !strings.Contains(rs.Message, c.message) || rs.Error != nil {
				t.Errorf("%s %q (error %v), want %s with %q", rs.Status, rs.Message, rs.Error, c.want, c.message)
			}
			if len(rs.GeneratedResources) == 0 || rs.GeneratedResources[0].Identifier.GroupKind.Kind != "Pod" {
				t.Errorf("generated resources %+v, want the pods", rs.GeneratedResources)
			}
		})
	}
}

// TestReadStatusGetsTheObject: by identifier, as a polling waiter asks; a StatefulSet that is
// gone is NotFound.
func TestReadStatusGetsTheObject(t *testing.T) {
	cr, web := scenario(t, "stale-revision-stuck-3-replicas")
	id := object.UnstructuredToObjMetadata(web)
	rs, err := reader().ReadStatus(context.Background(), cr, id)
	if err != nil || rs.Status != status.FailedStatus {
		t.Fatalf("%s %q %v", rs.Status, rs.Message, err)
	}
	id.Name = "gone"
	if rs, err := reader().ReadStatus(context.Background(), cr, id); err != nil || rs.Status != status.NotFoundStatus {
		t.Fatalf("%+v %v", rs, err)
	}
}

// podsOnly is a caching ClusterReader that holds only pods, as cli-utils' polling engine caches
// what its own StatefulSet reader reads: everything else is "not found in cache".
type podsOnly struct{ engine.ClusterReader }

func (p podsOnly) Get(ctx context.Context, key client.ObjectKey, u *unstructured.Unstructured) error {
	return errors.New("GVK " + u.GroupVersionKind().String() + " not found in cache")
}

func (p podsOnly) ListNamespaceScoped(ctx context.Context, l *unstructured.UnstructuredList, ns string, sel labels.Selector) error {
	if l.GroupVersionKind().Kind != "Pod" {
		return errors.New("GVK " + l.GroupVersionKind().String() + " and Namespace " + ns + " not found in cache")
	}
	return p.ClusterReader.ListNamespaceScoped(ctx, l, ns, sel)
}

func (p podsOnly) ListClusterScoped(ctx context.Context, l *unstructured.UnstructuredList, sel labels.Selector) error {
	return errors.New("GVK " + l.GroupVersionKind().String() + " not found in cache")
}

// TestDegradesToWhatIsReadable: with the pods alone the rules still find kubernetes#67250, and
// the message says what could not be read.
func TestDegradesToWhatIsReadable(t *testing.T) {
	cr, web := scenario(t, "stale-revision-stuck-3-replicas")
	rs, err := reader().ReadStatusForObject(context.Background(), podsOnly{cr}, web)
	if err != nil || rs.Status != status.FailedStatus || !strings.Contains(rs.Message, "StaleRevisionStuck: web-0") ||
		!strings.Contains(rs.Message, "revisions not read") || !strings.Contains(rs.Message, "no pod events") {
		t.Fatalf("%s %q %v", rs.Status, rs.Message, err)
	}
}

// noPods cannot read pods.
type noPods struct{ podsOnly }

func (noPods) ListNamespaceScoped(context.Context, *unstructured.UnstructuredList, string, labels.Selector) error {
	return errors.New(`pods is forbidden: User "helm" cannot list resource "pods"`)
}

// TestWithoutPodsNeverFailed: without the pods the rules do not run: kstatus's own status, and
// why.
func TestWithoutPodsNeverFailed(t *testing.T) {
	cr, web := scenario(t, "stale-revision-stuck-3-replicas")
	rs, err := reader().ReadStatusForObject(context.Background(), noPods{podsOnly{cr}}, web)
	if err != nil || rs.Status != status.InProgressStatus || !strings.Contains(rs.Message, `stsdiag's rules did not run: cannot read pods: pods is forbidden`) {
		t.Fatalf("%s %q %v", rs.Status, rs.Message, err)
	}
}

// TestNotAStatefulSet: an object that does not convert is Unknown with the error, never a panic.
func TestNotAStatefulSet(t *testing.T) {
	cr, _ := scenario(t, "healthy-ordered-ready")
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": "not an object"}}
	rs, err := reader().ReadStatusForObject(context.Background(), cr, bad)
	if err != nil || rs.Status != status.UnknownStatus || rs.Error == nil {
		t.Fatalf("%+v %v", rs, err)
	}
}

// TestContextEnds: a cancelled read returns the context's error, as engine.StatusReader asks.
func TestContextEnds(t *testing.T) {
	cr, web := scenario(t, "healthy-ordered-ready")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reader().ReadStatusForObject(ctx, cancelled{cr}, web); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

type cancelled struct{ engine.ClusterReader }

func (c cancelled) ListNamespaceScoped(ctx context.Context, l *unstructured.UnstructuredList, ns string, sel labels.Selector) error {
	return ctx.Err()
}

func TestSupports(t *testing.T) {
	r := reader()
	if !r.Supports(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}) || r.Supports(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Error("supports apps/StatefulSet only")
	}
}

// upgraded is web after an upgrade to an image that does not exist: web-0 Ready on the old
// revision, web-1 just recreated on the new one (created 2 s ago), not yet reported by the
// kubelet.
func upgraded(t *testing.T, created time.Time) (*dynamicfake.FakeDynamicClient, *unstructured.Unstructured) {
	t.Helper()
	two := int32(2)
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27-typo"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1,
			CurrentRevision: "web-a", UpdateRevision: "web-b"}}
	pod := func(name, rev string, at time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(at),
			Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev, appsv1.StatefulSetPodNameLabel: name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "web-uid", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27-typo"}}}}
	}
	ready := pod("web-0", "web-a", created.Add(-time.Hour))
	ready.Spec.Containers[0].Image = "nginx:1.27"
	ready.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(-time.Hour))}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	fresh := pod("web-1", "web-b", created)
	fresh.Status.Phase = corev1.PodPending
	var objs []runtime.Object
	var web *unstructured.Unstructured
	for _, o := range []runtime.Object{set, ready, fresh} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		gvk := corev1.SchemeGroupVersion.WithKind("Pod")
		if o == set {
			gvk = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
			web = obj
		}
		obj.SetGroupVersionKind(gvk)
		objs = append(objs, obj)
	}
	return dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objs...), web
}

// TestWaitsForTheKubeletsReport: the pod the controller waits on was just created and the
// kubelet has not reported it: the reader reads it again (the StatefulSet will not change when it
// is reported) and says Failed once the pull fails, naming the pod.
func TestWaitsForTheKubeletsReport(t *testing.T) {
	dyn, web := upgraded(t, time.Now().Add(-2*time.Second))
	go func() {
		time.Sleep(1500 * time.Millisecond)
		pods := dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("shop")
		p, err := pods.Get(context.Background(), "web-1", metav1.GetOptions{})
		if err != nil {
			panic(err)
		}
		_ = unstructured.SetNestedSlice(p.Object, []any{map[string]any{"name": "web", "ready": false, "restartCount": int64(0), "image": "nginx:1.27-typo", "imageID": "",
			"state": map[string]any{"waiting": map[string]any{"reason": "ErrImagePull", "message": "not found"}}}}, "status", "containerStatuses")
		if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			panic(err)
		}
	}()
	r := stsdiagkstatus.NewStatusReader(mapper())
	start := time.Now()
	rs, err := r.ReadStatusForObject(context.Background(), &clusterreader.DynamicClusterReader{DynamicClient: dyn, Mapper: mapper()}, web)
	if err != nil || rs.Status != status.FailedStatus || !strings.Contains(rs.Message, "CurrentRevisionFailing: web-1") {
		t.Fatalf("%s %q %v", rs.Status, rs.Message, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

// TestReportWindowEnds: a pod unreported for the whole window is InProgress, naming it.
func TestReportWindowEnds(t *testing.T) {
	dyn, web := upgraded(t, time.Now().Add(-13*time.Second))
	r := stsdiagkstatus.NewStatusReader(mapper())
	start := time.Now()
	rs, err := r.ReadStatusForObject(context.Background(), &clusterreader.DynamicClusterReader{DynamicClient: dyn, Mapper: mapper()}, web)
	took := time.Since(start)
	if err != nil || rs.Status != status.InProgressStatus || !strings.Contains(rs.Message, "the controller waits for web-1 to be Running (Pending)") {
		t.Fatalf("%s %q %v", rs.Status, rs.Message, err)
	}
	if took < time.Second || took > 5*time.Second {
		t.Errorf("read for %s: want until 15 s after web-1's creation (2 s)", took)
	}
}
