package render_test

import (
	"bytes"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

var stuckFinding = stuck.Finding{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Reason: "ImagePullBackOff", Namespace: "shop", StatefulSet: "web", Pod: "web-0", Message: "web-0 runs old revision web-a & is stuck <here>", Remedy: "kubectl delete pod web-0 -n shop"}}

func TestWaitJUnit(t *testing.T) {
	res := &model.WaitResult{Result: apiv1.WaitStuck, Message: "1 finding(s) held for 30s",
		StatefulSets: []apiv1.StatefulSetSummary{
			{Namespace: "shop", Name: "web", Replicas: 3, Status: apiv1.StatusStuck},
			{Namespace: "shop", Name: "db", Replicas: 1, ReadyReplicas: 1, Status: apiv1.StatusComplete},
		},
		Findings: []stuck.Finding{stuckFinding}}
	var buf bytes.Buffer
	if err := render.WriteJUnit(&buf, res, 31500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "wait-stuck.junit.xml", buf.Bytes(), *update)

	res = &model.WaitResult{Result: apiv1.WaitTimedOut, Message: "timed out after 10m0s while the rollout was still progressing",
		StatefulSets: []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 1, Status: apiv1.StatusProgressing}}}
	buf.Reset()
	if err := render.WriteJUnit(&buf, res, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "wait-timeout.junit.xml", buf.Bytes(), *update)
}

// TestWaitJUnitNoVerdict: a wait that could not read its StatefulSets still fails the report,
// with its verdict as the failure type.
func TestWaitJUnitNoVerdict(t *testing.T) {
	for _, result := range []apiv1.Verdict{apiv1.WaitNotFound, apiv1.WaitUnevaluable} {
		t.Run(string(result), func(t *testing.T) {
			var buf bytes.Buffer
			res := model.NewWaitResult(result, "listing statefulsets in namespace shop: forbidden")
			if err := render.WriteJUnit(&buf, res, time.Second); err != nil {
				t.Fatal(err)
			}
			want := `<failure message="listing statefulsets in namespace shop: forbidden" type="` + result + `">`
			if !bytes.Contains(buf.Bytes(), []byte(want)) || !bytes.Contains(buf.Bytes(), []byte(`failures="1"`)) {
				t.Errorf("junit lacks %s and failures=\"1\":\n%s", want, buf.String())
			}
		})
	}
}
