package gather_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

var lws = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// recreatedOwner is a cluster where a terminating StatefulSet's LeaderWorkerSet was deleted and
// recreated: the owner reference says UID old, the object now has UID new.
func recreatedOwner() gather.Clients {
	deleted := metav1.Now()
	controller := true
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "lws-0", Namespace: "shop", DeletionTimestamp: &deleted,
		Finalizers:      []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "lws", UID: "old", Controller: &controller}}}}
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "leaderworkerset.x-k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "leaderworkersets", Namespaced: true, Kind: "LeaderWorkerSet"}}}}
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
	owner.SetKind("LeaderWorkerSet")
	owner.SetNamespace("shop")
	owner.SetName("lws")
	owner.SetUID("new")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{lws: "LeaderWorkerSetList"}, owner)
	return gather.Clients{Clients: read.Clients{Kube: kube, Dynamic: dyn}}
}

func owners(s *stuck.Objects) string {
	var out []string
	for _, o := range s.Owners {
		out = append(out, fmt.Sprintf("%s/%s exists=%v uid=%s", o.Kind, o.Name, o.Exists, o.UID))
	}
	return fmt.Sprint(out)
}

func gets(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "get" && a.GetResource() == lws {
			n++
		}
	}
	return n
}

// calls counts the requests but the informers' WATCHes (which may start after their caches synced).
func calls(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

func TestGatherLooksUpOwners(t *testing.T) {
	c := recreatedOwner()
	s, warnings, err := gather.Gather(context.Background(), c, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v warnings %v", err, warnings)
	}
	if got := owners(s); got != "[LeaderWorkerSet/lws exists=true uid=new]" {
		t.Errorf("owners %s", got)
	}
}

// TestLiveLooksUpOwnersOnlyWhenAsked: reading Live's caches never calls the API; Refresh
// GETs each owner at most once per 10 s, and the snapshots that follow carry what it found.
func TestLiveLooksUpOwnersOnlyWhenAsked(t *testing.T) {
	c := recreatedOwner()
	dyn := c.Dynamic.(*dynamicfake.FakeDynamicClient)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live, _, err := gather.StartLive(ctx, c, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}, nil)
	if err != nil {
		t.Fatal(err)
	}
	requests := calls(c.Kube.(*fake.Clientset).Actions())
	s, err := live.Cached()
	if err != nil {
		t.Fatal(err)
	}
	if got := owners(s) + owners(live.CachedOf("shop", "lws-0")); got != "[][]" {
		t.Errorf("owners before any lookup: %s", got)
	}
	if n := calls(c.Kube.(*fake.Clientset).Actions()) - requests + len(dyn.Actions()); n != 0 {
		t.Errorf("reading the caches made %d requests", n)
	}
	if warnings := live.Refresh(ctx, "shop"); len(warnings) != 0 || gets(dyn.Actions()) != 1 {
		t.Fatalf("warnings %v, %d GETs, want 1", warnings, gets(dyn.Actions()))
	}
	s, _ = live.Cached()
	if got := owners(s) + owners(live.CachedOf("shop", "lws-0")); got != "[LeaderWorkerSet/lws exists=true uid=new][LeaderWorkerSet/lws exists=true uid=new]" {
		t.Errorf("owners after the lookup: %s", got)
	}
	s, warnings, err := live.Snapshot(ctx)
	if err != nil || len(warnings) != 0 || gets(dyn.Actions()) != 1 || owners(s) != "[LeaderWorkerSet/lws exists=true uid=new]" {
		t.Errorf("Snapshot within 10 s: err %v warnings %v, %d GETs (want 1), owners %s", err, warnings, gets(dyn.Actions()), owners(s))
	}
}

// TestLiveIgnoresNodeHeartbeats: a node's heartbeat changes nothing diagnosis reads and is not
// reported; a change of its Ready status is.
func TestLiveIgnoresNodeHeartbeats(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	kube := fake.NewClientset(append(objects(1), node)...)
	seen := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := gather.StartLive(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}, func(obj any, _ bool) {
		if n, ok := obj.(*corev1.Node); ok {
			seen <- fmt.Sprintf("%s Ready=%s", n.Name, n.Status.Conditions[0].Status)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	next := func() string {
		select {
		case got := <-seen:
			return got
		case <-time.After(10 * time.Second):
			return "nothing"
		}
	}
	if got := next(); got != "n1 Ready=True" {
		t.Fatalf("initial fill: %s", got)
	}
	nodes := kube.CoreV1().Nodes()
	node.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "n1 Ready=False" {
		t.Errorf("after a heartbeat and a Ready change: %s first", got)
	}
}
