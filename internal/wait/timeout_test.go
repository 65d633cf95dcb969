package wait_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/wait"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestTimeoutNamesTheBudget: a rollout that progresses until the deadline is TimedOut, the
// verdict naming --timeout; a StatefulSet that does not exist is NotFound, in the
// error's words.
func TestTimeoutNamesTheBudget(t *testing.T) {
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "db-uid", Generation: 2},
			Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "db-a", UpdateRevision: "db-a"}})
	opts := wait.WaitOptions{Options: follow.Options{Diagnosis: stuck.DefaultOptions(), Hold: time.Hour}, Timeout: 600 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	res, err := wait.Wait(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", Names: []string{"db"}}, opts)
	if err != nil || res.Result != apiv1.WaitTimedOut || res.Message != "timed out after 600ms while the rollout was still progressing" {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if len(res.StatefulSets) != 1 || res.StatefulSets[0].Name != "db" || res.RolledBack != nil {
		t.Errorf("statefulSets %+v rolledBack %+v", res.StatefulSets, res.RolledBack)
	}
	res, err = wait.Wait(context.Background(), gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", Names: []string{"web"}}, opts)
	if err != nil || res.Result != apiv1.WaitNotFound || res.Message != `statefulset "web" in namespace "shop" not found` {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
}

// TestTimeoutBeforeTheCachesSync: an API server that accepts and never answers keeps the
// informers from syncing until --timeout: the verdict is TimedOut, not an error (exit 3, as a
// timeout while following is; not exit 2).
func TestTimeoutBeforeTheCachesSync(t *testing.T) {
	kube := silentServer(t)
	opts := wait.WaitOptions{Options: follow.Options{Diagnosis: stuck.DefaultOptions(), Hold: time.Hour}, Timeout: 500 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	res, err := wait.Wait(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{Namespace: "shop", Names: []string{"db"}}, opts)
	if err != nil || res.Result != apiv1.WaitTimedOut {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
}

// silentServer is a clientset of an API server that accepts every request and never answers.
func silentServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}
