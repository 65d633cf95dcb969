package watch

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// proofCluster: web-0 on the old revision in ImagePullBackOff under OrderedReady
// (kubernetes#67250), with resourceVersions as an API server writes them.
func proofCluster() []runtime.Object {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2, ResourceVersion: "7"},
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

// lists counts the LISTs of StatefulSets sent so far: the informer's first one, and one per
// proof that fell back to a fresh read.
func lists(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "statefulsets" {
			n++
		}
	}
	return n
}

// TestProofWaitsForTheCaches: watch's proof reads the informers' caches once they show every
// write of the repair, and a fresh LIST when they do not within cacheCatchUp: never the caches
// as they were before a write.
func TestProofWaitsForTheCaches(t *testing.T) {
	const catchUp = 300 * time.Millisecond
	setup := func(t *testing.T) (*fake.Clientset, repair.Prover) {
		t.Helper()
		kube := fake.NewClientset(proofCluster()...)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		c := New(gather.Clients{Clients: read.Clients{Kube: kube}}, testScope(), Options{Fix: true, Diagnosis: stuck.DefaultOptions()}, NewMetrics())
		c.cacheCatchUp = catchUp
		live, _, err := gather.StartLive(ctx, c.clients, c.scope, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.live.Store(live)
		return kube, c.prover("shop/web", "shop", "web")
	}
	patched := func(rv string) repair.Write {
		return repair.Write{Kind: apiv1.Rollback, Namespace: "shop", Name: "web", UID: "set-uid", ResourceVersion: rv, Generation: 3}
	}
	removed := repair.Write{Kind: apiv1.DeletePod, Namespace: "shop", Name: "web-0", UID: "pod-uid"}
	prove := func(t *testing.T, kube *fake.Clientset, p repair.Prover, after []repair.Write) (listed bool, took time.Duration, rv string) {
		t.Helper()
		before, start := lists(kube), time.Now()
		rep, snap, err := p(context.Background(), after)
		if err != nil {
			t.Fatal(err)
		}
		if rep == nil || len(snap.StatefulSets) != 1 {
			t.Fatalf("proof without the StatefulSet: %+v", snap)
		}
		return lists(kube) > before, time.Since(start), snap.StatefulSets[0].ResourceVersion
	}
	update := func(t *testing.T, kube *fake.Clientset, rv string) {
		t.Helper()
		set := proofCluster()[1].(*appsv1.StatefulSet)
		set.ResourceVersion, set.Generation = rv, 3
		if _, err := kube.AppsV1().StatefulSets("shop").Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("no write: the caches at once", func(t *testing.T) {
		kube, p := setup(t)
		if listed, took, _ := prove(t, kube, p, nil); listed || took > catchUp/2 {
			t.Errorf("listed %v after %s, want the caches at once", listed, took)
		}
	})
	t.Run("the caches already show a later version", func(t *testing.T) {
		kube, p := setup(t)
		if listed, _, _ := prove(t, kube, p, []repair.Write{patched("6")}); listed {
			t.Error("listed, though the cached StatefulSet (resourceVersion 7) is past the patch's 6")
		}
	})
	t.Run("the caches catch up", func(t *testing.T) {
		kube, p := setup(t)
		go func() {
			time.Sleep(100 * time.Millisecond)
			update(t, kube, "9")
		}()
		listed, took, rv := prove(t, kube, p, []repair.Write{patched("9")})
		if listed || rv != "9" || took < 100*time.Millisecond {
			t.Errorf("listed %v, resourceVersion %s after %s: want the caches once they show resourceVersion 9", listed, rv, took)
		}
	})
	t.Run("the caches lag: a fresh LIST", func(t *testing.T) {
		kube, p := setup(t)
		// The patch answered resourceVersion 9; the caches never see it (as if their watch broke).
		listed, took, _ := prove(t, kube, p, []repair.Write{patched("9")})
		if !listed || took < catchUp {
			t.Errorf("listed %v after %s: want a fresh LIST once %s passed", listed, took, catchUp)
		}
	})
	t.Run("a removed pod still cached: a fresh LIST", func(t *testing.T) {
		kube, p := setup(t)
		if listed, _, _ := prove(t, kube, p, []repair.Write{removed}); !listed {
			t.Error("proved on caches that still hold the pod the repair removed")
		}
	})
	t.Run("a removed pod the caches show terminating", func(t *testing.T) {
		kube, p := setup(t)
		pod := proofCluster()[2].(*corev1.Pod)
		pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		if _, err := kube.CoreV1().Pods("shop").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if listed, _, _ := prove(t, kube, p, []repair.Write{patched("6"), removed}); listed {
			t.Error("listed, though the caches show the pod terminating")
		}
	})
}

// TestCacheShows: which cached states show a write.
func TestCacheShows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cachedRV  string
		cachedUID string
		writtenRV string
		want      bool
	}{
		{"the very version", "9", "set-uid", "9", true},
		{"a later version", "10", "set-uid", "9", true},
		{"an earlier version", "8", "set-uid", "9", false},
		{"a longer number is later", "100", "set-uid", "99", true},
		{"another StatefulSet of that name", "10", "other-uid", "9", false},
		{"versions not integers: the very one", "a", "set-uid", "a", true},
		{"versions not integers: another", "b", "set-uid", "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := proofCluster()[1].(*appsv1.StatefulSet)
			set.ResourceVersion, set.UID = tc.cachedRV, types.UID(tc.cachedUID)
			kube := fake.NewClientset(proofCluster()[0], set)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			live, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, testScope(), nil)
			if err != nil {
				t.Fatal(err)
			}
			w := repair.Write{Kind: apiv1.PatchImage, Namespace: "shop", Name: "web", UID: "set-uid", ResourceVersion: tc.writtenRV}
			if got := cacheShows(live, w); got != tc.want {
				t.Errorf("cacheShows = %v, want %v", got, tc.want)
			}
		})
	}
}
