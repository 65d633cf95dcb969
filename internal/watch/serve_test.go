package watch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/watch"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestLeaderThatCannotStartGivesTheLeaseBack: the ServiceAccount may not list pods; the replica
// that wins the Lease cannot start its monitor. It must release the Lease and fail within
// seconds (the Deployment restarts it) instead of holding the Lease with nothing running.
func TestLeaderThatCannotStartGivesTheLeaseBack(t *testing.T) {
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := watch.Serve(ctx, watch.ServeOptions{
		Clients: gather.Clients{Clients: read.Clients{Kube: kube}}, Scope: gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever},
		LeaderElect: true, LeaseNamespace: "stsdiag", LeaseName: "stsdiag-watch", Identity: "replica-a",
	})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want the monitor's forbidden error, got %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("gave up after %s", took)
	}
	lease, err := kube.CoordinationV1().Leases("stsdiag").Get(context.Background(), "stsdiag-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q", *h)
	}
}
