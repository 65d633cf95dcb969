package watch_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/watch"
	"github.com/stsdiag/stsdiag/internal/watch/leader"
	"github.com/stsdiag/stsdiag/internal/watch/serve"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestLeaderThatCannotStartGivesTheLeaseBack: the ServiceAccount may not list pods; the replica
// that wins the Lease cannot start its controller. It must release the Lease and fail within
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
		Lease: &leader.Lease{Namespace: "stsdiag", Name: "stsdiag-watch", Identity: "replica-a"},
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

// TestServeServesWatch: Serve serves the controller's metrics and its readiness (--metrics-insecure
// on one address: /metrics, /healthz and /readyz on one plain listener); /readyz answers 200 once
// the caches synced.
func TestServeServesWatch(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- watch.Serve(ctx, watch.ServeOptions{
			Clients: gather.Clients{Clients: read.Clients{Kube: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})}},
			Scope:   gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever},
			HTTP:    serve.Options{MetricsAddr: addr, HealthAddr: addr, MetricsInsecure: true}, Log: &log,
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("never ready: %s", log.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "stsdiag_diagnosis_duration_seconds") {
		t.Errorf("/metrics: %d %s", resp.StatusCode, body)
	}
	if want := "serving /metrics, /healthz and /readyz on " + addr + " (plain HTTP, no authentication)\n"; !strings.HasPrefix(log.String(), want) {
		t.Errorf("log %q, want it to start %q", log.String(), want)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's and the test's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
