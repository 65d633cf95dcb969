package explain_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
)

// TestOutcomeWordsAreGolden: every outcome reason has its golden file in
// testdata/golden/actions/ (written by the executor's tests, internal/repair
// TestOutcomeWording, and fix's for NotConfirmed), no golden file names an unknown reason, and
// what explain says of a typed outcome here is a message of that reason's file.
func TestOutcomeWordsAreGolden(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "golden", "actions")
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if reason := model.OutcomeReason(strings.TrimSuffix(filepath.Base(f), ".txt")); !slices.Contains(model.OutcomeReasons, reason) {
			t.Errorf("%s: no outcome reason %s", f, reason)
		}
	}
	web := apiv1.Action{Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "uid-web-0"}
	with := func(kind apiv1.ActionKind, disruption apiv1.DisruptionMode, o model.Outcome) model.Action {
		a := model.Action{Action: web}
		a.Action.Action, a.Disruption = kind, disruption
		a.Conclude(o)
		return a
	}
	samples := map[model.OutcomeReason]model.Action{
		model.OutcomeDone:                 with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeDone}),
		model.OutcomeDryRun:               with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeDryRun, Eviction: &model.EvictionPrediction{Rule: model.EvictionBudgetExhausted, Budget: "web-pdb", CurrentHealthy: 2, DesiredHealthy: 3}}),
		model.OutcomeDryRunAfterPatch:     with(apiv1.DeletePod, "", model.Outcome{Reason: model.OutcomeDryRunAfterPatch}),
		model.OutcomeServerDryRunAccepted: with(apiv1.ForceDeletePod, "", model.Outcome{Reason: model.OutcomeServerDryRunAccepted}),
		model.OutcomeNotProven:            with(apiv1.DeletePod, "", model.Outcome{Reason: model.OutcomeNotProven}),
		model.OutcomeNotNeeded:            with(apiv1.PatchImage, "", model.Outcome{Reason: model.OutcomeNotNeeded}),
		model.OutcomeChangedAgain:         with(apiv1.Rollback, "", model.Outcome{Reason: model.OutcomeChangedAgain}),
		model.OutcomeGone:                 with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeGone}),
		model.OutcomeReplaced:             with(apiv1.DeletePod, apiv1.DisruptionDelete, model.Outcome{Reason: model.OutcomeReplaced}),
		model.OutcomeForbidden: with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeForbidden, Verb: "create", Resource: "pods/eviction",
			Err: `pods/eviction "web-0" is forbidden: User "ci" cannot do this`}),
		model.OutcomeRefusedByBudget: func() model.Action {
			a := with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeRefusedByBudget, Code: 429, StatusReason: "TooManyRequests"})
			a.DisruptionBudget = &apiv1.DisruptionBudget{Name: "db-pdb", DesiredHealthy: ptr.To[int32](3), CurrentHealthy: ptr.To[int32](2),
				Message: "The disruption budget db-pdb needs 3 healthy pods and has 2 currently"}
			return a
		}(),
		model.OutcomeMultipleBudgets:    with(apiv1.DeletePod, apiv1.DisruptionEvict, model.Outcome{Reason: model.OutcomeMultipleBudgets}),
		model.OutcomeNotPatched:         with(apiv1.DeletePod, "", model.Outcome{Reason: model.OutcomeNotPatched}),
		model.OutcomeNotObserved:        with(apiv1.DeletePod, "", model.Outcome{Reason: model.OutcomeNotObserved, ObservedGeneration: 2, PatchedGeneration: 3}),
		model.OutcomeNotStuckAfterPatch: with(apiv1.DeletePod, "", model.Outcome{Reason: model.OutcomeNotStuckAfterPatch}),
		model.OutcomeFailed:             with(apiv1.DeletePod, apiv1.DisruptionDelete, model.Outcome{Reason: model.OutcomeFailed, Err: "etcd cluster is unavailable"}),
		model.OutcomeNotConfirmed:       with(apiv1.DeletePod, apiv1.DisruptionDelete, model.Outcome{Reason: model.OutcomeNotConfirmed}),
	}
	for _, reason := range model.OutcomeReasons {
		t.Run(string(reason), func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join(dir, string(reason)+".txt"))
			if err != nil {
				t.Fatalf("outcome reason %s has no golden file: %v", reason, err)
			}
			a, ok := samples[reason]
			if !ok {
				t.Fatalf("no sample of %s", reason)
			}
			explain.Outcome(&a)
			if a.Result != reason.Result() || !slices.Contains(strings.Split(string(golden), "\n"), "message: "+a.Message) {
				t.Errorf("%s %s, a message %s.txt does not hold:\n%s", a.Result, reason, reason, a.Message)
			}
		})
	}
}
