package verdict_test

import (
	"strings"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/verdict"
)

// TestNotObservedVerdict: a wait --fix that timed out because the controller never observed its
// patch says so (NotObserved); one that timed out with every repair made stays TimedOut.
func TestNotObservedVerdict(t *testing.T) {
	patch := model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "web", Result: apiv1.ResultDone}}
	skipped := model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Result: apiv1.ResultSkipped}, NotObserved: true}
	res := explain.Result(verdict.Decide(verdict.Facts{End: model.TimedOut{After: time.Minute}, Timeout: time.Minute, Actions: []model.Action{patch, skipped}}))
	want := "the StatefulSet controller never observed the patch to shop/web within 1m0s; the pods waiting for it were not deleted"
	if res.Result != apiv1.WaitNotObserved || res.Message != want {
		t.Errorf("%s %q, want NotObserved %q", res.Result, res.Message, want)
	}
	skipped.NotObserved = false
	res = explain.Result(verdict.Decide(verdict.Facts{End: model.TimedOut{After: time.Minute}, Timeout: time.Minute, Actions: []model.Action{patch, skipped}}))
	if res.Result != apiv1.WaitTimedOut {
		t.Errorf("%s, want TimedOut", res.Result)
	}
}

// TestRollbackVerdict: a rollback makes wait's verdict RolledBack, listing the StatefulSet and
// the revision it returned to; JUnit fails its test case.
func TestRollbackVerdict(t *testing.T) {
	rb := model.Action{Action: apiv1.Action{Action: apiv1.Rollback, Namespace: "shop", StatefulSet: "db", Result: apiv1.ResultDone, Message: "template rolled back",
		Rollback: &apiv1.RollbackTarget{Revision: "db-good", FromRevision: "db-bad", Images: []apiv1.ImageChange{{Container: "db", From: badImage, To: goodImage}}}}, Cause: apiv1.CurrentRevisionFailing}
	res := explain.Result(verdict.Decide(verdict.Facts{End: model.Complete{}, Actions: []model.Action{rb}}))
	if res.Result != apiv1.WaitRolledBack || len(res.RolledBack) != 1 || res.RolledBack[0].Revision != "db-good" ||
		!strings.Contains(res.Message, "rolled back shop/db to revision db-good (revision db-bad failed; db nginx:1.27-typo → registry.k8s.io/nginx-slim:0.27)") {
		t.Errorf("%+v", res)
	}
	var junit strings.Builder
	if err := render.WriteJUnit(&junit, &model.WaitResult{Result: res.Result, Message: res.Message, RolledBack: res.RolledBack,
		StatefulSets: []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "db", Status: apiv1.StatusComplete}}}, 0); err != nil ||
		!strings.Contains(junit.String(), `failures="1"`) || !strings.Contains(junit.String(), `message="rolled back to revision db-good: revision db-bad failed" type="RolledBack"`) {
		t.Errorf("junit %s %v", junit.String(), err)
	}
	plain := explain.Result(verdict.Decide(verdict.Facts{End: model.Complete{}}))
	if plain.Result != apiv1.WaitComplete || plain.RolledBack != nil {
		t.Errorf("no rollback, no change: %+v", plain)
	}
	if len(verdict.RollbacksDone([]model.Action{{Action: apiv1.Action{Action: apiv1.Rollback, Result: apiv1.ResultDone, Rollback: rb.Rollback}, DryRun: true}})) != 0 {
		t.Errorf("a dry run rolled nothing back")
	}
}

// TestRollout: fix --wait says NotObserved when a patch was never observed, TimedOut only when
// the deadline passed, Complete only when every planned action was done and every rollout
// followed completed; nothing when it was not followed or was interrupted.
func TestRollout(t *testing.T) {
	complete, timedOut, failed := verdict.FollowedComplete, verdict.FollowedTimedOut, verdict.FollowedFailed
	cases := []struct {
		name  string
		facts verdict.RolloutFacts
		want  apiv1.RolloutOutcome
	}{
		{"not followed (no --wait, a dry run)", verdict.RolloutFacts{}, ""},
		{"a patch never observed", verdict.RolloutFacts{NotObserved: true}, apiv1.RolloutNotObserved},
		{"every rollout complete", verdict.RolloutFacts{Followed: []verdict.Followed{complete, complete}}, apiv1.RolloutComplete},
		{"complete, but an action was skipped", verdict.RolloutFacts{Followed: []verdict.Followed{complete}, Unrepaired: true}, ""},
		{"the second timed out", verdict.RolloutFacts{Followed: []verdict.Followed{complete, timedOut}}, apiv1.RolloutTimedOut},
		{"interrupted", verdict.RolloutFacts{Followed: []verdict.Followed{failed}}, ""},
		{"nothing repaired to follow", verdict.RolloutFacts{Unrepaired: true}, ""},
	}
	for _, c := range cases {
		if got := verdict.DecideRollout(c.facts); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
