package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/report"
)

var stuckFinding = report.Finding{Code: report.StaleRevisionStuck, Severity: report.SeverityError, Reason: "ImagePullBackOff",
	Namespace: "shop", StatefulSet: "web", Pod: "web-0", Message: "web-0 runs old revision web-a & is stuck <here>",
	Remedy: "kubectl delete pod web-0 -n shop"}

func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

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
	goldenFile(t, "wait-stuck.junit.xml", buf.Bytes())

	res = &report.WaitResult{Result: report.WaitTimedOut, Message: "timed out after 10m0s while the rollout was still progressing",
		StatefulSets: []report.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 1, Status: report.StatusProgressing}}}
	buf.Reset()
	if err := report.WriteJUnit(&buf, res, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "wait-timeout.junit.xml", buf.Bytes())
}
