package stuck_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// imageCodes are the codes of OpenShift's image lookup (images.go, triggers.go).
var imageCodes = map[apiv1.Code]bool{
	apiv1.UnresolvedImageReference: true, apiv1.ImageStreamTagNotFound: true, apiv1.ImageLookupDisabled: true,
	apiv1.ImageResolutionSkipped: true, apiv1.ImageTriggerInvalid: true, apiv1.ImageTriggerStale: true,
}

// scenarios diagnoses a scenario as check does, keeping the findings of one family: the
// controller's rules (testdata/stuck) or OpenShift's image lookup (testdata/resolver), each
// folder's expectations listing its own family's.
func scenarios(images bool, cli string) snapshottest.Diagnosis {
	return func(s *stuck.Objects, gates map[string]bool) ([]apiv1.Finding, []apiv1.StatefulSetSummary) {
		opts := stuck.DefaultOptions()
		opts.FeatureGates, opts.CLI = gates, cli
		res := stuck.Diagnose(s, opts)
		var kept []stuck.Finding
		for _, f := range res.Findings {
			if imageCodes[f.Code] == images {
				kept = append(kept, f)
			}
		}
		return model.PublicFindings(kept), res.StatefulSets
	}
}

// TestScenarios runs every folder of testdata/stuck: the controller's rules.
func TestScenarios(t *testing.T) {
	snapshottest.Run(t, "../testdata/stuck", scenarios(false, "kubectl"))
}

// TestImageScenarios runs every folder of testdata/resolver: one per rule of OpenShift's image
// lookup.
func TestImageScenarios(t *testing.T) {
	snapshottest.Run(t, "../testdata/resolver", scenarios(true, "oc"))
}

// imageDiagnosis is the image lookup's findings of a diagnosis with check's options.
func imageDiagnosis(s *stuck.Objects) []stuck.Finding {
	var out []stuck.Finding
	for _, f := range stuck.Diagnose(s, stuck.DefaultOptions()).Findings {
		if imageCodes[f.Code] {
			out = append(out, f)
		}
	}
	return out
}
