package check_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// mixedCluster is a cluster as most are: a Deployment's and a DaemonSet's pods (which no
// StatefulSet reads) beside StatefulSets' pods, labelled as the StatefulSet controller labels
// them (statefulset.kubernetes.io/pod-name), and three pods that hold an ordinal's name without
// that label:
//   - shop/web-2, left by a StatefulSet web deleted and recreated (another UID) and whose
//     labels were edited: the new web's controller cannot create web-2 (its FailedCreate Event
//     says it already exists), an OrphanedRevision;
//   - shop/cache-1, StatefulSet cache's own, whose pod-name label was removed (the controller
//     sets it again when it next gets to cache-1, processReplica), crash looping: the
//     CurrentRevisionFailing of cache;
//   - bank/db-1, created by hand, no owner: db's controller cannot create db-1 (FailedCreate).
func mixedCluster() []runtime.Object {
	hourAgo := metav1.NewTime(time.Now().Add(-time.Hour))
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: hourAgo}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: hourAgo}}}}}
	crashing := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: hourAgo}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 9,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.NewTime(time.Now().Add(-3 * time.Minute)), FinishedAt: metav1.NewTime(time.Now().Add(-3*time.Minute + 2*time.Second))}}}}}
	containers := []corev1.Container{{Name: "app", Image: "registry.k8s.io/app:1"}}
	var objs []runtime.Object
	// set is a StatefulSet whose status counts created pods, ready of them.
	set := func(ns, name string, replicas, created, ready int32) types.UID {
		uid := types.UID(ns + "-" + name)
		labels := map[string]string{"app": name}
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, Generation: 1},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
				PodManagementPolicy: appsv1.ParallelPodManagement,
				Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: created, ReadyReplicas: ready, AvailableReplicas: ready, CurrentReplicas: created,
				UpdatedReplicas: created, CurrentRevision: name + "-1", UpdateRevision: name + "-1"}},
			&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: uid, Controller: ptr.To(true)}}}, Revision: 1})
		return uid
	}
	pod := func(ns, name string, labels map[string]string, owner *metav1.OwnerReference, status corev1.PodStatus) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "-" + name), Labels: labels, CreationTimestamp: hourAgo},
			Spec: corev1.PodSpec{NodeName: "node-0", Containers: containers}, Status: status}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		objs = append(objs, p)
	}
	owner := func(kind, name string, uid types.UID) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}
	}
	// The StatefulSet controller's labels of an ordinal's pod.
	sts := func(set, pod string) map[string]string {
		return map[string]string{"app": set, appsv1.ControllerRevisionHashLabelKey: set + "-1", appsv1.StatefulSetPodNameLabel: pod}
	}
	failedCreate := func(ns, set, pod string) {
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: set + ".failed", Namespace: ns}, Type: corev1.EventTypeWarning, Reason: "FailedCreate",
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Namespace: ns, Name: set, APIVersion: "apps/v1"},
			Message:        fmt.Sprintf("create Pod %s in StatefulSet %s failed error: pods %q already exists", pod, set, pod),
			LastTimestamp:  metav1.NewTime(time.Now().Add(-10 * time.Second)), Count: 4})
	}
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	for _, ns := range []string{"shop", "bank", "front"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		// A Deployment's pods and a DaemonSet's: most of the cluster.
		for i := range 4 {
			pod(ns, fmt.Sprintf("front-7d9f-%d", i), map[string]string{"app": "front", "pod-template-hash": "7d9f"}, owner("ReplicaSet", "front-7d9f", "rs-"+types.UID(ns)), ready)
		}
		pod(ns, "agent-x2x", map[string]string{"app": "agent", appsv1.ControllerRevisionHashLabelKey: "5c6b"}, owner("DaemonSet", "agent", "ds"), ready)
	}
	// shop: web's third pod is an orphan of the web before it.
	web := set("shop", "web", 3, 2, 2)
	pod("shop", "web-0", sts("web", "web-0"), owner("StatefulSet", "web", web), ready)
	pod("shop", "web-1", sts("web", "web-1"), owner("StatefulSet", "web", web), ready)
	pod("shop", "web-2", map[string]string{"app": "web"}, owner("StatefulSet", "web", "shop-web-before"), ready)
	failedCreate("shop", "web", "web-2")
	// shop: cache-1, its pod-name label removed, crash looping.
	cache := set("shop", "cache", 2, 2, 1)
	pod("shop", "cache-0", sts("cache", "cache-0"), owner("StatefulSet", "cache", cache), ready)
	pod("shop", "cache-1", map[string]string{"app": "cache", appsv1.ControllerRevisionHashLabelKey: "cache-1"}, owner("StatefulSet", "cache", cache), crashing)
	// bank: db-1 held by a pod of nobody's.
	db := set("bank", "db", 2, 1, 1)
	pod("bank", "db-0", sts("db", "db-0"), owner("StatefulSet", "db", db), ready)
	pod("bank", "db-1", map[string]string{"made-by": "hand"}, nil, ready)
	failedCreate("bank", "db", "db-1")
	// front: settled, every pod its own.
	quiet := set("front", "quiet", 2, 2, 2)
	pod("front", "quiet-0", sts("quiet", "quiet-0"), owner("StatefulSet", "quiet", quiet), ready)
	pod("front", "quiet-1", sts("quiet", "quiet-1"), owner("StatefulSet", "quiet", quiet), ready)
	return objs
}

// TestWatchAllHoldsStatefulSetPods: watch -A holds the pods of StatefulSets only, and still sees
// the pods that hold an ordinal's name without the StatefulSet controller's label. On a cluster of
// Deployment, DaemonSet and StatefulSet pods with three such pods (mixedCluster), every snapshot
// an all-namespaces Live gives — Snapshot (wait), a namespace's after Refresh (a watch worker's
// sync, the first pass) and each namespace handed out by the paged LISTs that fill the caches
// (watch's first pass) — gives the findings check's full read gives; its pods are LISTed and
// WATCHed only with the label selector, and the pods it GETs are ordinals' names.
func TestWatchAllHoldsStatefulSetPods(t *testing.T) {
	opts := stuck.DefaultOptions()
	scope := gather.Scope{OpenShift: openshift.ModeNever}
	kube := fake.NewClientset(mixedCluster()...)
	clients := gather.Clients{Clients: read.Clients{Kube: kube}}
	full, _, err := check.AllNamespaces(context.Background(), gather.Paged{Clients: clients, Scope: scope}, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	want := keys(full)
	// What holding only labelled pods would miss: the orphan web-2 and cache-1's crash loop.
	for _, f := range []string{"/OrphanedRevision/shop/web/web-2/", "/CurrentRevisionFailing/shop/cache/cache-1/"} {
		if !slices.ContainsFunc(want, func(k string) bool { return strings.HasPrefix(k, f) }) {
			t.Fatalf("check's full read lacks %s: %v", f, want)
		}
	}

	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("first LISTs diagnosed %v", streamed), func(t *testing.T) {
			kube.ClearActions()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var handed []string
			var live *gather.Live
			if streamed {
				var diagnosed bool
				live, _, diagnosed, err = gather.StartLiveDiagnosing(ctx, clients, scope, nil, func(s *stuck.Objects) error {
					handed = append(handed, keys(diagnose.Report(s, opts))...)
					return nil
				})
				if err == nil && !diagnosed {
					t.Fatal("the namespaces were not handed out")
				}
			} else {
				live, _, err = gather.StartLive(ctx, clients, scope, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			snap, _, err := live.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(diagnose.Report(snap, opts)); !slices.Equal(got, want) {
				t.Errorf("Snapshot: %v\ncheck: %v", got, want)
			}
			var synced []string
			for _, ns := range []string{"bank", "front", "shop"} {
				live.Refresh(ctx, ns)
				synced = append(synced, keys(diagnose.Report(live.NamespaceSnapshots()(ns), opts))...)
			}
			sort.Strings(synced)
			if !slices.Equal(synced, want) {
				t.Errorf("namespace by namespace: %v\ncheck: %v", synced, want)
			}
			if streamed {
				sort.Strings(handed)
				if !slices.Equal(handed, want) {
					t.Errorf("handed out by the paged LISTs: %v\ncheck: %v", handed, want)
				}
			}
			for _, p := range snap.Pods {
				if p.Labels[appsv1.StatefulSetPodNameLabel] == "" && !slices.Contains([]string{"web-2", "cache-1", "db-1"}, p.Name) {
					t.Errorf("snapshot holds pod %s/%s, of no StatefulSet", p.Namespace, p.Name)
				}
			}
			if len(snap.Pods) != 9 { // web 3, cache 2, db 2, quiet 2
				t.Errorf("snapshot holds %d pods, want 9 (the StatefulSets' 6 labelled and 3 held by name)", len(snap.Pods))
			}
			var gets []string
			for _, a := range kube.Actions() {
				if a.GetResource().Resource != "pods" {
					continue
				}
				switch a := a.(type) {
				case k8stesting.ListAction:
					if sel := a.GetListRestrictions().Labels.String(); sel != appsv1.StatefulSetPodNameLabel {
						t.Errorf("pods LISTed with label selector %q", sel)
					}
				case k8stesting.WatchAction:
					if sel := a.GetWatchRestrictions().Labels.String(); sel != appsv1.StatefulSetPodNameLabel {
						t.Errorf("pods WATCHed with label selector %q", sel)
					}
				case k8stesting.GetAction:
					gets = append(gets, a.GetNamespace()+"/"+a.GetName())
				default:
					t.Errorf("pods %s", a.GetVerb())
				}
			}
			// The ordinals no labelled pod holds, each GET once within its TTL: web-2, cache-1, db-1.
			sort.Strings(gets)
			if fmt.Sprint(gets) != "[bank/db-1 shop/cache-1 shop/web-2]" {
				t.Errorf("pods GET %v; want [bank/db-1 shop/cache-1 shop/web-2]", gets)
			}
		})
	}
}
