package stuck_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestRecheckAt: a situation that becomes a finding only once a settle time or threshold has
// passed says when, so wait and watch diagnose again then even if nothing else changes.
func TestRecheckAt(t *testing.T) {
	cases := map[string]string{
		"volume-claim-binding":           "2026-11-25T12:00:08Z", // claim created 11:59:58 + 10s settle
		"pod-terminating-in-grace":       "2026-11-25T12:04:30Z", // deletionTimestamp 11:59:30 + 5m
		"not-ready-within-threshold":     "2026-11-25T12:04:00Z", // Ready=False since 11:59:00 + 5m
		"owner-deletion-in-progress":     "2026-11-25T12:04:20Z", // StatefulSet deleting since 11:59:20 + 5m
		"stale-revision-stuck-1-replica": "",                     // nothing pending
		// fresh-0 scheduled 11:59:48, its Secret volume failing + 30s mount settle
		"kubelet-failed-mount-settling": "2026-11-25T12:00:18Z",
		// run-0 restarted 11:59:59 after a 0s run: a crash loop until it has run 10s longer
		"kubelet-crash-loop": "2026-11-25T12:00:09Z",
	}
	for scenario, want := range cases {
		snap, err := stuck.LoadFile(filepath.Join("..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
		if err != nil {
			t.Fatal(err)
		}
		got := stuck.Diagnose(snap, stuck.DefaultOptions()).RecheckAt
		gotText := ""
		if !got.IsZero() {
			gotText = got.UTC().Format(time.RFC3339)
		}
		if gotText != want {
			t.Errorf("%s: RecheckAt %q, want %q", scenario, gotText, want)
		}
	}
}
