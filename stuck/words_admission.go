package stuck

import (
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// admissionNote is the sentence a finding's message ends with when admission was asked about
// its prediction (details.admission), "" when it was not.
func (w words) admissionNote() string {
	a := w.f.Details.Admission
	if a == nil {
		return ""
	}
	probe := "a server-side dry run of a probe pod in namespace " + w.f.Namespace
	switch {
	case a.Result == apiv1.AdmissionConfirmed:
		return fmt.Sprintf("; confirmed by the API server's admission (%s wrote the same)", probe)
	case a.Result == apiv1.AdmissionDiffers && w.f.ResolvedImage == "": // it wrote the name asked about
		return fmt.Sprintf("; but the API server's admission leaves %q as it is (%s), not %s as stsdiag predicted: stsdiag trusts the server, so nothing is patched",
			a.Written, probe, a.Predicted)
	case a.Result == apiv1.AdmissionDiffers:
		return fmt.Sprintf("; the API server's admission writes %s (%s), not %s as stsdiag predicted: stsdiag trusts the server and uses %s",
			a.Written, probe, a.Predicted, a.Written)
	}
	return fmt.Sprintf("; not confirmed with the API server's admission (%s): %s", probe, a.Error)
}

// admissionShort is what the table adds to the short message when admission was asked.
func admissionShort(a *apiv1.AdmissionCheck) string {
	switch {
	case a == nil:
		return ""
	case a.Result == apiv1.AdmissionConfirmed:
		return " [admission: confirmed]"
	case a.Result == apiv1.AdmissionDiffers:
		return " [admission: differs, server's answer used]"
	}
	return " [admission: not confirmed]"
}

// differs reports whether admission answered with another image than predicted.
func differs(a *apiv1.AdmissionCheck) bool {
	return a != nil && a.Result == apiv1.AdmissionDiffers
}
