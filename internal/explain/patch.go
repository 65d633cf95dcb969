package explain

import (
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// PatchAdmission is what a plan says of an image patch when admission was asked about the image
// it writes (fix --confirm-with-admission), "" when it was not.
func PatchAdmission(a *apiv1.AdmissionCheck) string {
	switch {
	case a == nil:
		return ""
	case a.Result == apiv1.AdmissionConfirmed:
		return "confirmed by admission (server-side dry run)"
	case a.Result == apiv1.AdmissionDiffers:
		return fmt.Sprintf("admission's answer (server-side dry run); stsdiag predicted %s", a.Predicted)
	}
	return "not confirmed by admission: " + a.Error
}
