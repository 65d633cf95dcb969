package leader_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/internal/watch/leader"
)

// syncBuffer is a bytes.Buffer safe for the elector's and the test's goroutines.
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

func holder(t *testing.T, kube *fake.Clientset) string {
	t.Helper()
	lease, err := kube.CoordinationV1().Leases("stsdiag").Get(context.Background(), "stsdiag-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil {
		return *h
	}
	return ""
}

var lease = leader.Lease{Namespace: "stsdiag", Name: "stsdiag-watch", Identity: "replica-a"}

// TestFailedLeadGivesTheLeaseBack: the work fails while leading: Run returns its error within
// seconds, not a campaign later, and the Lease is held by no one.
func TestFailedLeadGivesTheLeaseBack(t *testing.T) {
	kube := fake.NewClientset()
	var log syncBuffer
	e := leader.New(lease, kube.CoordinationV1(), &log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("cannot list pods")
	leads, stops := 0, 0
	start := time.Now()
	err := e.Run(ctx, func(context.Context) error { leads++; return boom }, func() { stops++ })
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want the work's error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("gave up after %s", took)
	}
	if leads != 1 || stops != 1 {
		t.Errorf("led %d times, stopped %d times; want 1 and 1", leads, stops)
	}
	if h := holder(t, kube); h != "" {
		t.Errorf("the Lease is still held by %q", h)
	}
	if want := "replica-a leads (Lease stsdiag/stsdiag-watch)\nreplica-a stopped leading\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}

// TestLeadsUntilCancelled: the work runs while this process holds the Lease, its context ends
// with ctx, Run returns nil and the Lease is given back; /healthz's watchdog is healthy meanwhile.
func TestLeadsUntilCancelled(t *testing.T) {
	kube := fake.NewClientset()
	e := leader.New(lease, kube.CoordinationV1(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(term context.Context) error {
			close(leading)
			<-term.Done()
			return nil
		}, func() {})
	}()
	select {
	case <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	if h := holder(t, kube); h != "replica-a" {
		t.Errorf("holder %q while leading", h)
	}
	if err := e.Healthy(nil); err != nil {
		t.Errorf("watchdog while leading: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with ctx")
	}
	if h := holder(t, kube); h != "" {
		t.Errorf("the Lease is still held by %q", h)
	}
}
