package render_test

import (
	"bytes"
	"path/filepath"
	"sort"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestExplainGolden renders explain's table (and, for one scenario, its YAML) for scenarios that
// between them show every next step of the controller, and compares them with
// testdata/golden/explain. Run with -update to accept a change.
func TestExplainGolden(t *testing.T) {
	scenarios := map[string]string{
		"create-failed-podsecurity":            "web",
		"create-failed-limitrange-mid-rollout": "web",
		"rollout-blocked-pending":              "db",
		"not-ready-current":                    "",
		"min-ready-progressing":                "web",
		"pod-stuck-terminating-finalizer":      "",
		"rolling-update-in-progress":           "",
		"on-delete":                            "web",
		"failed-pod":                           "",
		"scale-down-in-progress":               "web",
		"partition-below-stuck":                "",
		"on-delete-healthy":                    "web",
		"parallel-stale-stuck":                 "web",
		"kubelet-crash-loop-replace-pending":   "staleflip",
	}
	seen := map[string]bool{}
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, scenario := range names {
		t.Run(scenario, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", "stuck", scenario, "objects.yaml"), snapshottest.Now)
			if err != nil {
				t.Fatal(err)
			}
			set := snap.StatefulSets[0]
			if name := scenarios[scenario]; name != "" && set.Name != name {
				t.Fatalf("first StatefulSet is %s, want %s", set.Name, name)
			}
			e := diagnose.Explanation(snap, set.Namespace, set.Name, stuck.DefaultOptions())
			if e == nil {
				t.Fatal("no such StatefulSet")
			}
			for _, o := range e.Ordinals {
				seen[o.Next] = true
			}
			var buf bytes.Buffer
			if err := render.ExplanationTable(&buf, e, snapshottest.Now); err != nil {
				t.Fatal(err)
			}
			snapshottest.Golden(t, filepath.Join("explain", scenario+".txt"), buf.Bytes(), *update)
			if scenario == "create-failed-podsecurity" {
				flags := render.NewPrintFlags()
				flags.OutputFormat = "yaml"
				buf.Reset()
				if err := render.Explanation(&buf, e, flags, snapshottest.Now); err != nil {
					t.Fatal(err)
				}
				snapshottest.Golden(t, filepath.Join("explain", scenario+".yaml"), buf.Bytes(), *update)
			}
		})
	}
	for _, step := range []string{apiv1.StepNothing, apiv1.StepCreate, apiv1.StepRecreateTerminal, apiv1.StepWaitRunning, apiv1.StepWaitReady,
		apiv1.StepWaitAvailable, apiv1.StepWaitTerminated, apiv1.StepDeleteToUpdate, apiv1.StepDeleteToScaleDown, apiv1.StepWaitManualDelete, apiv1.StepNotReached} {
		if !seen[step] {
			t.Errorf("no golden explanation shows the step %s", step)
		}
	}
}
