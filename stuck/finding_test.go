package stuck_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestDeepCopySharesNothing: a copy's hand-offs, the patch's admission answer included, are its own.
func TestDeepCopySharesNothing(t *testing.T) {
	f := stuck.Finding{Finding: apiv1.Finding{Code: apiv1.UnresolvedImageReference}, Target: &stuck.PodRef{Name: "web-0"},
		Patch:       &stuck.ImagePatch{Path: "/p", From: "a", To: "b", Admission: &apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed}},
		FailingPods: []string{"web-0"}}
	c := f.DeepCopy()
	c.Target.Name, c.Patch.To, c.Patch.Admission.Result, c.FailingPods[0] = "x", "x", apiv1.AdmissionDiffers, "x"
	if f.Target.Name != "web-0" || f.Patch.To != "b" || f.Patch.Admission.Result != apiv1.AdmissionConfirmed || f.FailingPods[0] != "web-0" {
		t.Errorf("the copy changed the original: %+v %+v %+v %v", f.Target, f.Patch, f.Patch.Admission, f.FailingPods)
	}
}
