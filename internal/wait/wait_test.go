package wait_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/internal/wait"
	"github.com/stsdiag/stsdiag/stuck"
)

func TestVerdictOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want apiv1.Verdict
	}{
		{"namespace missing", fmt.Errorf("context east: %w", &gather.NotFoundError{What: `namespace "shop"`}), apiv1.WaitNotFound},
		{"forbidden", fmt.Errorf("listing statefulsets in namespace shop: %w",
			apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "", errors.New("no"))), apiv1.WaitUnevaluable},
		{"unreachable", errors.New("cannot reach the API server: connection refused"), apiv1.WaitUnevaluable},
		{"interrupted", fmt.Errorf("listing pods: %w", context.Canceled), apiv1.WaitInterrupted},
		{"deadline", fmt.Errorf("listing pods: %w", context.DeadlineExceeded), apiv1.WaitTimedOut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := follow.VerdictOf(c.err); got != c.want {
				t.Errorf("VerdictOf(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
	if !verdict.Decisive(apiv1.WaitUnevaluable) {
		t.Error("a cluster that cannot be evaluated ends every cluster's wait")
	}
	r := explain.Word(verdict.MergeFleet([]string{"a", "b"}, []*model.WaitResult{model.NewWaitResult(apiv1.WaitNotFound, "gone"), model.NewWaitResult(apiv1.WaitUnevaluable, "forbidden")}))
	if r.Result != apiv1.WaitUnevaluable {
		t.Errorf("merged %s, want Unevaluable first", r.Result)
	}
}

// stillSource is a cluster where a rollout progresses and nothing ever changes.
type stillSource struct{}

func (stillSource) Snapshot(context.Context) (*stuck.Objects, []string, error) {
	set := appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "db-uid", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 1, CurrentRevision: "db-a", UpdateRevision: "db-a"},
	}
	return &stuck.Objects{Now: time.Now(), StatefulSets: []appsv1.StatefulSet{set}}, nil, nil
}

func (stillSource) Changes() <-chan struct{} { return nil }

// TestRunFleetStuckEndsEveryWait: one context stuck ends the wait of the others at once (their
// gate returns Interrupted), the worst verdict wins, and a context whose wait fails only once
// it was ended is Interrupted, not Unevaluable (which would outrank the Stuck that ended it).
func TestRunFleetStuckEndsEveryWait(t *testing.T) {
	stuckResult := model.NewWaitResult(apiv1.WaitStuck, "1 finding(s) held for 30s")
	stuckResult.Findings = []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	got := wait.RunFleet(ctx, []string{"east", "west", "north"}, func(ctx context.Context, name string) (*model.WaitResult, error) {
		switch name {
		case "east":
			time.Sleep(50 * time.Millisecond) // west's gate is running by then
			return stuckResult, nil
		case "west":
			return follow.Run(ctx, stillSource{}, follow.Options{Diagnosis: stuck.DefaultOptions(), Hold: time.Hour})
		}
		<-ctx.Done() // north fails once its wait was ended, with an error that does not say so
		return nil, errors.New("informer sync aborted")
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s: a stuck context must end every wait", took)
	}
	if got.Result != apiv1.WaitStuck || len(got.Findings) != 1 || got.Findings[0].Context != "east" {
		t.Errorf("merged %s %+v, want Stuck with east's finding", got.Result, got.Findings)
	}
	want := "east: Stuck: 1 finding(s) held for 30s; west: Interrupted: interrupted while the rollout was still progressing; " +
		"north: Interrupted: context north: informer sync aborted"
	if got.Message != want {
		t.Errorf("message %q\nwant      %q", got.Message, want)
	}
}

// TestRunFleetUnevaluableStopsNobody: a member that cannot be reached fails at once, yet the
// others' waits go on to their own verdicts (here one stuck after a while, one complete), and
// the merged verdict is Unevaluable, naming each member that did not complete, with the stuck
// member's finding.
func TestRunFleetUnevaluableStopsNobody(t *testing.T) {
	stuckResult := model.NewWaitResult(apiv1.WaitStuck, "1 finding(s) held for 30s")
	stuckResult.Findings = []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0"}}}
	got := wait.RunFleet(context.Background(), []string{"fleet/a", "fleet/b", "fleet/gone"}, func(ctx context.Context, name string) (*model.WaitResult, error) {
		switch name {
		case "fleet/gone":
			return nil, errors.New("cannot reach the API server: connection refused")
		case "fleet/a":
			select {
			case <-time.After(300 * time.Millisecond):
				return stuckResult, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return model.NewWaitResult(apiv1.WaitComplete, "rollout complete"), nil
	})
	if got.Result != apiv1.WaitUnevaluable || len(got.Findings) != 1 || got.Findings[0].Context != "fleet/a" {
		t.Errorf("merged %s %+v, want Unevaluable with fleet/a's finding", got.Result, got.Findings)
	}
	want := "fleet/a: Stuck: 1 finding(s) held for 30s; fleet/gone: Unevaluable: context fleet/gone: cannot reach the API server: connection refused"
	if got.Message != want {
		t.Errorf("message %q\nwant      %q", got.Message, want)
	}
}
