package slimpb_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// full is client-go's protobuf decoder, which slimpb replaces.
var full = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// marshaler is an API object with its generated protobuf Marshal.
type marshaler interface {
	runtime.Object
	Marshal() ([]byte, error)
}

// scenarioObjects are the objects of every testdata scenario, with their kinds.
func scenarioObjects(t *testing.T) []marshaler {
	t.Helper()
	var files []string
	for _, glob := range []string{"../../testdata/*/*/objects.yaml", "../snapshot/snapshottest/testdata/*/objects.yaml"} {
		f, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	if len(files) < 80 {
		t.Fatalf("found %d scenarios, want the testdata's (≥ 80)", len(files))
	}
	var out []marshaler
	for _, f := range files {
		s, err := stuck.LoadFile(f, snapshottest.Now)
		if err != nil {
			t.Fatal(err)
		}
		fields := reflect.ValueOf(s).Elem()
		for i := 0; i < fields.NumField(); i++ {
			if f := fields.Field(i); f.Kind() == reflect.Slice {
				for j := 0; j < f.Len(); j++ {
					if m, ok := f.Index(j).Addr().Interface().(marshaler); ok {
						out = append(out, m)
					}
				}
			}
		}
	}
	return out
}

// rich are objects with what Slim drops and what it keeps, every kind of field.
func rich() []marshaler {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	meta := func(name string, annotations map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "u-" + "name", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.Unix(1700000000, 0), DeletionTimestamp: ptr.To(metav1.Unix(1700000100, 0)),
			DeletionGracePeriodSeconds: ptr.To[int64](30), Labels: map[string]string{"app": "db", "x": ""},
			Annotations: annotations, Finalizers: []string{"f"}, ManagedFields: managed,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "s1", Controller: ptr.To(true)}}}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 3}
	container := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "app:1", Command: []string{"run"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
			Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			ReadinessProbe: probe, LivenessProbe: probe, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}}}
	}
	sidecar := container("proxy")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	status := corev1.ContainerStatus{Name: "app", Image: "app:1", ImageID: "sha", RestartCount: 4, Ready: false, Started: ptr.To(false),
		ContainerID: "containerd://c1", AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Resources:    &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		VolumeMounts: []corev1.VolumeMountStatus{{Name: "data", MountPath: "/d"}}, User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 1000}},
		AllocatedResourcesStatus: []corev1.ResourceStatus{{Name: "r"}}, StopSignal: ptr.To(corev1.SIGTERM),
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boom", FinishedAt: metav1.Unix(1700000050, 0)}}}
	pod := &corev1.Pod{ObjectMeta: meta("db-0", map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"}),
		Spec: corev1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: ptr.To[int64](10), ServiceAccountName: "sa",
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0", ReadOnly: true}}}},
			InitContainers: []corev1.Container{container("init"), sidecar}, Containers: []corev1.Container{container("app"), container("b")},
			Tolerations: []corev1.Toleration{{Key: "k"}}, NodeSelector: map[string]string{"a": "b"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Message: "m", Reason: "r", HostIP: "10.0.0.1", PodIP: "10.1.0.1", QOSClass: corev1.PodQOSBurstable,
			StartTime:         ptr.To(metav1.Unix(1700000001, 0)),
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Unix(1700000002, 0), Reason: "ContainersNotReady"}},
			ContainerStatuses: []corev1.ContainerStatus{status}, InitContainerStatuses: []corev1.ContainerStatus{status, status}}}
	onlyApplied := &corev1.Pod{ObjectMeta: meta("db-1", map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"})}
	emptyApplied := &corev1.Pod{ObjectMeta: meta("db-2", map[string]string{"kubectl.kubernetes.io/last-applied-configuration": ""})}
	node := &corev1.Node{ObjectMeta: meta("n1", nil), Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"app:1"}, SizeBytes: 5}}, Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}}}
	set := &appsv1.StatefulSet{ObjectMeta: meta("db", map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}),
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "db", Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container("app")}}}},
		Status: appsv1.StatefulSetStatus{Replicas: 3, CurrentRevision: "db-a", UpdateRevision: "db-b"}}
	rev := &appsv1.ControllerRevision{ObjectMeta: meta("db-a", nil), Revision: 2, Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}}
	event := &corev1.Event{ObjectMeta: meta("db-0.1", nil), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "db-0"}, Reason: "BackOff", Message: "m", Count: 3, Type: "Warning"}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: meta("data-db-0", nil),
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
			VolumeName: "pv-1", Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			Conditions: []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}}}}
	return []marshaler{pod, onlyApplied, emptyApplied, node, set, rev, event, claim,
		&corev1.Service{ObjectMeta: meta("db", nil), Spec: corev1.ServiceSpec{ClusterIP: "None"}}, &corev1.Namespace{ObjectMeta: meta("shop", nil)},
		&corev1.Service{ObjectMeta: meta("web", map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}),
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Type: corev1.ServiceTypeLoadBalancer,
				Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080}},
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack), SessionAffinity: corev1.ServiceAffinityNone,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 31000, InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster)},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}}}}}
}

// TestSlimDecodeIsSlim: decoding the API server's protobuf of every testdata object (and of rich
// objects holding what Slim drops) gives exactly what Slim makes of client-go's full decode, one
// object at a time and as lists.
func TestSlimDecodeIsSlim(t *testing.T) {
	objs := append(scenarioObjects(t), rich()...)
	lists := map[schema.GroupVersionKind]reflect.Value{}
	decoded := 0
	for _, obj := range objs {
		gvk, ok := kindOf(obj)
		if !ok {
			continue
		}
		data, err := slimpb.Encode(obj, gvk)
		if err != nil {
			t.Fatal(err)
		}
		want := fullSlim(t, data)
		got, gotKind, ok, err := slimpb.Decode(data, nil)
		if !ok || err != nil || *gotKind != gvk {
			t.Fatalf("%s: Decode: ok %v, %v, kind %v", gvk.Kind, ok, err, gotKind)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s %s: slim decode differs from Slim(full decode) (-want +got):\n%s", gvk.Kind, name(obj), d)
		}
		decoded++
		listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		l, ok := lists[listKind]
		if !ok {
			o, err := scheme.Scheme.New(listKind)
			if err != nil {
				t.Fatal(err)
			}
			l = reflect.ValueOf(o)
			lists[listKind] = l
		}
		items := l.Elem().FieldByName("Items")
		items.Set(reflect.Append(items, reflect.ValueOf(obj).Elem()))
	}
	if decoded < 400 {
		t.Fatalf("decoded %d objects, want the testdata's (≥ 400)", decoded)
	}
	for gvk, l := range lists {
		data, err := slimpb.Encode(l.Interface().(marshaler), gvk)
		if err != nil {
			t.Fatal(err)
		}
		want := fullSlim(t, data)
		into, _ := scheme.Scheme.New(gvk)
		got, _, ok, err := slimpb.Decode(data, into)
		if !ok || err != nil || got != into {
			t.Fatalf("%s: ok %v, %v, decoded into the given object: %v", gvk.Kind, ok, err, got == into)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: slim decode differs from Slim(full decode) (-want +got):\n%s", gvk.Kind, d)
		}
		// Streamed, as check's LISTs read it, in the worst pieces.
		streamed, _ := scheme.Scheme.New(gvk)
		if err := slimpb.DecodeStream(iotest.OneByteReader(bytes.NewReader(data)), streamed); err != nil {
			t.Fatalf("%s: DecodeStream: %v", gvk.Kind, err)
		}
		if d := cmp.Diff(want, streamed); d != "" {
			t.Errorf("%s: streamed slim decode differs from Slim(full decode) (-want +got):\n%s", gvk.Kind, d)
		}
		// Each item in an allocation of its own, as watch's informers read the paged kinds: the
		// same objects, and the list's metadata with no items.
		list, _ := scheme.Scheme.New(gvk)
		each := &slimpb.Each{List: list}
		if err := slimpb.DecodeStream(iotest.OneByteReader(bytes.NewReader(data)), each); err != nil {
			t.Fatalf("%s: DecodeStream into Each: %v", gvk.Kind, err)
		}
		if d := cmp.Diff(want, eachAsList(t, each)); d != "" {
			t.Errorf("%s: streamed slim decode item by item differs from Slim(full decode) (-want +got):\n%s", gvk.Kind, d)
		}
	}
	for _, k := range []string{"PodList", "NodeList", "StatefulSetList", "ControllerRevisionList", "PersistentVolumeClaimList", "EventList", "ServiceList", "NamespaceList"} {
		if _, ok := lists[schema.GroupVersionKind{Group: groupOf(k), Version: "v1", Kind: k}]; !ok {
			t.Errorf("no %s tested", k)
		}
	}
}

func groupOf(list string) string {
	if list == "StatefulSetList" || list == "ControllerRevisionList" {
		return "apps"
	}
	return ""
}

func kindOf(obj runtime.Object) (schema.GroupVersionKind, bool) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, false
	}
	probe, err := slimpb.Encode(obj.(marshaler), gvks[0])
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	_, _, ok, _ := slimpb.Decode(probe, nil)
	return gvks[0], ok
}

func name(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return ""
}

// fullSlim decodes data with client-go's protobuf decoder, then slims it (item by item for a list).
func fullSlim(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	obj, _, err := full.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if items := reflect.ValueOf(obj).Elem().FieldByName("Items"); items.IsValid() {
		for i := 0; i < items.Len(); i++ {
			_, _ = snapshot.Slim(items.Index(i).Addr().Interface())
		}
		return obj
	}
	_, _ = snapshot.Slim(obj)
	return obj
}

// TestNotDecoded: kinds slimpb does not know, and bodies other than plain protobuf, are left to
// the usual decoder.
func TestNotDecoded(t *testing.T) {
	cm, err := slimpb.Encode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err != nil {
		t.Fatal(err)
	}
	pod, err := slimpb.Encode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		data []byte
		into runtime.Object
	}{
		"an unknown kind":         {cm, nil},
		"JSON":                    {[]byte(`{"kind":"Pod","apiVersion":"v1"}`), nil},
		"a pod into another type": {pod, &corev1.Node{}},
		"a pod into metadata":     {pod, &metav1.PartialObjectMetadata{}},
	} {
		if _, _, ok, err := slimpb.Decode(tc.data, tc.into); ok || err != nil {
			t.Errorf("%s: decoded (%v, %v)", name, ok, err)
		}
	}
	// Through the Serializer, they are decoded as usual.
	obj, _, err := slimpb.Serializer{Serializer: full}.Decode(cm, nil, nil)
	if c, ok := obj.(*corev1.ConfigMap); err != nil || !ok || c.Name != "c" {
		t.Errorf("ConfigMap through Serializer: %v, %v", obj, err)
	}
}

// TestDecodeStreamJSON: a LIST answered in JSON is decoded whole, as usual; into an Each, item
// by item from it.
func TestDecodeStreamJSON(t *testing.T) {
	var list corev1.PodList
	body := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"db-0"}},{"metadata":{"name":"db-1"}}]}`
	if err := slimpb.DecodeStream(strings.NewReader(body), &list); err != nil || len(list.Items) != 2 || list.Items[0].Name != "db-0" {
		t.Errorf("got %+v, %v", list, err)
	}
	each := &slimpb.Each{List: &corev1.PodList{}}
	if err := slimpb.DecodeStream(strings.NewReader(body), each); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&list, eachAsList(t, each)); d != "" {
		t.Errorf("JSON into Each (-want +got):\n%s", d)
	}
	if err := slimpb.DecodeStream(strings.NewReader(body), &corev1.ConfigMapList{}); err == nil {
		t.Error("a list type slimpb does not know: no error")
	}
}

// TestMalformed: every truncation and many single-byte changes of valid bodies decode to an
// object or an error, never a panic (FuzzDecode explores further).
func TestMalformed(t *testing.T) {
	for _, seed := range seeds(t) {
		for i := 0; i < len(seed); i++ {
			_, _, _, _ = slimpb.Decode(seed[:i], nil)
			// (The envelope's last 4 bytes are its empty contentEncoding and contentType.)
			if err := slimpb.DecodeStream(bytes.NewReader(seed[:i]), &corev1.PodList{}); err == nil && i < len(seed)-4 {
				t.Errorf("a body cut at %d of %d bytes streamed without an error", i, len(seed))
			}
			for _, b := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, seed[i] ^ 0x08} {
				mutated := bytes.Clone(seed)
				mutated[i] = b
				_, _, _, _ = slimpb.Decode(mutated, nil)
				_ = slimpb.DecodeStream(bytes.NewReader(mutated), &corev1.PodList{})
			}
		}
	}
}

func seeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, obj := range rich() {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		data, err := slimpb.Encode(obj, gvks[0])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	list := &corev1.PodList{Items: []corev1.Pod{*rich()[0].(*corev1.Pod), *rich()[1].(*corev1.Pod)}}
	data, err := slimpb.Encode(list, corev1.SchemeGroupVersion.WithKind("PodList"))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, data)
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _, _ = slimpb.Decode(data, nil)
		_, _, _, _ = slimpb.Decode(data, &corev1.PodList{})
		_ = slimpb.DecodeStream(bytes.NewReader(data), &corev1.PodList{})
	})
}

// TestDecodeStreamManyItems: long lists stream whole and in order; the items' slice is sized
// from the list's bytes: for objects of one size, once and about right (not 1.25× at a time).
func TestDecodeStreamManyItems(t *testing.T) {
	for name, labelSize := range map[string]func(i int) int{
		"one size":      func(int) int { return 10 },
		"growing sizes": func(i int) int { return i / 30 },
	} {
		list := &corev1.PodList{}
		for i := 0; i < 9000; i++ {
			list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i),
				Labels: map[string]string{"app": strings.Repeat("x", labelSize(i))}}})
		}
		data, err := slimpb.Encode(list, corev1.SchemeGroupVersion.WithKind("PodList"))
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.PodList
		if err := slimpb.DecodeStream(bytes.NewReader(data), &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(list, &got); d != "" {
			t.Errorf("%s: (-want +got):\n%s", name, d)
		}
		if name == "one size" && cap(got.Items) > len(got.Items)*12/10 {
			t.Errorf("%s: %d items in a slice of capacity %d", name, len(got.Items), cap(got.Items))
		}
	}
}

// eachAsList is an Each's list with its items put back in its Items, after checking that the
// list holds no items of its own and each item is a pointer of its own.
func eachAsList(t *testing.T, e *slimpb.Each) runtime.Object {
	t.Helper()
	items := reflect.ValueOf(e.List).Elem().FieldByName("Items")
	if items.Len() != 0 {
		t.Errorf("%T: the list holds %d items", e.List, items.Len())
	}
	seen := map[runtime.Object]bool{}
	for _, item := range e.Items {
		if seen[item] {
			t.Errorf("%T: an item twice", e.List)
		}
		seen[item] = true
		items.Set(reflect.Append(items, reflect.ValueOf(item).Elem()))
	}
	if len(e.Items) == 0 {
		items.Set(reflect.Zero(items.Type()))
	}
	if m := e.GetListMeta(); m == nil || m.GetResourceVersion() != e.List.(metav1.ListMetaAccessor).GetListMeta().GetResourceVersion() {
		t.Errorf("%T: Each's list metadata is not its list's", e.List)
	}
	return e.List
}
