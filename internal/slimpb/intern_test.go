package slimpb

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEachInternsStrings: the items of an Each share one copy of each string they hold equal
// (fields, slices, pointers, maps of strings), of equal owner references and of a pod's equal
// containers, and are otherwise what the list decodes.
func TestEachInternsStrings(t *testing.T) {
	pod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "db", appsv1.StatefulSetPodNameLabel: name},
			Annotations:     map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "0b5e4a7c-3f0d-4a39-9d0e-2e1f6c1b9a78"}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/team/app:1.4.2"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ImageID: "registry.example.com/team/app@sha256:0123456789abcdef",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}
	}
	list := &corev1.PodList{Items: []corev1.Pod{pod("db-0"), pod("db-1"), pod("db-2")}}
	list.Items[2].Spec.Containers[0].Image = "registry.example.com/team/app:2.0"
	data, err := Encode(list, corev1.SchemeGroupVersion.WithKind("PodList"))
	if err != nil {
		t.Fatal(err)
	}
	var want corev1.PodList
	if err := DecodeStream(bytes.NewReader(data), &want); err != nil {
		t.Fatal(err)
	}
	each := &Each{List: &corev1.PodList{}}
	if err := DecodeStream(bytes.NewReader(data), each); err != nil {
		t.Fatal(err)
	}
	var got []corev1.Pod
	for _, item := range each.Items {
		got = append(got, *item.(*corev1.Pod))
	}
	if d := cmp.Diff(want.Items, got); d != "" {
		t.Fatalf("Each differs from the list (-want +got):\n%s", d)
	}
	// (An empty map is not on the wire.) The interner keeps an empty map and nil apart.
	empty, none := &metav1.ObjectMeta{Labels: map[string]string{}}, &metav1.ObjectMeta{}
	newInterner().object(empty)
	newInterner().object(none)
	if empty.Labels == nil || none.Labels != nil {
		t.Errorf("labels %#v, %#v: an empty map and nil are not kept apart", empty.Labels, none.Labels)
	}
	same := func(what string, a, b string) {
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s %q: two copies", what, a)
		}
	}
	a, b := got[0], got[1]
	same("namespace", a.Namespace, b.Namespace)
	same("owner UID", string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID))
	same("image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image)
	same("image ID", a.Status.ContainerStatuses[0].ImageID, b.Status.ContainerStatuses[0].ImageID)
	same("waiting reason", a.Status.ContainerStatuses[0].State.Waiting.Reason, b.Status.ContainerStatuses[0].State.Waiting.Reason)
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("equal containers or owner references: two copies")
	}
	if cap(a.Spec.Containers) != len(a.Spec.Containers) || cap(a.OwnerReferences) != len(a.OwnerReferences) {
		t.Error("shared slices not capped: an append would write into another object's")
	}
	if other := got[2]; &other.Spec.Containers[0] == &a.Spec.Containers[0] || other.Spec.Containers[0].Image != "registry.example.com/team/app:2.0" {
		t.Errorf("other containers shared: %+v", other.Spec.Containers)
	}
	for k, v := range a.Labels {
		for k2, v2 := range b.Labels {
			if k == k2 {
				same("label key", k, k2)
				if v == v2 {
					same("label value", v, v2)
				}
			}
		}
	}
}
