package check_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// scenarioPaths are testdata's scenarios whose premise holds while the controller manager runs:
// those with a leader Lease of their own (a stopped controller, stale statuses) are left to
// TestClusterWideStoppedController.
func scenarioPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, root := range []string{"stuck", "resolver"} {
		found, err := filepath.Glob(filepath.Join("..", "..", "testdata", root, "*", "objects.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range found {
			snap, err := stuck.LoadFile(path, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if snap.ControllerManager == nil {
				out = append(out, path)
			}
		}
	}
	sort.Strings(out)
	if len(out) < 90 {
		t.Fatalf("%d scenarios", len(out))
	}
	return out
}

// noise is a settled namespace as most of a real cluster is: a StatefulSet whose status says
// every replica is Ready on the update revision, its pods and revision, its headless Service,
// and pods and a revision of other controllers (a ReplicaSet's, a DaemonSet's).
func noise(ns string) []runtime.Object {
	uid := types.UID(ns + "-quiet")
	labels := map[string]string{"app": "quiet"}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: ns, UID: uid, Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: "quiet", Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "quiet", Image: "registry.k8s.io/quiet:1"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2,
			UpdatedReplicas: 2, CurrentRevision: "quiet-1", UpdateRevision: "quiet-1"}}
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "quiet", UID: uid, Controller: ptr.To(true)}}
	objs := []runtime.Object{set,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: ns}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels}},
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "quiet-1", Namespace: ns, OwnerReferences: owner}, Revision: 1},
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "quiet-agent-1", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}}, Revision: 1},
	}
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}}
	for i := range 2 {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("quiet-%d", i), Namespace: ns, UID: types.UID(fmt.Sprintf("%s-quiet-%d", ns, i)),
			Labels: map[string]string{"app": "quiet", appsv1.ControllerRevisionHashLabelKey: "quiet-1"}, OwnerReferences: owner},
			Spec: corev1.PodSpec{NodeName: "node-0", Containers: set.Spec.Template.Spec.Containers}, Status: ready})
	}
	for i := range 3 {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("front-7d9f-%d", i), Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "front-7d9f", UID: "rs", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}, Status: ready})
	}
	return objs
}

// podLists are the namespaces whose pods a read LISTed ("" for all namespaces).
type podLists struct{ namespaces []string }

func (p *podLists) install(kube *fake.Clientset) {
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p.namespaces = append(p.namespaces, a.GetNamespace())
		return false, nil, nil
	})
}

// TestTriagedIsFull: the triaged read reports byte for byte what the full read reports, for every
// scenario of testdata alone, for all of them in one cluster, each with settled namespaces
// around it, with and without the image API — and reads the pods only of the namespaces whose
// StatefulSets' status is not settled.
func TestTriagedIsFull(t *testing.T) {
	opts := stuck.DefaultOptions()
	paths := scenarioPaths(t)
	run := func(t *testing.T, placed []placement, extra []runtime.Object, mode openshift.Mode) (deep []string) {
		t.Helper()
		kube, image := clusterOf(t, placed, extra...)
		c := gather.Clients{Clients: read.Clients{Kube: kube, Image: image}}
		scope := gather.Scope{OpenShift: mode}
		full, _, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: c, Scope: scope}, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		lists := &podLists{}
		lists.install(kube)
		triaged, err := check.Triaged(context.Background(), c, scope, opts)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := reportJSON(t, triaged), reportJSON(t, full); a != b {
			t.Errorf("triaged:\n%s\nfull:\n%s", a, b)
		}
		if slices.Contains(lists.namespaces, "") {
			t.Errorf("the triaged read LISTed the pods of all namespaces")
		}
		return lists.namespaces
	}
	for _, mode := range []openshift.Mode{openshift.ModeAlways, openshift.ModeNever} {
		t.Run(fmt.Sprintf("alone, OpenShift %v", mode), func(t *testing.T) {
			read := 0
			for _, path := range paths {
				name := filepath.Base(filepath.Dir(path))
				t.Run(name, func(t *testing.T) {
					read += len(run(t, []placement{{path, "shop"}}, nil, mode))
				})
			}
			if read == 0 || read == len(paths) {
				t.Errorf("%d of %d scenarios read deep: the triage decided nothing", read, len(paths))
			}
		})
		t.Run(fmt.Sprintf("together with noise, OpenShift %v", mode), func(t *testing.T) {
			var placed []placement
			var extra []runtime.Object
			var quiet []string
			for i, path := range paths {
				placed = append(placed, placement{path, fmt.Sprintf("s%03d", i)})
				extra = append(extra, noise(fmt.Sprintf("s%03d", i))...) // a scenario's namespace holds settled sets too
				quiet = append(quiet, fmt.Sprintf("q%03d", i))
				extra = append(extra, noise(quiet[i])...)
			}
			deep := run(t, placed, extra, mode)
			for _, ns := range quiet {
				if slices.Contains(deep, ns) {
					t.Errorf("settled namespace %s read deep", ns)
				}
			}
			if len(deep) == 0 || len(deep) >= len(paths) {
				t.Errorf("%d of %d scenario namespaces read deep", len(deep), len(paths))
			}
			t.Logf("%d of %d namespaces read deep", len(deep), 2*len(paths))
		})
	}
}

// TestClusterWideStoppedController: kube-controller-manager's leader Lease not renewed for
// ten minutes while a pod broke after the controller last wrote its StatefulSet's status: the
// status still says settled, so check -A reads everything and names both.
func TestClusterWideStoppedController(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "stuck", "controller-manager-not-running", "objects.yaml")
	now := time.Now()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-0_1"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-10 * time.Minute)}}}
	for name, c := range map[string]struct {
		lease *coordinationv1.Lease
		want  []apiv1.Code
		state string
	}{
		"not renewed": {lease, []apiv1.Code{apiv1.ControllerManagerNotRunning, apiv1.CurrentRevisionFailing, apiv1.ServiceMissing}, "NotRenewed"},
		"no lease":    {nil, []apiv1.Code{apiv1.ServiceMissing}, "NotFound"}, // leader election off: statuses trusted, web-1 not read
	} {
		t.Run(name, func(t *testing.T) {
			var extra []runtime.Object
			if c.lease != nil {
				extra = append(extra, c.lease)
			}
			kube, _ := clusterOf(t, []placement{{path, "shop"}}, extra...)
			rep, _, err := check.ClusterWide(context.Background(), gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{OpenShift: openshift.ModeNever}, check.Options{Diagnosis: stuck.DefaultOptions()})
			if err != nil {
				t.Fatal(err)
			}
			var got []apiv1.Code
			for _, f := range rep.Findings {
				got = append(got, f.Code)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("findings %v, want %v", got, c.want)
			}
			cm := rep.Server.ControllerManager
			if cm == nil || cm.State != c.state || cm.Lease != "kube-system/kube-controller-manager" {
				t.Fatalf("server.controllerManager %+v", cm)
			}
			if c.lease == nil && cm.Assumed != "statuses current" {
				t.Errorf("assumed %q", cm.Assumed)
			}
			if c.lease != nil && !strings.Contains(rep.Findings[0].Message, "has not been renewed for 10m0s (held by cp-0_1, lease duration 15s)") {
				t.Errorf("message %q", rep.Findings[0].Message)
			}
		})
	}
}
