package cmd

import (
	"bytes"
	"flag"
	"testing"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/stsdiag/stsdiag/repair"
	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot/snapshottest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestFixResultJSON(t *testing.T) {
	res := &FixResult{DryRun: repair.DryRunNone, Rollout: "complete", Actions: []repair.Action{
		{Action: repair.PatchImage, Namespace: "shop", StatefulSet: "web", Container: "app", From: "myapp:1", To: "registry/shop/myapp@sha256:0", UID: "u1", Result: repair.Done, Message: "image patched"},
		{Action: repair.DeletePod, Namespace: "shop", StatefulSet: "web", Pod: "web-0", UID: "u2", Result: repair.Skipped, Message: "the pod was replaced or changed since diagnosis; nothing deleted"},
	}}
	res.SetGroupVersionKind(report.GroupVersion.WithKind("FixResult"))
	var buf bytes.Buffer
	if err := (&printers.JSONPrinter{}).PrintObj(res, &buf); err != nil {
		t.Fatal(err)
	}
	snapshottest.Golden(t, "fix-result.json", buf.Bytes(), *update)
}
