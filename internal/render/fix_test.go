package render_test

import (
	"bytes"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

func TestFixResultJSON(t *testing.T) {
	res := &model.FixResult{DryRun: apiv1.DryRunNone}
	res.Rollout = apiv1.RolloutComplete
	res.Actions = []model.Action{
		{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "web", Container: "app", From: "myapp:1", To: "registry/shop/myapp@sha256:0", UID: "u1", Result: apiv1.ResultDone, Message: "image patched"}},
		{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "u2", Result: apiv1.ResultSkipped, Message: "the pod was replaced or changed since diagnosis; nothing deleted"}},
	}
	flags := render.NewPrintFlags()
	flags.OutputFormat = "json"
	var buf bytes.Buffer
	if err := render.FixResult(&buf, res, flags); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "fix-result.json", buf.Bytes(), *update)
}

func TestFixSummary(t *testing.T) {
	res := &model.FixResult{DryRun: "server"}
	res.Actions = []model.Action{{Action: apiv1.Action{Action: apiv1.DeletePod, Result: apiv1.ResultDone}}, {Action: apiv1.Action{Action: apiv1.DeletePod, Result: apiv1.ResultFailed}}}
	res.Unrepaired = []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing}}}
	want := "2 actions: 1 done, 0 skipped, 1 failed; 1 finding left unrepaired (dry run: server)."
	if got := render.FixSummary(res); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if res.Repaired() {
		t.Error("a failed action and an unrepaired finding: not repaired")
	}
}

func TestPrintFlagsVocabulary(t *testing.T) {
	var notices bytes.Buffer
	flags := render.NewPrintFlags(render.FormatJUnit).WithAlias("text", render.FormatTable, &notices)
	for format, ok := range map[string]bool{"table": true, "wide": true, "json": true, "yaml": true, "junit": true, "text": true, "xml": false, "name": false} {
		flags.OutputFormat = format
		if err := flags.Validate(); (err == nil) != ok {
			t.Errorf("-o %s: error %v, want accepted=%v", format, err, ok)
		}
	}
	notices.Reset()
	flags.OutputFormat = "text"
	if flags.Validate(); flags.OutputFormat != "table" {
		t.Errorf("-o text is table, got %s", flags.OutputFormat)
	}
	if want := "Flag --output value \"text\" has been deprecated, use \"table\"\n"; notices.String() != want {
		t.Errorf("notice %q, want %q", notices.String(), want)
	}
	if err := render.NewPrintFlags().Validate(); err != nil {
		t.Errorf("the default -o is valid: %v", err)
	}
}

// TestPlanAdmission: a patch's plan line says what admission answered about its image.
func TestPlanAdmission(t *testing.T) {
	patch := func(adm *apiv1.AdmissionCheck) model.Action {
		return model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: "shop", StatefulSet: "web", Container: "app", From: "myapp:1", To: "r/shop/myapp:1", Admission: adm}}
	}
	var buf bytes.Buffer
	render.Plan(&buf, &model.FixResult{Actions: []model.Action{
		patch(nil),
		patch(&apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: "r/shop/myapp:1", Written: "r/shop/myapp:1"}),
		patch(&apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: "r/shop/myapp@sha256:0", Written: "r/shop/myapp:1"}),
		patch(&apiv1.AdmissionCheck{Result: apiv1.AdmissionUnconfirmed, Predicted: "r/shop/myapp:1", Error: "pods is forbidden"}),
	}})
	want := `Plan (4 actions):
  1. patch statefulset/web -n shop: container "app" image myapp:1 → r/shop/myapp:1
  2. patch statefulset/web -n shop: container "app" image myapp:1 → r/shop/myapp:1; confirmed by admission (server-side dry run)
  3. patch statefulset/web -n shop: container "app" image myapp:1 → r/shop/myapp:1; admission's answer (server-side dry run); stsdiag predicted r/shop/myapp@sha256:0
  4. patch statefulset/web -n shop: container "app" image myapp:1 → r/shop/myapp:1; not confirmed by admission: pods is forbidden
`
	if buf.String() != want {
		t.Errorf("plan\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestDescribeEviction: a DeletePod under --disruption=evict says evict, in the plan and after.
func TestDescribeEviction(t *testing.T) {
	for mode, want := range map[apiv1.DisruptionMode]string{
		apiv1.DisruptionEvict:  "evict pod/web-0 -n shop (uid u2)",
		apiv1.DisruptionDelete: "delete pod/web-0 -n shop (uid u2)",
		"":                     "delete pod/web-0 -n shop (uid u2)",
	} {
		a := model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "u2", Disruption: mode}}
		if got := explain.Action(a); got != want {
			t.Errorf("%q: %q, want %q", mode, got, want)
		}
	}
}
