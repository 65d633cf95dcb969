package verdict_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	goodImage = "registry.k8s.io/nginx-slim:0.27"
	badImage  = "nginx:1.27-typo"
)

// goldenCase is one verdict of a reason, decided by this package and worded by explain.
type goldenCase struct {
	title string
	res   *model.WaitResult
}

// reasons are every verdict reason with words of its own: each has a golden file,
// testdata/golden/verdicts/<Reason>.txt, with what it is and its cases.
var reasons = map[string]string{
	"Complete":                 "every rollout complete; with a hold, complete and healthy for it (a canary step)",
	"Held":                     "blocking findings held for --hold: the rollout will not finish on its own",
	"TimedOut":                 "the deadline passed while the rollout was still progressing",
	"Interrupted":              "a signal ended the wait",
	"Failed":                   "the wait could not go on: an error's own words (NotFound, Unevaluable, a repair that could not be evaluated)",
	"Deleted":                  "a StatefulSet deleted while waiting",
	"NoMatch":                  "the selector matches no StatefulSet",
	"NotObserved":              "wait --fix: the StatefulSet controller never observed a patch within the budget",
	"RolledBack":               "wait --fix --rollback: the StatefulSets rolled back, then the verdict of the rollout after",
	"Fleet":                    "wait --contexts: every context that did not complete, with its verdict",
	"ContextFailed":            "wait --contexts: one context's wait failed",
	"CanaryComplete":           "canary: every step passed",
	"CanaryTimedOut":           "canary: the deadline passed during a step",
	"CanaryCut":                "canary: the deadline or a signal ended a patch or a read",
	"CanaryStopped":            "canary: someone else changed the StatefulSet during a step or the rollback",
	"CanaryNotStarted":         "canary: a step's guarded patch failed its test",
	"CanaryHalted":             "canary --no-rollback: a step failed",
	"CanaryUnrollable":         "canary: a step failed and fix --rollback has no safe rollback",
	"CanaryRollbackFailed":     "canary: a step failed and the rollback was not made",
	"CanaryRolledBack":         "canary: a step failed, rolled back, the canary pods Ready on the earlier revision again",
	"CanaryRollbackUnfinished": "canary: a step failed, rolled back, and the wait after the rollback ended otherwise",
	"CanaryDeleted":            "canary: the StatefulSet deleted when a step failed",
	"CanaryAnalysisFailed":     "canary --analysis: a step's analysis failed: rolled back, or not",
	"CanaryInconclusive":       "canary --analysis: a step's analysis could not tell: paused",
}

func wait(end model.Reason) *model.WaitResult {
	return explain.Result(verdict.Decide(verdict.Facts{End: end}))
}

func canary(end model.Reason) *model.WaitResult { return explain.Result(verdict.DecideCanary(end)) }

// goldenCases are the cases of each reason, from typed facts (the words were locked before the
// verdict was decided once).
func goldenCases() map[string][]goldenCase {
	finding := func(code apiv1.Code, severity apiv1.Severity, pod, reason string) stuck.Finding {
		return stuck.Finding{Finding: apiv1.Finding{Code: code, Severity: severity, Namespace: "shop", StatefulSet: "web", Pod: pod, Reason: reason}}
	}
	failing := finding(apiv1.CurrentRevisionFailing, apiv1.SeverityError, "web-3", "ImagePullBackOff")
	terminating := finding(apiv1.PodStuckTerminating, apiv1.SeverityError, "web-2", "")
	tagMissing := finding(apiv1.ImageStreamTagNotFound, apiv1.SeverityError, "", "")
	noService := finding(apiv1.ServiceMissing, apiv1.SeverityWarning, "", "")
	held := model.Held{Findings: []stuck.Finding{failing}, Hold: 30 * time.Second}

	done := wait(model.Complete{})
	failedContext := wait(model.ContextFailed{Context: "north", As: apiv1.WaitUnevaluable, Err: errors.New("informer sync aborted")})

	patch := func(ns, name string) model.Action {
		return model.Action{Action: apiv1.Action{Action: apiv1.PatchImage, Namespace: ns, StatefulSet: name, Result: apiv1.ResultDone}}
	}
	notObserved := func(ns, name, pod string) model.Action {
		return model.Action{Action: apiv1.Action{Action: apiv1.DeletePod, Namespace: ns, StatefulSet: name, Pod: pod, Result: apiv1.ResultSkipped}, NotObserved: true}
	}
	rollback := func(ns, name, to, from string, images ...apiv1.ImageChange) model.Action {
		return model.Action{Action: apiv1.Action{Action: apiv1.Rollback, Namespace: ns, StatefulSet: name, Result: apiv1.ResultDone,
			Rollback: &apiv1.RollbackTarget{Revision: to, FromRevision: from, Images: images}}, Cause: apiv1.CurrentRevisionFailing}
	}
	db := rollback("shop", "db", "db-good", "db-bad", apiv1.ImageChange{Container: "db", From: badImage, To: goodImage})
	rolledBack := func(end model.Reason, actions ...model.Action) *model.WaitResult {
		return explain.Result(verdict.Decide(verdict.Facts{End: end, Timeout: 10 * time.Minute, Actions: actions}))
	}

	at := metav1.NewTime(time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC))
	measured := func(phase apiv1.AnalysisPhase, value, message string) apiv1.AnalysisMeasurement {
		return apiv1.AnalysisMeasurement{Phase: phase, Value: value, Message: message, StartedAt: at, FinishedAt: at}
	}
	query := `sum(rate(app_requests_total{namespace="shop",pod=~"web-3",code="500"}[20s]))
  / sum(rate(app_requests_total{namespace="shop",pod=~"web-3"}[20s]))`
	failedRun := &apiv1.AnalysisRun{Template: "error-ratio", Phase: apiv1.AnalysisFailed, Message: `Metric "errors" assessed Failed due to failed (2) > failureLimit (1)`, Metrics: []apiv1.AnalysisMetric{
		{Name: "errors", Query: query, SuccessCondition: "result[0] <= 0.1", Phase: apiv1.AnalysisFailed,
			Successful: 0, Failed: 2, Measurements: []apiv1.AnalysisMeasurement{measured(apiv1.AnalysisFailed, "[0.49]", ""), measured(apiv1.AnalysisFailed, "[0.51]", "")}},
		{Name: "latency", Query: "histogram_quantile(0.99, rate(app_seconds_bucket[1m]))", SuccessCondition: "result[0] < 0.5", Phase: apiv1.AnalysisSuccessful, Successful: 2},
	}}
	errorRun := &apiv1.AnalysisRun{Template: "error-ratio", Phase: apiv1.AnalysisError,
		Message: `Metric "errors" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: Post \"http://127.0.0.1:9090/api/v1/query\": dial tcp 127.0.0.1:9090: connect: connection refused"`, Metrics: []apiv1.AnalysisMetric{
			{Name: "errors", Query: query, SuccessCondition: "result[0] <= 0.1", Phase: apiv1.AnalysisError, Error: 5,
				Measurements: []apiv1.AnalysisMeasurement{measured(apiv1.AnalysisError, "", `Post "http://127.0.0.1:9090/api/v1/query": dial tcp 127.0.0.1:9090: connect: connection refused`)}},
		}}
	inconclusiveRun := &apiv1.AnalysisRun{Template: "error-ratio", Phase: apiv1.AnalysisInconclusive, Metrics: []apiv1.AnalysisMetric{
		{Name: "errors", Query: query, SuccessCondition: "result[0] <= 0.1", FailureCondition: "result[0] >= 0.3", Phase: apiv1.AnalysisInconclusive,
			Inconclusive: 1, Measurements: []apiv1.AnalysisMeasurement{measured(apiv1.AnalysisInconclusive, "[0.2]", "")}},
	}}
	analysisStep := func(name string, run *apiv1.AnalysisRun) model.FailedStep {
		return model.FailedStep{Step: name, Hold: 30 * time.Second, Analysis: run}
	}

	change := func(kind model.ChangeKind, uid types.UID, partition int32, generation int64) model.CanaryChange {
		return model.CanaryChange{Namespace: "shop", Name: "web", Kind: kind, UID: uid, WasUID: "web-1", Partition: partition, WasPartition: 3, Generation: generation, WasGeneration: 5}
	}
	conflict := errors.New(`Operation cannot be fulfilled on statefulsets.apps "web": the object has been modified; please apply your changes to the latest version and try again`)
	step := func(name string, findings ...stuck.Finding) model.FailedStep {
		return model.FailedStep{Step: name, Findings: findings, Hold: 30 * time.Second}
	}
	webA := apiv1.RolledBack{Namespace: "shop", StatefulSet: "web", Revision: "web-a", FromRevision: "web-b"}
	stoppedWords := canary(model.CanaryStopped{Change: change(model.ChangePartition, "web-1", 1, 6)}).Message

	return map[string][]goldenCase{
		"Complete": {
			{"wait: every rollout complete", done},
			{"a canary step: complete, and healthy for the hold (30s)", wait(model.Complete{Settle: 30 * time.Second})},
		},
		"Held":        {{"one finding held for --hold 30s", wait(held)}},
		"TimedOut":    {{"wait --timeout 10m", wait(model.TimedOut{After: 10 * time.Minute})}, {"a canary's wait after its rollback: no budget named", wait(model.TimedOut{})}},
		"Interrupted": {{"SIGINT or SIGTERM while progressing", wait(model.Interrupted{})}},
		"Failed": {
			{"a StatefulSet named that does not exist: the error's own words", wait(model.Failed{As: apiv1.WaitNotFound, Err: errors.New(`statefulset "web" in namespace "shop" not found`)})},
			{"canary on a StatefulSet with nothing to roll out", canary(model.Failed{As: apiv1.WaitUnevaluable, Err: errors.New(
				"statefulset shop/web has nothing to roll out: its update revision is its current revision (web-a); change the template with --image, or change it with the partition held at 3 or more first")})},
		},
		"Deleted": {{"the StatefulSet deleted while waiting", wait(model.Deleted{What: `statefulset "web" in namespace "shop"`})}},
		"NoMatch": {{"wait -l app=nothing", wait(model.NoMatch{})}},
		"NotObserved": {
			{"wait --fix --timeout 1m: one StatefulSet's patch never observed", explain.Result(verdict.Decide(verdict.Facts{End: model.TimedOut{After: time.Minute}, Timeout: time.Minute,
				Actions: []model.Action{patch("shop", "web"), notObserved("shop", "web", "web-0"), notObserved("shop", "web", "web-1")}}))},
			{"wait --fix --timeout 5m: two StatefulSets' patches never observed", explain.Result(verdict.Decide(verdict.Facts{End: model.TimedOut{After: 5 * time.Minute}, Timeout: 5 * time.Minute,
				Actions: []model.Action{patch("shop", "web"), notObserved("shop", "web", "web-0"), patch("bank", "db"), notObserved("bank", "db", "db-0")}}))},
		},
		"RolledBack": {
			{"the earlier revision's rollout complete", rolledBack(model.Complete{}, db)},
			{"no image changed between the revisions", rolledBack(model.Complete{}, rollback("shop", "db", "db-good", "db-bad"))},
			{"a container only one revision has", rolledBack(model.Complete{}, rollback("shop", "db", "db-good", "db-bad",
				apiv1.ImageChange{Container: "db", From: badImage, To: goodImage}, apiv1.ImageChange{Container: "sidecar", From: "busybox:1.36", To: ""},
				apiv1.ImageChange{Container: "init", From: "", To: "busybox:1.35"}))},
			{"two StatefulSets rolled back", rolledBack(model.Complete{}, db, rollback("bank", "ledger", "ledger-1", "ledger-2", apiv1.ImageChange{Container: "app", From: "ledger:2", To: "ledger:1"}))},
			{"stuck after the rollback", rolledBack(held, db)},
			{"timed out after the rollback", rolledBack(model.TimedOut{After: 10 * time.Minute}, db)},
			{"a later patch never observed", rolledBack(model.TimedOut{After: 10 * time.Minute}, db, patch("shop", "web"), notObserved("shop", "web", "web-0"))},
			{"a repair that could not be evaluated after the rollback", rolledBack(model.Failed{As: apiv1.WaitStuck, Err: errors.New("listing pods in namespace shop: forbidden")}, db)},
		},
		"Fleet": {
			{"every context complete", explain.Word(verdict.MergeFleet([]string{"east", "west"}, []*model.WaitResult{done, done}))},
			{"east complete, west stuck, north interrupted", explain.Word(verdict.MergeFleet([]string{"east", "west", "north"}, []*model.WaitResult{done, wait(held), wait(model.Interrupted{})}))},
			{"east timed out, west complete", explain.Word(verdict.MergeFleet([]string{"east", "west"}, []*model.WaitResult{wait(model.TimedOut{After: 10 * time.Minute}), done}))},
			{"north's wait failed", explain.Word(verdict.MergeFleet([]string{"east", "north"}, []*model.WaitResult{done, failedContext}))},
		},
		"ContextFailed": {{"one context's wait failed (its member verdict)", failedContext}},

		"CanaryComplete": {
			{"every step held healthy for --hold 30s", canary(model.CanaryComplete{Hold: 30 * time.Second})},
			{"--hold 0", canary(model.CanaryComplete{})},
		},
		"CanaryTimedOut": {{"--timeout 10m in step 50%", canary(model.CanaryTimedOut{After: 10 * time.Minute, Step: "50%"})}},
		"CanaryCut": {
			{"the deadline ended a patch", canary(model.CanaryCut{As: apiv1.WaitTimedOut, Err: fmt.Errorf("patching statefulset shop/web: %w", context.DeadlineExceeded)})},
			{"a signal ended a read", canary(model.CanaryCut{As: apiv1.WaitInterrupted, Err: fmt.Errorf("listing pods: %w", context.Canceled)})},
		},
		"CanaryDeleted": {{"deleted when a step failed", canary(model.CanaryDeleted{Namespace: "shop", Name: "web"})}},
		"CanaryStopped": {
			{"deleted and created again during a step", canary(model.CanaryStopped{Change: change(model.ChangeRecreated, "web-2", 3, 1)})},
			{"someone else lowered the partition during a step", canary(model.CanaryStopped{Change: change(model.ChangePartition, "web-1", 1, 6)})},
			{"someone else changed the pod template during a step", canary(model.CanaryStopped{Change: change(model.ChangeTemplate, "web-1", 3, 6)})},
			{"deleted and created again during the rollback", canary(model.CanaryStopped{Change: change(model.ChangeRecreated, "web-2", 3, 1), DuringRollback: true})},
			{"someone else changed the partition during the rollback", canary(model.CanaryStopped{Change: change(model.ChangePartition, "web-1", 0, 7), DuringRollback: true})},
		},
		"CanaryNotStarted": {
			{"someone else changed the spec since canary read it", canary(model.CanaryNotStarted{Step: "50%", Change: change(model.ChangeSpec, "web-1", 3, 6), Err: conflict})},
			{"someone else changed the partition since canary read it", canary(model.CanaryNotStarted{Step: "50%", Change: change(model.ChangePartition, "web-1", 4, 6), Err: conflict})},
			{"nothing canary relies on changed", canary(model.CanaryNotStarted{Step: "1", Change: change(model.ChangeUnknown, "web-1", 3, 5), Err: conflict})},
			{"the StatefulSet could not be read again", canary(model.CanaryNotStarted{Step: "1", Err: conflict,
				Change: model.CanaryChange{Namespace: "shop", Name: "web", Kind: model.ChangeUnreadable, Err: errors.New(`statefulsets.apps "web" not found`)}})},
		},
		"CanaryHalted": {
			{"step 1 failed, --no-rollback", canary(model.CanaryHalted{FailedStep: step("1", failing, noService), Partition: 3})},
			{"several findings held, one without a pod", canary(model.CanaryHalted{FailedStep: step("50%", failing, terminating, tagMissing), Partition: 2})},
			{"no blocking finding among the step's", canary(model.CanaryHalted{FailedStep: step("1", noService), Partition: 3})},
		},
		"CanaryUnrollable": {
			{"the planner says why not", canary(model.CanaryUnrollable{FailedStep: step("1", failing, noService), Partition: 3, Why: model.Unrollable{Namespace: "shop", Name: "web",
				Why: "no earlier revision was Ready: web-b is both the current and the update revision (the StatefulSet has been failing since it was created, or since its last rollout completed); fix the template"}})},
			{"no rollback planned and no reason given", canary(model.CanaryUnrollable{FailedStep: step("1", failing, noService), Partition: 3, Why: model.Unrollable{Namespace: "shop", Name: "web"}})},
		},
		"CanaryRollbackFailed": {{"the StatefulSet changed before the rollback", canary(model.CanaryRollbackFailed{FailedStep: step("1", failing, noService),
			Action: model.Action{Action: apiv1.Action{Action: apiv1.Rollback, Result: apiv1.ResultSkipped,
				Message: "the StatefulSet changed since diagnosis and a fresh diagnosis no longer calls for a rollback; nothing overwritten"}}})}},
		"CanaryRolledBack": {
			{"the partition was already the canary's", canary(model.CanaryRolledBack{FailedStep: step("1", failing, noService), Rolled: webA, Pods: []string{"web-3"}})},
			{"the partition restored", canary(model.CanaryRolledBack{FailedStep: step("1", failing, noService), Rolled: webA, Pods: []string{"web-3"},
				Restore: model.PartitionRestore{Tried: true, To: 0, Stays: 3}})},
			{"restoring the partition failed", canary(model.CanaryRolledBack{FailedStep: step("50%", failing, terminating, tagMissing), Rolled: webA, Pods: []string{"web-2", "web-3"},
				Restore: model.PartitionRestore{Tried: true, To: 4, Stays: 2, Err: conflict}})},
		},
		"CanaryAnalysisFailed": {
			{"rolled back", canary(model.CanaryRolledBack{FailedStep: analysisStep("1", failedRun), Rolled: webA, Pods: []string{"web-3"},
				Restore: model.PartitionRestore{Tried: true, To: 4, Stays: 3}})},
			{"--no-rollback", canary(model.CanaryHalted{FailedStep: analysisStep("50%", failedRun), Partition: 2})},
			{"rolled back, then the deadline passed", canary(model.CanaryRollbackUnfinished{FailedStep: analysisStep("1", failedRun), Rolled: webA, Then: verdict.Decide(verdict.Facts{End: model.TimedOut{}})})},
		},
		"CanaryInconclusive": {
			{"Prometheus unreachable", canary(model.CanaryInconclusive{Step: "1", Partition: 3, Analysis: errorRun})},
			{"neither condition held", canary(model.CanaryInconclusive{Step: "50%", Partition: 2, Analysis: inconclusiveRun})},
		},
		"CanaryRollbackUnfinished": {
			{"a finding held on the earlier revision too", canary(model.CanaryRollbackUnfinished{FailedStep: step("1", failing, noService), Rolled: webA, Then: verdict.Decide(verdict.Facts{End: held})})},
			{"the deadline passed", canary(model.CanaryRollbackUnfinished{FailedStep: step("1", failing, noService), Rolled: webA, Then: verdict.Decide(verdict.Facts{End: model.TimedOut{}})})},
			{"someone else changed the partition", canary(model.CanaryRollbackUnfinished{FailedStep: step("1", failing, noService), Rolled: webA,
				Then: verdict.Decide(verdict.Facts{End: model.Stopped{As: apiv1.CanaryStopped, Words: stoppedWords}})})},
		},
	}
}

// TestVerdictWording locks the verdicts and words of every reason: testdata/golden/verdicts/
// <Reason>.txt holds each case's result and message. Run with -update to accept a change of
// wording.
func TestVerdictWording(t *testing.T) {
	cases := goldenCases()
	names := make([]string, 0, len(reasons))
	for name := range reasons {
		names = append(names, name)
		if len(cases[name]) == 0 {
			t.Errorf("reason %s has no case", name)
		}
	}
	slices.Sort(names)
	for name := range cases {
		if _, ok := reasons[name]; !ok {
			t.Errorf("cases of %s, a reason without a golden file", name)
		}
	}
	for _, name := range names {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s: %s.\n", name, reasons[name])
		for _, c := range cases[name] {
			fmt.Fprintf(&b, "\n== %s\nresult: %s\nmessage: %s\n", c.title, c.res.Result, c.res.Message)
		}
		path := filepath.Join("..", "..", "testdata", "golden", "verdicts", name+".txt")
		if *update {
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("reason %s has no golden file: %v", name, err)
			continue
		}
		if got := b.String(); got != string(want) {
			t.Errorf("%s: words changed (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "verdicts", "*.txt"))
	if len(files) != len(reasons) {
		t.Errorf("%d golden files for %d reasons", len(files), len(reasons))
	}
}
