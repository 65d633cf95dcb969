package wait

import (
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// TestNotObservedVerdict: a wait --fix that timed out because the controller never observed its
// patch says so (NotObserved); one that timed out with every repair made stays TimedOut.
func TestNotObservedVerdict(t *testing.T) {
	patch := model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "web", Result: apiv1.ResultDone}}
	skipped := model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Result: apiv1.ResultSkipped}, NotObserved: true}
	res := model.NewWaitResult(apiv1.WaitTimedOut, "timed out after 1m0s while the rollout was still progressing")
	res.Actions = []model.Action{patch, skipped}
	notObservedVerdict(res, time.Minute)
	want := "the StatefulSet controller never observed the patch to shop/web within 1m0s; the pods waiting for it were not deleted"
	if res.Result != apiv1.WaitNotObserved || res.Message != want {
		t.Errorf("%s %q, want NotObserved %q", res.Result, res.Message, want)
	}
	skipped.NotObserved = false
	res = model.NewWaitResult(apiv1.WaitTimedOut, "timed out")
	res.Actions = []model.Action{patch, skipped}
	notObservedVerdict(res, time.Minute)
	if res.Result != apiv1.WaitTimedOut {
		t.Errorf("%s, want TimedOut", res.Result)
	}
}
