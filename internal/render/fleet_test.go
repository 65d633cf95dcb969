package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/stuck"
)

// TestFleetReportMarksPartial: a fleet's document lists its members and is partial when one
// could not be checked; the table is the report's alone.
func TestFleetReportMarksPartial(t *testing.T) {
	rep := model.NewReport(false, []apiv1.StatefulSetSummary{{Context: "fleet/a", Namespace: "shop", Name: "web", Status: apiv1.StatusStuck}},
		[]stuck.Finding{{Finding: apiv1.Finding{Context: "fleet/a", Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0"}}})
	members := []apiv1.FleetMember{{Name: "fleet/a"}, {Name: "fleet/gone", Error: "no answer within 30s from https://127.0.0.1:1"}}
	for _, c := range []struct {
		members []apiv1.FleetMember
		partial bool
	}{{members, true}, {members[:1], false}} {
		flags := render.NewPrintFlags()
		flags.OutputFormat = "json"
		var out bytes.Buffer
		if err := render.FleetReport(&out, rep, c.members, flags, render.TableOptions{}); err != nil {
			t.Fatal(err)
		}
		var doc apiv1.Report
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Partial != c.partial || len(doc.Clusters) != len(c.members) || doc.Clusters[0].Name != "fleet/a" || len(doc.Findings) != 1 || doc.Findings[0].Context != "fleet/a" {
			t.Errorf("members %v: %s", c.members, out.String())
		}
		if c.partial && (doc.Clusters[1].Error != members[1].Error || !strings.Contains(out.String(), `"partial": true`)) {
			t.Errorf("the unreachable member is not marked: %s", out.String())
		}
	}
	var table bytes.Buffer
	if err := render.FleetReport(&table, rep, members, render.NewPrintFlags(), render.TableOptions{WithContext: true, WithNamespace: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "fleet/a") || strings.Contains(table.String(), "fleet/gone") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestWaitUnevaluableFleetShowsFindings: a fleet's wait whose verdict is Unevaluable (one
// member unreachable) still prints the other members' findings; without findings it prints
// nothing (the error line says it).
func TestWaitUnevaluableFleetShowsFindings(t *testing.T) {
	res := model.NewWaitResult(apiv1.WaitUnevaluable, "fleet/a: Stuck: 1 finding(s) held for 30s; fleet/gone: Unevaluable: no answer")
	res.StatefulSets = []apiv1.StatefulSetSummary{{Context: "fleet/a", Namespace: "shop", Name: "web", Status: apiv1.StatusStuck}}
	res.Findings = []stuck.Finding{{Finding: apiv1.Finding{Context: "fleet/a", Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0"}}}
	var out bytes.Buffer
	if err := render.WaitResult(&out, res, render.NewPrintFlags(), 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "StaleRevisionStuck") || !strings.Contains(out.String(), "fleet/a") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := render.WaitResult(&out, model.NewWaitResult(apiv1.WaitUnevaluable, "no answer"), render.NewPrintFlags(), 0, false); err != nil || out.Len() != 0 {
		t.Errorf("without findings: %q %v", out.String(), err)
	}
}
