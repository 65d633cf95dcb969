package cmd

import (
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

type gates map[clientfeatures.Feature]bool

func (g gates) Enabled(f clientfeatures.Feature) bool { return g[f] }

// watch fills its informers by LISTs unless KUBE_FEATURE_WatchListClient says otherwise; other
// gates are client-go's.
func TestListInformers(t *testing.T) {
	g := listInformers{gates{clientfeatures.WatchListClient: true, clientfeatures.InformerResourceVersion: true}}
	if g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("WatchListClient on without KUBE_FEATURE_WatchListClient")
	}
	if !g.Enabled(clientfeatures.InformerResourceVersion) {
		t.Fatal("another gate changed")
	}
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	if !g.Enabled(clientfeatures.WatchListClient) {
		t.Fatal("KUBE_FEATURE_WatchListClient=true ignored")
	}
}
