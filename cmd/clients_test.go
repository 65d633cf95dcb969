package cmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClientsListRevisionsAsMetadata: the clients check -A triages with have a metadata client,
// whose LIST of ControllerRevisions asks the server for PartialObjectMetadataList (no revision
// data on the wire).
func TestClientsListRevisionsAsMetadata(t *testing.T) {
	var mu sync.Mutex
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/apps/v1/controllerrevisions" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		accept = r.Header.Get("Accept")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[{"metadata":{"name":"web-a","namespace":"shop"}}]}`))
	}))
	defer srv.Close()
	c, err := newClients(configFlagsFor(kubeconfigFor(t, srv.URL)), reads)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata == nil {
		t.Fatal("no metadata client: check -A would LIST whole ControllerRevisions")
	}
	l, err := c.Metadata.Resource(appsv1.SchemeGroupVersion.WithResource("controllerrevisions")).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "web-a" {
		t.Fatalf("items %v", l.Items)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") {
		t.Errorf("Accept %q: want PartialObjectMetadataList as protobuf first", accept)
	}
}

// A signal cancels the command's context; a command that has not returned within the grace
// (a request that never answers) ends the process with 130 and one line, one that returns in
// time does not.
func TestExitIfStuck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		signal    bool
		returnsIn time.Duration // -1: never
		wantExit  int
	}{
		{"a command stuck after a signal", true, -1, ExitInterrupted},
		{"a command that stops after a signal", true, 0, -1},
		{"no signal", false, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			var out bytes.Buffer
			exited := make(chan int, 1)
			finished := make(chan struct{})
			go func() {
				defer close(finished)
				exitIfStuck(ctx, done, &out, 50*time.Millisecond, func(code int) { exited <- code })
			}()
			if tc.signal {
				cancel()
			}
			if tc.returnsIn >= 0 {
				close(done)
			}
			<-finished
			got := -1
			select {
			case got = <-exited:
			default:
			}
			if got != tc.wantExit {
				t.Errorf("exit %d, want %d (-1: none)", got, tc.wantExit)
			}
			if want := tc.wantExit == ExitInterrupted; want != strings.HasPrefix(out.String(), "error: interrupted, and the command did not stop within 50ms (is a request to the API server hanging?)") {
				t.Errorf("said %q", out.String())
			}
		})
	}
}
