package stuck_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestAdmissionWording locks the words of findings whose prediction admission was asked about
// (--confirm-with-admission), in testdata/golden/admission.txt: confirmed, another image written,
// the image left as it is, and not asked for want of permission. Run with -update to accept a
// change of wording.
func TestAdmissionWording(t *testing.T) {
	const (
		d1 = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
		r  = "image-registry.openshift-image-registry.svc:5000"
	)
	snap, err := stuck.LoadFile("../testdata/admission/objects.yaml", snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	snap.Admission = map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{
		{Namespace: "shop", Image: "myapp:1.0.1"}:                            {Written: r + "/shop/myapp@" + d1},
		{Namespace: "shop", Image: "tools:2"}:                                {Written: "tools:2"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"}: {Written: r + "/shop/myapp:1.0.1"},
		{Namespace: "other", Image: "myapp:9.9"}:                             {Error: `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "other"`},
	}
	var b strings.Builder
	b.WriteString("# Findings whose prediction the API server's admission was asked about, as stuck words them.\n")
	for _, f := range stuck.Diagnose(snap, stuck.DefaultOptions()).Findings {
		if f.Details.Admission == nil {
			continue
		}
		adm, err := json.Marshal(f.Details.Admission)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n%sdetails.admission: %s\n", words("admission", f), adm)
		if f.Patch != nil {
			fmt.Fprintf(&b, "patch: %s → %s\n", f.Patch.From, f.Patch.To)
		}
	}
	snapshottest.Golden(t, filepath.Join("admission.txt"), []byte(b.String()), *update)
}
