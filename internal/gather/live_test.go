package gather_test

import (
	"context"
	"reflect"
	"sort"
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/openshift"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// TestNamespaceSnapshots: watch's first pass reads each namespace as a worker's sync does
// (CachedOf), every StatefulSet of it in scope, with the cluster-scoped kinds read once.
func TestNamespaceSnapshots(t *testing.T) {
	var objs []runtime.Object
	for _, ns := range []string{"shop", "bank"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns}},
			&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: ns}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: ns}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}, Type: corev1.EventTypeWarning})
	}
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}})
	images := imagefake.NewClientset(&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}},
		&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "bank"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live, _, err := gather.StartLive(ctx, gather.Clients{Kube: fake.NewClientset(objs...), Image: images}, gather.Scope{OpenShift: openshift.ModeAlways}, nil)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := live.StatefulSetNamespaces()
	sort.Strings(namespaces)
	if !reflect.DeepEqual(namespaces, []string{"bank", "shop"}) {
		t.Fatalf("StatefulSetNamespaces: %v", namespaces)
	}
	read := live.NamespaceSnapshots()
	for _, ns := range namespaces {
		got, want := read(ns), live.CachedOf(ns, "db")
		if got.Selected != nil {
			t.Errorf("%s: Selected %v; want nil (every StatefulSet)", ns, got.Selected)
		}
		if len(got.StatefulSets) != 2 || len(got.Pods) != 1 || len(got.Revisions) != 1 || len(got.PVCs) != 1 || len(got.Services) != 1 ||
			len(got.Events) != 1 || len(got.ImageStreams) != 1 || len(got.Nodes) != 1 || len(got.StorageClasses) != 1 || len(got.Namespaces) != 1 {
			t.Errorf("%s: %d sets, %d pods, %d revisions, %d claims, %d services, %d events, %d streams, %d nodes, %d classes, %d namespaces; want 2 and 1 of each",
				ns, len(got.StatefulSets), len(got.Pods), len(got.Revisions), len(got.PVCs), len(got.Services), len(got.Events), len(got.ImageStreams),
				len(got.Nodes), len(got.StorageClasses), len(got.Namespaces))
		}
		got.Now, got.Selected = want.Now, want.Selected
		sortSets(got)
		sortSets(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: first pass's snapshot\n%+v\nCachedOf's\n%+v", ns, got, want)
		}
	}
}

// sortSets orders the StatefulSets by name (a cache lists them in no order).
func sortSets(s *snapshot.Snapshot) {
	sort.Slice(s.StatefulSets, func(i, j int) bool { return s.StatefulSets[i].Name < s.StatefulSets[j].Name })
}
