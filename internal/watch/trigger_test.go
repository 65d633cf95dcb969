package watch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/watch"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestTriggerRepairEventReason: watch --fix patches the stale image trigger of
// resolver/triggers-stale's stalefail and records the repair Event with the reason of the
// finding it repairs, ImageTriggerStale — not UnresolvedImageReference, which an Event reason
// rebuilt from the action kind (PatchImage) said.
func TestTriggerRepairEventReason(t *testing.T) {
	snap, err := stuck.LoadFile("../../testdata/resolver/triggers-stale/objects.yaml", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	objects := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for i := range snap.StatefulSets {
		objects = append(objects, &snap.StatefulSets[i])
	}
	for i := range snap.Pods {
		objects = append(objects, &snap.Pods[i])
	}
	var streams []runtime.Object
	for i := range snap.ImageStreams {
		streams = append(streams, &snap.ImageStreams[i])
	}
	kube := fake.NewClientset(objects...)
	clients := gather.Clients{Clients: read.Clients{Kube: kube, Image: imagefake.NewClientset(streams...)}}
	ctrl := watch.New(clients, gather.Scope{Namespace: "shop", OpenShift: openshift.ModeAlways},
		watch.Options{Fix: true, NoConditions: true}, watch.NewMetrics())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = ctrl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	var repairs map[string]string // StatefulSet → reason of its repair Event of the patch
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		repairs = map[string]string{}
		for _, e := range events.Items {
			if strings.HasPrefix(e.Message, "stsdiag repair done: patch") {
				repairs[e.InvolvedObject.Name] = e.Reason
			}
		}
		return repairs["stalefail"] != "", nil
	})
	if err != nil {
		t.Fatalf("no repair Event for the patch of stalefail: %v", repairs)
	}
	if repairs["stalefail"] != "ImageTriggerStale" {
		t.Errorf("the patch of stalefail was recorded with reason %q, want ImageTriggerStale", repairs["stalefail"])
	}
}
