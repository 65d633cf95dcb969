package explain_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
)

// TestPatchAdmission: what a plan says of a patch, per answer.
func TestPatchAdmission(t *testing.T) {
	cases := []struct {
		check *apiv1.AdmissionCheck
		want  string
	}{
		{nil, ""},
		{&apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: "a@sha256:1", Written: "a@sha256:1"}, "confirmed by admission (server-side dry run)"},
		{&apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: "a@sha256:1", Written: "a:1"}, "admission's answer (server-side dry run); stsdiag predicted a@sha256:1"},
		{&apiv1.AdmissionCheck{Result: apiv1.AdmissionUnconfirmed, Predicted: "a@sha256:1", Error: "pods is forbidden"}, "not confirmed by admission: pods is forbidden"},
	}
	for _, c := range cases {
		if got := explain.PatchAdmission(c.check); got != c.want {
			t.Errorf("%+v: %q, want %q", c.check, got, c.want)
		}
	}
}
