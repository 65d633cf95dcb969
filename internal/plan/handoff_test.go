package plan_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestPlanFromDiagnosis plans from what stuck and resolver really produce (not hand-written
// findings), so a hand-off that stops being filled in fails here.
func TestPlanFromDiagnosis(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		scenario string
		want     []model.Action
	}{
		{"stuck/stale-revision-stuck-3-replicas", []model.Action{
			{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "web-0-uid"}, Cause: apiv1.StaleRevisionStuck},
		}},
		// A prediction that failed (the controller did not replace the crash-looping pod at its
		// Ready moment by its deadline): the pod is deleted like any StaleRevisionStuck one.
		{"stuck/kubelet-crash-loop-ready-missed", []model.Action{
			{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "staleflip", Pod: "staleflip-1", UID: "staleflip-1-uid"}, Cause: apiv1.StaleRevisionStuck},
		}},
		// Still within the deadline: nothing to delete yet.
		{"stuck/kubelet-crash-loop-replace-pending", nil},
		{"resolver/seed", []model.Action{
			{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "demo", StatefulSet: "web", Container: "app", From: "statefulset-issue-demo:1.0.1",
				To:  "image-registry.openshift-image-registry.svc:5000/demo/statefulset-issue-demo@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
				UID: "web-uid"}, Cause: apiv1.UnresolvedImageReference, Path: "/spec/template/spec/containers/0/image"},
			{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "demo", StatefulSet: "web", Pod: "web-0"}, Cause: apiv1.UnresolvedImageReference, AfterPatch: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			snap, err := stuck.LoadFile(filepath.Join("..", "..", "testdata", c.scenario, "objects.yaml"), now)
			if err != nil {
				t.Fatal(err)
			}
			actions := plan.Planner{}.Plan(diagnose.Report(snap, stuck.DefaultOptions()), snap).Actions
			if len(actions) != len(c.want) {
				t.Fatalf("planned %+v, want %+v", actions, c.want)
			}
			for i := range c.want {
				if !reflect.DeepEqual(actions[i], c.want[i]) {
					t.Errorf("action %d:\n got %+v\nwant %+v", i, actions[i], c.want[i])
				}
			}
		})
	}
}
