package repair_test

import (
	"reflect"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestPlanAdmission: with admission's answers, a patch writes what admission wrote and carries
// the answer for the plan; an image admission leaves as it is gets no patch.
func TestPlanAdmission(t *testing.T) {
	const (
		resolved = "image-registry.openshift-image-registry.svc:5000/shop/myapp@" + digest
		tagForm  = "image-registry.openshift-image-registry.svc:5000/shop/myapp:1.0.1"
		path     = "/spec/template/spec/containers/0/image"
	)
	snap, err := stuck.LoadFile("../../testdata/admission/objects.yaml", time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	snap.Admission = map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{
		{Namespace: "shop", Image: "myapp:1.0.1"}:                            {Written: resolved},
		{Namespace: "shop", Image: "tools:2"}:                                {Written: "tools:2"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"}: {Written: tagForm},
		{Namespace: "other", Image: "myapp:9.9"}:                             {Error: "pods is forbidden"},
	}
	confirmed := &apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: resolved, Written: resolved}
	want := []model.Action{
		{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "db", Container: "db", From: "myapp:1.0.1", To: resolved, UID: "db-uid",
			Admission: confirmed}, Cause: apiv1.UnresolvedImageReference, Path: path},
		{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "forced", Container: "app", From: "quay.io/team/myapp:1.0.1", To: tagForm, UID: "forced-uid",
			Admission: &apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: resolved, Written: tagForm}}, Cause: apiv1.UnresolvedImageReference, Path: path},
		{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "web", Container: "app", From: "myapp:1.0.1", To: resolved, UID: "web-uid",
			Admission: confirmed}, Cause: apiv1.UnresolvedImageReference, Path: path},
	}
	actions, _ := planOf(plan.Policy{}, diagnose.Report(snap, stuck.DefaultOptions()), snap)
	if !reflect.DeepEqual(actions, want) {
		t.Errorf("planned\n%+v\nwant\n%+v", actions, want)
	}
	public := model.PublicActions(actions)
	public[0].Admission.Written = "changed"
	if actions[0].Admission.Written != resolved {
		t.Error("the printed action shares its admission answer with the plan")
	}
}
