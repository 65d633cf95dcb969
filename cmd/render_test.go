package cmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/stsdiag/stsdiag/repair"
	"github.com/stsdiag/stsdiag/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

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
	golden(t, "fix-result.json", buf.Bytes())
}
