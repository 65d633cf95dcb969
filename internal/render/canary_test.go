package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/render"
)

func canaryResult() *model.CanaryResult {
	res := &model.CanaryResult{WaitResult: *model.NewWaitResult(apiv1.WaitComplete, "canary complete: every step passed"), Namespace: "shop", StatefulSet: "web",
		Steps: []apiv1.CanaryStep{{Step: "1", Pods: 1, Partition: 3, Result: apiv1.StepPassed}, {Step: "100%", Pods: 4, Partition: 0, Result: apiv1.StepPassed}}}
	res.Elapsed = "20s"
	return res
}

// TestCanaryHuman: the steps, then wait's verdict line.
func TestCanaryHuman(t *testing.T) {
	var out bytes.Buffer
	if err := render.CanaryResult(&out, canaryResult(), render.NewPrintFlags(render.FormatJUnit), 20*time.Second, false); err != nil {
		t.Fatal(err)
	}
	want := "step 1     1 pods, partition 3: Passed\nstep 100%  4 pods, partition 0: Passed\nComplete after 20s: canary complete: every step passed\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestCanaryJSON: the CanaryResult document, kind and apiVersion set, steps always an array.
func TestCanaryJSON(t *testing.T) {
	flags := render.NewPrintFlags(render.FormatJUnit)
	flags.OutputFormat = "json"
	var out bytes.Buffer
	if err := render.CanaryResult(&out, canaryResult(), flags, 20*time.Second, false); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["kind"] != "CanaryResult" || doc["apiVersion"] != "stsdiag/v1" || doc["result"] != "Complete" || doc["statefulSet"] != "web" || len(doc["steps"].([]any)) != 2 {
		t.Errorf("%s", out.String())
	}
	flags.OutputFormat = render.FormatJUnit
	out.Reset()
	if err := render.CanaryResult(&out, canaryResult(), flags, 20*time.Second, false); err != nil || !strings.Contains(out.String(), "<testsuite") {
		t.Errorf("junit: %v\n%s", err, out.String())
	}
}

// TestCanaryStoppedJUnit: a canary stopped by someone else's edit is a failed test case.
func TestCanaryStoppedJUnit(t *testing.T) {
	res := canaryResult()
	res.Result, res.Message = apiv1.CanaryStopped, "someone else changed the partition of statefulset shop/web from 3 to 1"
	res.StatefulSets = []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 4, Status: apiv1.StatusProgressing}}
	var out bytes.Buffer
	if err := render.WriteJUnit(&out, &res.WaitResult, time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `failures="1"`) || !strings.Contains(out.String(), `type="Stopped"`) {
		t.Errorf("%s", out.String())
	}
}

// TestCanaryAnalysisHuman: a step's analysis under its line: the run's phase, then each
// metric's phase, tallies and values (an Error measurement as "error").
func TestCanaryAnalysisHuman(t *testing.T) {
	res := canaryResult()
	res.Result, res.Message = apiv1.CanaryInconclusive, "step 1 paused"
	res.Steps = []apiv1.CanaryStep{{Step: "1", Pods: 1, Partition: 3, Result: apiv1.StepInconclusive, Analysis: &apiv1.AnalysisRun{Template: "error-ratio", Phase: apiv1.AnalysisError,
		Metrics: []apiv1.AnalysisMetric{{Name: "errors", Phase: apiv1.AnalysisError, Successful: 1, Error: 5,
			Measurements: []apiv1.AnalysisMeasurement{{Phase: apiv1.AnalysisSuccessful, Value: "[0.01]"}, {Phase: apiv1.AnalysisError, Message: "connection refused"}}}}}},
		{Step: "100%", Pods: 4, Partition: 0, Result: apiv1.StepPending}}
	var out bytes.Buffer
	if err := render.CanaryResult(&out, res, render.NewPrintFlags(render.FormatJUnit), 20*time.Second, false); err != nil {
		t.Fatal(err)
	}
	want := "step 1     1 pods, partition 3: Inconclusive\n  analysis error-ratio: Error\n    metric errors: Error (1 successful, 0 failed, 0 inconclusive, 5 errors): [0.01] error\n" +
		"step 100%  4 pods, partition 0: Pending\nInconclusive after 20s: step 1 paused\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	res.StatefulSets = []apiv1.StatefulSetSummary{{Namespace: "shop", Name: "web", Replicas: 4, Status: apiv1.StatusProgressing}}
	out.Reset()
	if err := render.WriteJUnit(&out, &res.WaitResult, time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `failures="1"`) || !strings.Contains(out.String(), `type="Inconclusive"`) {
		t.Errorf("junit of a paused canary:\n%s", out.String())
	}
}
