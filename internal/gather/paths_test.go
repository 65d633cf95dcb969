package gather_test

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
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// pathRead is what one read path gave.
type pathRead struct {
	snap     *stuck.Objects
	warnings []string
	err      error
}

// bothPaths reads the same cluster with Gather (check's LISTs) and with Live's informers (wait,
// watch): StartLive's warnings, then a Snapshot of its caches.
func bothPaths(t *testing.T, c gather.Clients, scope gather.Scope) map[string]pathRead {
	t.Helper()
	out := map[string]pathRead{}
	s, w, err := gather.Gather(context.Background(), c, scope)
	out["gather"] = pathRead{s, w, err}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	live, w, err := gather.StartLive(ctx, c, scope, nil)
	if err != nil {
		out["live"] = pathRead{nil, w, err}
		return out
	}
	s, again, err := live.Snapshot(ctx)
	if fmt.Sprint(again) != fmt.Sprint(w) {
		t.Errorf("live: StartLive warned %q, Snapshot %q", w, again)
	}
	out["live"] = pathRead{s, w, err}
	return out
}

func forbid(resource string) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("no"))
	}
}

// TestReadPolicy: both read paths treat each kind alike (required, optional with a warning, or
// optional without one), with the same wording.
func TestReadPolicy(t *testing.T) {
	governed := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: appsv1.StatefulSetSpec{ServiceName: "db"}}
	cases := []struct {
		name      string
		forbidden string
		extra     []runtime.Object
		openShift openshift.Mode
		err       string
		warnings  string
		listed    string
	}{
		{name: "all readable", openShift: openshift.ModeAlways,
			warnings: "[]", listed: "storageclasses=true nodes=true services=true"},
		{name: "pods are required", forbidden: "pods",
			err: `listing pods in namespace "shop": pods is forbidden: no`},
		{name: "statefulsets are required", forbidden: "statefulsets",
			err: `listing statefulsets in namespace "shop": statefulsets is forbidden: no`},
		{name: "events warn", forbidden: "events",
			warnings: `[findings carry no pod events: listing events in namespace "shop": events is forbidden: no]`,
			listed:   "storageclasses=true nodes=true services=true"},
		{name: "services are silent when no set names one", forbidden: "services",
			warnings: "[]", listed: "storageclasses=true nodes=true services=false"},
		{name: "services warn when a set names one", forbidden: "services", extra: []runtime.Object{governed},
			warnings: `[governing Service checks skipped: listing services in namespace "shop": services is forbidden: no]`,
			listed:   "storageclasses=true nodes=true services=false"},
		{name: "nodes are silent", forbidden: "nodes",
			warnings: "[]", listed: "storageclasses=true nodes=false services=true"},
		{name: "storageclasses are silent", forbidden: "storageclasses",
			warnings: "[]", listed: "storageclasses=false nodes=true services=true"},
		{name: "imagestreams warn", forbidden: "imagestreams", openShift: openshift.ModeAlways,
			warnings: `[ImageStream checks skipped: cannot list imagestreams.image.openshift.io: imagestreams is forbidden: no]`,
			listed:   "storageclasses=true nodes=true services=true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(append(objects(1), tc.extra...)...)
			image := imagefake.NewClientset()
			if tc.forbidden != "" {
				kube.PrependReactor("list", tc.forbidden, forbid(tc.forbidden))
				image.PrependReactor("list", tc.forbidden, forbid(tc.forbidden))
			}
			mode := tc.openShift
			if mode == "" {
				mode = openshift.ModeNever
			}
			for path, got := range bothPaths(t, gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}, gather.Scope{Namespace: "shop", OpenShift: mode}) {
				if tc.err != "" {
					if got.err == nil || got.err.Error() != tc.err {
						t.Errorf("%s: error %v, want %s", path, got.err, tc.err)
					}
					continue
				}
				if got.err != nil {
					t.Fatalf("%s: %v", path, got.err)
				}
				if fmt.Sprintf("%q", got.warnings) != fmt.Sprintf("%q", splitWarnings(tc.warnings)) {
					t.Errorf("%s: warnings %q, want %s", path, got.warnings, tc.warnings)
				}
				s := got.snap
				listed := fmt.Sprintf("storageclasses=%v nodes=%v services=%v", s.StorageClassesListed, s.NodesListed, s.ServicesListed)
				if listed != tc.listed || len(s.Pods) != 3 {
					t.Errorf("%s: %s, %d pods; want %s, 3 pods", path, listed, len(s.Pods), tc.listed)
				}
			}
		})
	}
}

// splitWarnings turns "[a]" into [a] and "[]" into none.
func splitWarnings(s string) []string {
	if s == "[]" {
		return nil
	}
	return []string{s[1 : len(s)-1]}
}

// TestNamespacesOnlyForAllNamespacesOnOpenShift: the run levels of every namespace are read with
// -A on OpenShift only; a namespace named in the scope is read alone.
func TestNamespacesOnlyForAllNamespacesOnOpenShift(t *testing.T) {
	cases := []struct {
		name      string
		namespace string
		mode      openshift.Mode
		want      string
	}{
		{"all namespaces on OpenShift", "", openshift.ModeAlways, "[kube-system shop]"},
		{"all namespaces elsewhere", "", openshift.ModeNever, "[]"},
		{"one namespace on OpenShift", "shop", openshift.ModeAlways, "[shop]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(append(objects(1), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}})...)
			c := gather.Clients{Clients: read.Clients{Kube: kube, Image: imagefake.NewClientset()}}
			for path, got := range bothPaths(t, c, gather.Scope{Namespace: tc.namespace, OpenShift: tc.mode}) {
				if got.err != nil {
					t.Fatalf("%s: %v", path, got.err)
				}
				var names []string
				for _, ns := range got.snap.Namespaces {
					names = append(names, ns.Name)
				}
				sort.Strings(names)
				if fmt.Sprint(names) != tc.want {
					t.Errorf("%s: namespaces %v, want %s", path, names, tc.want)
				}
			}
		})
	}
}

// TestSlimmedInBothPaths: both paths keep only what diagnosis reads (snapshot.Slim), of every kind.
func TestSlimmedInBothPaths(t *testing.T) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	applied := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"}
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	kube := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", ManagedFields: managed},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", ReadinessProbe: probe}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"app:1"}}}, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}}},
	)
	image := imagefake.NewClientset(&imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", Annotations: applied}})
	for path, got := range bothPaths(t, gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeAlways}) {
		if got.err != nil {
			t.Fatalf("%s: %v", path, got.err)
		}
		s := got.snap
		if len(s.Pods) != 1 || len(s.Nodes) != 1 || len(s.StorageClasses) != 1 || len(s.ImageStreams) != 1 {
			t.Fatalf("%s: %d pods %d nodes %d classes %d streams", path, len(s.Pods), len(s.Nodes), len(s.StorageClasses), len(s.ImageStreams))
		}
		pod := s.Pods[0]
		if pod.ManagedFields != nil || pod.Spec.Containers[0].ReadinessProbe != nil || pod.Spec.Containers[0].Image != "app:1" {
			t.Errorf("%s: pod not slimmed: %+v", path, pod.Spec.Containers[0])
		}
		if len(s.Nodes[0].Status.Images) != 0 || len(s.Nodes[0].Status.Conditions) != 1 {
			t.Errorf("%s: node status %+v", path, s.Nodes[0].Status)
		}
		if len(s.StorageClasses[0].Annotations) != 0 || fmt.Sprint(s.ImageStreams[0].Annotations) != "map[keep:me]" {
			t.Errorf("%s: annotations %v %v", path, s.StorageClasses[0].Annotations, s.ImageStreams[0].Annotations)
		}
	}
}
