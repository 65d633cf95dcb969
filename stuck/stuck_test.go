package stuck_test

import (
	"testing"

	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestScenarios runs every folder of testdata/stuck.
func TestScenarios(t *testing.T) {
	snapshottest.Run(t, "../testdata/stuck/*", func(s *snapshot.Snapshot) ([]report.Finding, []report.StatefulSetSummary) {
		res := stuck.Diagnose(s, stuck.DefaultOptions())
		return res.Findings, res.StatefulSets
	})
}
