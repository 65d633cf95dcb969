package report_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot/snapshottest"
)

var stuckFinding = report.Finding{Code: report.StaleRevisionStuck, Severity: report.SeverityError, Reason: "ImagePullBackOff",
	Namespace: "shop", StatefulSet: "web", Pod: "web-0", Message: "web-0 runs old revision web-a & is stuck <here>",
	Remedy: "kubectl delete pod web-0 -n shop"}

func TestWaitJUnit(t *testing.T) {
	res := &report.WaitResult{Result: report.WaitStuck, Message: "1 finding(s) held for 30s",
		StatefulSets: []report.StatefulSetSummary{
			{Namespace: "shop", Name: "web", Replicas: 3, Status: report.StatusStuck},
			{Namespace: "shop", Name: "db", Replicas: 1, ReadyReplicas: 1, Status: report.StatusComplete},
		},
		Findings: []report.Finding{stuckFinding}}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, res, 31500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "wait-stuck.junit.xml", buf.Bytes(), *update)

	res = &report.WaitResult{Result: report.WaitTimedOut, Message: "timed out after 10m0s while the rollout was still progressing",
		StatefulSets: []report.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 1, Status: report.StatusProgressing}}}
	buf.Reset()
	if err := report.WriteJUnit(&buf, res, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "wait-timeout.junit.xml", buf.Bytes(), *update)
}
