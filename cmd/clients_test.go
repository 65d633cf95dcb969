package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
	c, err := clients(configFlagsFor(kubeconfigFor(t, srv.URL)), reads)
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
