package gather_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// twoNamespaces is one object of each kind read in namespaces shop and bank (two StatefulSets
// each; the pod labelled as the StatefulSet controller labels its pods), a Node and a
// StorageClass; and their ImageStreams.
func twoNamespaces() ([]runtime.Object, *imagefake.Clientset) {
	var objs []runtime.Object
	for _, ns := range []string{"shop", "bank"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns, Labels: map[string]string{appsv1.StatefulSetPodNameLabel: "db-0"}}},
			&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: ns}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: ns}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}, Type: corev1.EventTypeWarning})
	}
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}})
	images := imagefake.NewClientset(&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}},
		&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "bank"}})
	return objs, images
}

// TestNamespaceSnapshots: watch's first pass reads each namespace as a worker's sync does
// (CachedOf), every StatefulSet of it in scope, with the cluster-scoped kinds read once.
func TestNamespaceSnapshots(t *testing.T) {
	objs, images := twoNamespaces()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: fake.NewClientset(objs...), Image: images}}, gather.Scope{OpenShift: openshift.ModeAlways}, nil)
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
		// Another namespace's ImageStream is found, as check -A finds it.
		other := map[string]string{"shop": "bank", "bank": "shop"}[ns]
		if is := got.Indexed().Streams.Stream(other, "app"); is == nil || is.Namespace != other || !got.Indexed().Streams.HasStreams(other) {
			t.Errorf("%s: ImageStream %s/app not found: %v", ns, other, is)
		}
		if got.Indexed().Streams.HasStreams("nowhere") || got.Indexed().Streams.Stream(other, "none") != nil {
			t.Errorf("%s: ImageStreams found where there are none", ns)
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
func sortSets(s *stuck.Objects) {
	sort.Slice(s.StatefulSets, func(i, j int) bool { return s.StatefulSets[i].Name < s.StatefulSets[j].Name })
}

// TestStartLiveDiagnosing: for all namespaces, the caches' first LISTs are the paged LISTs that
// hand each namespace to diagnose (one LIST of a kind besides the probe, not two), the caches
// hold what they read, the objects of the initial fill reach onChange as initial and a later
// change as a change. When the paged LISTs cannot go namespace by namespace the caches still
// fill with what they read; when one fails, or a namespace is named, the caches fill by their own
// LISTs.
func TestStartLiveDiagnosing(t *testing.T) {
	cases := []struct {
		name      string
		scope     gather.Scope
		reversed  bool // the API server answers pods out of key order
		slim      bool // the LISTs are read as cmd's clients read them: protobuf, decoded by slimpb
		failList  int  // the API server fails this pods LIST (1: the first)
		diagnosed bool
		handed    string
		podLists  int
	}{
		{name: "all namespaces", scope: gather.Scope{OpenShift: openshift.ModeAlways},
			diagnosed: true, handed: "[bank:2/1 shop:2/1]", podLists: 2},
		// Through slimpb the paged kinds' items come each in an allocation of its own (slimpb.Each)
		// and are cached as they are: the same namespaces and caches.
		{name: "all namespaces through slimpb", scope: gather.Scope{OpenShift: openshift.ModeAlways}, slim: true,
			diagnosed: true, handed: "[bank:2/1 shop:2/1]", podLists: 2},
		{name: "pods out of key order through slimpb", scope: gather.Scope{OpenShift: openshift.ModeAlways}, reversed: true, slim: true,
			diagnosed: false, handed: "[bank:2/1]", podLists: 2},
		{name: "pods out of key order", scope: gather.Scope{OpenShift: openshift.ModeAlways}, reversed: true,
			// bank is handed out before shop's pods came (its db-0, not read yet, looked up by
			// name as a pod its StatefulSet db may hold: held.go); every pod was read, and fills
			// the cache.
			diagnosed: false, handed: "[bank:2/1]", podLists: 2},
		{name: "the paged pods LIST fails", scope: gather.Scope{OpenShift: openshift.ModeAlways}, failList: 2,
			diagnosed: false, handed: "[]", podLists: 3},
		{name: "a namespace named", scope: gather.Scope{Namespace: "shop", OpenShift: openshift.ModeAlways},
			diagnosed: false, handed: "[]", podLists: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, images := twoNamespaces()
			kube := fake.NewClientset(objs...)
			if tc.reversed {
				kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					obj, err := kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
					if err != nil {
						return true, nil, err
					}
					l := obj.(*corev1.PodList)
					slices.Reverse(l.Items)
					return true, l, nil
				})
			}
			if tc.failList > 0 {
				lists := 0
				kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					if lists++; lists == tc.failList {
						return true, nil, apierrors.NewResourceExpired("too old")
					}
					return false, nil, nil
				})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			initial, changes := 0, map[string]bool{}
			onChange := func(obj any, first bool) {
				mu.Lock()
				defer mu.Unlock()
				if first {
					initial++
				} else if o, ok := obj.(metav1.Object); ok {
					changes[o.GetName()] = true
				}
			}
			var handed []string
			clients := gather.Clients{Clients: read.Clients{Kube: kube, Image: images}}
			if tc.slim {
				clients.Read = protobufLists{kube}
			}
			live, _, diagnosed, err := gather.StartLiveDiagnosing(ctx, clients, tc.scope, onChange, func(s *stuck.Objects) error {
				handed = append(handed, fmt.Sprintf("%s:%d/%d", s.StatefulSets[0].Namespace, len(s.StatefulSets), len(s.Pods)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diagnosed != tc.diagnosed || fmt.Sprint(handed) != tc.handed {
				t.Errorf("diagnosed %v, namespaces handed %v; want %v, %s", diagnosed, handed, tc.diagnosed, tc.handed)
			}
			if got := verbs(kube.Actions())["list/pods"]; got != tc.podLists {
				t.Errorf("pods LISTed %d times; want %d", got, tc.podLists)
			}
			cached, err := live.Cached()
			if err != nil {
				t.Fatal(err)
			}
			want := 4
			if tc.scope.Namespace != "" {
				want = 2
			}
			if len(cached.StatefulSets) != want || len(cached.Pods) != want/2 || len(cached.Revisions) != want/2 || len(cached.Nodes) != 1 {
				t.Errorf("cached %d sets, %d pods, %d revisions, %d nodes", len(cached.StatefulSets), len(cached.Pods), len(cached.Revisions), len(cached.Nodes))
			}
			mu.Lock()
			if initial < 10 || len(changes) != 0 {
				t.Errorf("initial fill: %d objects as initial, %v as changes", initial, changes)
			}
			mu.Unlock()
			// A pod created once the pods' informer WATCHes (the fake's WATCH does not start at the
			// LIST's resourceVersion) is a change.
			err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return verbs(kube.Actions())["watch/pods"] > 0, nil
			})
			if err != nil {
				t.Fatal("pods are not watched")
			}
			late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "shop", Labels: map[string]string{appsv1.StatefulSetPodNameLabel: "late"}}}
			if _, err := kube.CoreV1().Pods("shop").Create(ctx, late, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return changes["late"], nil
			})
			if err != nil {
				t.Errorf("a pod created after the start is no change: %v", changes)
			}
		})
	}
}

// protobufLists is a fake clientset whose LISTs through slimpb.Lister and slimpb.Pager are
// answered as the API server answers them, in protobuf, and decoded by slimpb (one page: the
// fake does not page).
type protobufLists struct{ *fake.Clientset }

func (p protobufLists) ListInto(ctx context.Context, ns string, o metav1.ListOptions, into runtime.Object) error {
	return p.ListPage(ctx, ns, o, into, nil)
}

func (p protobufLists) ListPage(ctx context.Context, ns string, o metav1.ListOptions, into runtime.Object, _ func(metav1.ListMeta)) error {
	list := into
	if e, ok := into.(*slimpb.Each); ok {
		list = e.List
	}
	var got runtime.Object
	var err error
	switch list.(type) {
	case *corev1.PodList:
		got, err = p.CoreV1().Pods(ns).List(ctx, o)
	case *appsv1.StatefulSetList:
		got, err = p.AppsV1().StatefulSets(ns).List(ctx, o)
	case *appsv1.ControllerRevisionList:
		got, err = p.AppsV1().ControllerRevisions(ns).List(ctx, o)
	case *corev1.PersistentVolumeClaimList:
		got, err = p.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
	case *corev1.EventList:
		got, err = p.CoreV1().Events(ns).List(ctx, o)
	case *corev1.ServiceList:
		got, err = p.CoreV1().Services(ns).List(ctx, o)
	case *corev1.NodeList:
		got, err = p.CoreV1().Nodes().List(ctx, o)
	case *corev1.NamespaceList:
		got, err = p.CoreV1().Namespaces().List(ctx, o)
	case *storagev1.StorageClassList:
		got, err = p.StorageV1().StorageClasses().List(ctx, o)
	default:
		return fmt.Errorf("no LIST of %T", list)
	}
	if err != nil {
		return err
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(got)
	if err != nil {
		return err
	}
	body, err := slimpb.Encode(got.(interface {
		runtime.Object
		Marshal() ([]byte, error)
	}), gvks[0])
	if err != nil {
		return err
	}
	return slimpb.DecodeStream(bytes.NewReader(body), into)
}

// TestLiveAllNamespacesSlimsSettled: for all namespaces the StatefulSets cache holds a set whose
// status says settled without its template's env (snapshot.SlimSettled) and one whose status
// does not whole; once the settled one's status changes (a pod no longer Ready) it is held whole
// again. A named namespace holds both whole.
func TestLiveAllNamespacesSlimsSettled(t *testing.T) {
	env := []corev1.EnvVar{{Name: "A", Value: "b"}}
	set := func(name string, ready int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Generation: 1},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "app:1", Env: env}}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: 1,
				CurrentRevision: name + "-1", UpdateRevision: name + "-1"}}
	}
	envOf := func(t *testing.T, live *gather.Live, name string) []corev1.EnvVar {
		t.Helper()
		s, err := live.Cached()
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range s.StatefulSets {
			if st.Name == name {
				return st.Spec.Template.Spec.Containers[0].Env
			}
		}
		t.Fatalf("%s not cached", name)
		return nil
	}
	for _, ns := range []string{"", "shop"} {
		t.Run("namespace "+ns, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set("db", 1), set("web", 0))
			live, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: ns}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := envOf(t, live, "db") == nil, ns == ""; got != want {
				t.Errorf("settled db held without its env: %v, want %v", got, want)
			}
			if envOf(t, live, "web") == nil {
				t.Error("unsettled web held without its env")
			}
			if _, err := kube.AppsV1().StatefulSets("shop").UpdateStatus(ctx, set("db", 0), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				return envOf(t, live, "db") != nil, nil
			}); err != nil {
				t.Error("db, no longer settled, still held without its env")
			}
		})
	}
}

// TestLiveAllNamespacesRevisionsAsMetadata: for all namespaces the revisions are cached without
// their data; Refresh GETs, once each, the data of the revisions of StatefulSets whose status is
// not settled, and the snapshots carry it; a settled set's revisions stay metadata. A named
// namespace caches them whole and GETs none.
func TestLiveAllNamespacesRevisionsAsMetadata(t *testing.T) {
	set := func(name string, settled bool) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name + "-uid"), Generation: 1},
			Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1, CurrentRevision: name + "-1", UpdateRevision: name + "-1"}}
		if !settled {
			s.Status.UpdateRevision = name + "-2"
		}
		return s
	}
	rev := func(owner *appsv1.StatefulSet, n int) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", owner.Name, n), Namespace: "shop", UID: types.UID(fmt.Sprintf("%s-%d-uid", owner.Name, n)),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Revision: int64(n), Data: runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{"rev":"%d"}}}}}`, n))}}
	}
	db, web := set("db", true), set("web", false)
	for _, ns := range []string{"", "shop"} {
		t.Run("namespace "+ns, func(t *testing.T) {
			kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, db, web, rev(db, 1), rev(web, 1), rev(web, 2))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			live, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: ns}, nil)
			if err != nil {
				t.Fatal(err)
			}
			gets := func() int {
				n := 0
				for _, a := range kube.Actions() {
					if a.GetVerb() == "get" && a.GetResource().Resource == "controllerrevisions" {
						n++
					}
				}
				return n
			}
			for range 2 {
				live.Refresh(ctx, "shop")
			}
			withData := map[string]bool{}
			for _, r := range live.CachedOf("shop").Revisions {
				withData[r.Name] = len(r.Data.Raw) > 0
			}
			want, wantGets := map[string]bool{"db-1": false, "web-1": true, "web-2": true}, 2
			if ns != "" {
				want, wantGets = map[string]bool{"db-1": true, "web-1": true, "web-2": true}, 0
			}
			if !reflect.DeepEqual(withData, want) || gets() != wantGets {
				t.Errorf("revisions with data %v after %d GETs; want %v after %d", withData, gets(), want, wantGets)
			}
		})
	}
}
