package stuck_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestScenarios runs every folder of testdata/stuck.
func TestScenarios(t *testing.T) {
	snapshottest.Run(t, "../testdata/stuck", func(s *stuck.Objects, gates map[string]bool) ([]apiv1.Finding, []apiv1.StatefulSetSummary) {
		opts := stuck.DefaultOptions()
		opts.FeatureGates = gates
		res := stuck.Diagnose(s, opts)
		explain.Findings(res.Findings, explain.Options{CLI: "kubectl"})
		return model.PublicFindings(res.Findings), model.Summaries(res.StatefulSets, res.Findings)
	})
}
