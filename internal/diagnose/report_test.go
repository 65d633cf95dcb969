package diagnose_test

import (
	"path/filepath"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestLinksUnresolvedImage: a pod failing on an unresolved ImageStream name gets, as a fact, the
// image the resolver computed, and its remedy sets it (in oc words on OpenShift).
func TestLinksUnresolvedImage(t *testing.T) {
	const resolved = "image-registry.openshift-image-registry.svc:5000/shop/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "resolver", "forced-names", "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	linked := 0
	for _, f := range diagnose.Report(snap, stuck.DefaultOptions()).Findings {
		failing, ok := f.Facts.(facts.Failing)
		if !ok || failing.UnresolvedTo == "" {
			continue
		}
		linked++
		want := `the image is an unresolved ImageStream name: set container "app" to ` + resolved +
			" (see UnresolvedImageReference for the exact patch), then delete the stuck pod: oc delete pod quay-0 -n shop"
		if f.Code != apiv1.CurrentRevisionFailing || f.Pod != "quay-0" || failing.UnresolvedTo != resolved || f.Remedy != want {
			t.Errorf("linked %s %s to %q, remedy %q", f.Code, f.Pod, failing.UnresolvedTo, f.Remedy)
		}
	}
	if linked != 1 {
		t.Errorf("%d findings linked, want 1", linked)
	}
}
