package verdict_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
)

func TestMergeFleet(t *testing.T) {
	stuckRes := model.NewWaitResult(apiv1.WaitStuck, "1 finding(s) held for 30s")
	stuckRes.Findings = []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, StatefulSet: "web", Pod: "web-0"}}}
	stuckRes.StatefulSets = []apiv1.StatefulSetSummary{{Name: "web", Status: apiv1.StatusStuck}}
	done := model.NewWaitResult(apiv1.WaitComplete, "rollout complete")
	done.StatefulSets = []apiv1.StatefulSetSummary{{Name: "web", Status: apiv1.StatusComplete}}
	cut := model.NewWaitResult(apiv1.WaitInterrupted, "interrupted while the rollout was still progressing")

	got := explain.Word(verdict.MergeFleet([]string{"east", "west", "north"}, []*model.WaitResult{done, stuckRes, cut}))
	if got.Result != apiv1.WaitStuck || len(got.Findings) != 1 || got.Findings[0].Context != "west" {
		t.Fatalf("%+v", got)
	}
	if len(got.StatefulSets) != 2 || got.StatefulSets[0].Context != "east" || got.StatefulSets[1].Context != "west" {
		t.Errorf("statefulSets %+v", got.StatefulSets)
	}
	want := "west: Stuck: 1 finding(s) held for 30s; north: Interrupted: interrupted while the rollout was still progressing"
	if got.Message != want {
		t.Errorf("message %q, want %q", got.Message, want)
	}
	if all := explain.Word(verdict.MergeFleet([]string{"a", "b"}, []*model.WaitResult{done, done})); all.Result != apiv1.WaitComplete || all.Message != "every rollout complete" {
		t.Errorf("all complete: %+v", all)
	}
	timedOut := model.NewWaitResult(apiv1.WaitTimedOut, "timed out")
	if r := explain.Word(verdict.MergeFleet([]string{"a", "b"}, []*model.WaitResult{timedOut, model.NewWaitResult(apiv1.WaitNotFound, "gone")})); r.Result != apiv1.WaitNotFound {
		t.Errorf("a cluster that cannot be evaluated is the worst: %s", r.Result)
	}
	if !verdict.Decisive(apiv1.WaitStuck) || verdict.Decisive(apiv1.WaitTimedOut) {
		t.Error("only Stuck, NotFound and Unevaluable end every cluster's wait")
	}
}

func TestMergeFleetActionsCarryTheirContext(t *testing.T) {
	east := model.NewWaitResult(apiv1.WaitComplete, "rollout complete")
	east.Actions = []model.Action{{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Result: apiv1.ResultDone}}}
	west := model.NewWaitResult(apiv1.WaitComplete, "rollout complete")
	west.Actions = []model.Action{{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-1", Result: apiv1.ResultDone}}}
	got := explain.Word(verdict.MergeFleet([]string{"east", "west"}, []*model.WaitResult{east, west}))
	if len(got.Actions) != 2 || got.Actions[0].Context != "east" || got.Actions[0].Pod != "web-0" ||
		got.Actions[1].Context != "west" || got.Actions[1].Pod != "web-1" {
		t.Errorf("actions %+v, want web-0 in east and web-1 in west", got.Actions)
	}
	if east.Actions[0].Context != "" {
		t.Errorf("the context's own result was changed: %+v", east.Actions[0])
	}
}
