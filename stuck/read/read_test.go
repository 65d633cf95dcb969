package read_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

func objects(n int) []runtime.Object {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("set-%d", i)
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"tier": fmt.Sprint(i % 2)}}})
		for j := 0; j < 3; j++ {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: "shop"}})
		}
	}
	return objs
}

// verbs counts the requests by verb/resource.
func verbs(actions []k8stesting.Action) map[string]int {
	out := map[string]int{}
	for _, a := range actions {
		out[a.GetVerb()+"/"+a.GetResource().Resource]++
	}
	return out
}

func TestListListsOncePerResource(t *testing.T) {
	for _, n := range []int{1, 50} {
		kube := fake.NewClientset(objects(n)...)
		s, warnings, err := objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}})
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 0 || len(s.StatefulSets) != n || len(s.Pods) != 3*n || s.OpenShift {
			t.Fatalf("n=%d: %d sets %d pods warnings %v", n, len(s.StatefulSets), len(s.Pods), warnings)
		}
		got := verbs(kube.Actions())
		want := map[string]int{"get/namespaces": 1, "list/statefulsets": 1, "list/pods": 1, "list/controllerrevisions": 1,
			"list/persistentvolumeclaims": 1, "list/events": 1, "list/storageclasses": 1, "list/nodes": 1, "list/services": 1, "get/version": 1}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("n=%d: requests %v, want %v", n, got, want)
		}
	}
}

func TestListScope(t *testing.T) {
	kube := fake.NewClientset(objects(4)...)
	sel, _ := labels.Parse("tier=1")
	s, _, err := objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop", Selector: sel, OpenShift: openshift.ModeNever}})
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	for k := range s.Selected {
		selected = append(selected, k.String())
	}
	sort.Strings(selected)
	if fmt.Sprint(selected) != "[shop/set-1 shop/set-3]" || len(s.StatefulSets) != 4 {
		t.Errorf("selected %v of %d", selected, len(s.StatefulSets))
	}

	_, _, err = objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop", Names: []string{"set-0", "nope"}, OpenShift: openshift.ModeNever}})
	var nf *read.NotFoundError
	if !errors.As(err, &nf) || err.Error() != `statefulset "nope" in namespace "shop" not found` {
		t.Errorf("unknown name: %v", err)
	}
	_, _, err = objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "gone", OpenShift: openshift.ModeNever}})
	if !errors.As(err, &nf) {
		t.Errorf("missing namespace: %v", err)
	}
}

func TestListForbidden(t *testing.T) {
	kube := fake.NewClientset(objects(1)...)
	kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	_, _, err := objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want forbidden, got %v", err)
	}
}

func TestListImageStreams(t *testing.T) {
	kube := fake.NewClientset(objects(1)...)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "image.openshift.io/v1", APIResources: []metav1.APIResource{{Name: "imagestreams", Namespaced: true, Kind: "ImageStream"}}},
	}
	image := imagefake.NewClientset(&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "myapp", Namespace: "shop"}})
	s, warnings, err := objsOf(read.List{Clients: read.Clients{Kube: kube, Image: image}, Scope: read.Scope{Namespace: "shop", OpenShift: openshift.ModeAuto}})
	if err != nil || !s.OpenShift || len(s.ImageStreams) != 1 || len(warnings) != 0 {
		t.Fatalf("openshift %v streams %d warnings %v err %v", s.OpenShift, len(s.ImageStreams), warnings, err)
	}

	image.PrependReactor("list", "imagestreams", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "image.openshift.io", Resource: "imagestreams"}, "", errors.New("no"))
	})
	s, warnings, err = objsOf(read.List{Clients: read.Clients{Kube: kube, Image: image}, Scope: read.Scope{Namespace: "shop", OpenShift: openshift.ModeAuto}})
	if err != nil || len(warnings) != 1 || len(s.ImageStreams) != 0 {
		t.Fatalf("forbidden imagestreams must only warn: warnings %v err %v", warnings, err)
	}
}

func TestListWithoutEvents(t *testing.T) {
	kube := fake.NewClientset(objects(1)...)
	kube.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no"))
	})
	s, warnings, err := objsOf(read.List{Clients: read.Clients{Kube: kube}, Scope: read.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}})
	if err != nil || len(warnings) != 1 || len(s.Pods) != 3 {
		t.Fatalf("events are optional: err %v warnings %v", err, warnings)
	}
}

// objsOf reads with l: the snapshot, its warnings, the error.
func objsOf(l read.List) (*stuck.Objects, []string, error) {
	objs, err := l.Objects(context.Background())
	if err != nil {
		return nil, nil, err
	}
	return objs, objs.Warnings, nil
}
