package repair_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/stuck"
)

// patchedToGeneration makes the fake API server answer a patch with the StatefulSet at
// generation 3 (the fake tracker does not raise generations itself).
func patchedToGeneration(kube *fake.Clientset) {
	kube.PrependReactor("patch", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		set := objects()[0].(*appsv1.StatefulSet).DeepCopy()
		set.Generation = 3
		return true, set, nil
	})
}

// snapObserved is snap() with the StatefulSet's status.observedGeneration.
func snapObserved(generation int64) *stuck.Objects {
	s := snap()
	s.StatefulSets[0].Status.ObservedGeneration = generation
	return s
}

// TestSlowControllerUsesTheWaitBudget: the controller never observes the patch. The wait for it
// lasts the remaining --wait budget (not a fixed 30 s), and the delete waiting for the patch is
// skipped saying so, with nothing deleted.
func TestSlowControllerUsesTheWaitBudget(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	patchedToGeneration(kube)
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	var budget time.Duration
	diagnoses := 0
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Clock: clock,
		Deadline: clock.Now().Add(3 * time.Minute),
		Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
			diagnoses++
			return stuckReport("web-0"), snapObserved(2), nil
		},
		// The controller is paused: observedGeneration stays 2 until the budget ends.
		Follow: func(ctx context.Context, ns, name string, done func(*appsv1.StatefulSet) bool) error {
			deadline, _ := ctx.Deadline()
			budget = time.Until(deadline)
			set := objects()[0].(*appsv1.StatefulSet)
			if done(set) {
				return nil
			}
			return fmt.Errorf("%w of statefulset %s/%s", rollout.ErrTimeout, ns, name)
		},
	}
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	done, err := exec.Apply(context.Background(), actions)
	if err != nil || len(done) != 2 {
		t.Fatalf("%+v %v", done, err)
	}
	if budget < 2*time.Minute+59*time.Second || budget > 3*time.Minute {
		t.Errorf("the wait for the controller lasted up to %s, want the 3m left of --wait", budget)
	}
	want := "the StatefulSet controller did not observe the patch within the --wait budget (status.observedGeneration 2, patched generation 3); nothing deleted"
	if done[0].Result != apiv1.ResultDone || done[1].Result != apiv1.ResultSkipped || !strings.HasPrefix(done[1].Message, want) {
		t.Errorf("results %+v, want the delete skipped with %q", done, want)
	}
	if got := exec.NotObserved(); len(got) != 1 || got[0] != "shop/web" {
		t.Errorf("NotObserved %v, want [shop/web]", got)
	}
	if len(deleted(kube)) != 0 {
		t.Errorf("deleted %d pods on a diagnosis made before the controller observed the patch", len(deleted(kube)))
	}
}

// TestBudgetSpentBeforeTheWait: with no --wait budget left the follower is not even asked.
func TestBudgetSpentBeforeTheWait(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	patchedToGeneration(kube)
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	followed := false
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Clock: clock, Deadline: clock.Now().Add(-time.Second),
		Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
			return stuckReport("web-0"), snapObserved(2), nil
		},
		Follow: func(context.Context, string, string, func(*appsv1.StatefulSet) bool) error {
			followed = true
			return nil
		}}
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	done, err := exec.Apply(context.Background(), actions)
	if err != nil || followed || done[1].Result != apiv1.ResultSkipped || !strings.Contains(done[1].Message, "did not observe the patch") {
		t.Fatalf("followed %v, %+v %v", followed, done, err)
	}
}

// TestFreshDiagnosisTrustedOnlyOnceObserved: the follower saw the patch observed, but the fresh
// read is older (observedGeneration 2 < 3): it is read again, and the pod deleted only on a
// diagnosis that shows the patch observed.
func TestFreshDiagnosisTrustedOnlyOnceObserved(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	patchedToGeneration(kube)
	var seen []int64
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Deadline: time.Now().Add(time.Minute),
		Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
			generation := int64(2)
			if len(seen) >= 1 {
				generation = 3
			}
			seen = append(seen, generation)
			if generation < 3 {
				// Before the controller moved updateRevision, the pod is not seen as stale.
				return model.NewReport(true, nil, nil), snapObserved(generation), nil
			}
			return stuckReport("web-0"), snapObserved(generation), nil
		},
		Follow: func(context.Context, string, string, func(*appsv1.StatefulSet) bool) error { return nil },
	}
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	done, err := exec.Apply(context.Background(), actions)
	if err != nil || len(done) != 2 || done[1].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v (diagnoses saw generations %v)", done, err, seen)
	}
	if len(seen) < 2 || seen[0] != 2 || seen[1] != 3 {
		t.Errorf("diagnoses saw observedGeneration %v, want 2 then 3", seen)
	}
	if d := deleted(kube); len(d) != 1 || d[0].GetName() != "web-0" {
		t.Errorf("deletes %v, want web-0 once", d)
	}
}

// TestObservedWaitRunsOnTheInjectedClock: the follower says the controller observed the patch,
// but every fresh read is older. The wait for a read that shows it runs on the executor's clock,
// its deadline and its pauses alike: stepping a fake clock past the deadline ends it (the delete
// skipped, nothing deleted), with no real second slept.
func TestObservedWaitRunsOnTheInjectedClock(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	patchedToGeneration(kube)
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Clock: clock, Deadline: clock.Now().Add(10 * time.Second),
		Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
			return stuckReport("web-0"), snapObserved(2), nil
		},
		Follow: func(context.Context, string, string, func(*appsv1.StatefulSet) bool) error { return nil },
	}
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	type applied struct {
		done []model.Action
		err  error
	}
	out := make(chan applied, 1)
	go func() {
		done, err := exec.Apply(context.Background(), actions)
		out <- applied{done, err}
	}()
	start := time.Now()
	for {
		select {
		case got := <-out:
			if got.err != nil || len(got.done) != 2 || got.done[1].Result != apiv1.ResultSkipped {
				t.Fatalf("%+v %v", got.done, got.err)
			}
			if len(deleted(kube)) != 0 {
				t.Errorf("deleted %v on reads that never showed the patch observed", deleted(kube))
			}
			if real := time.Since(start); real > 3*time.Second {
				t.Errorf("took %s of real time for 10 s of the fake clock", real)
			}
			return
		case <-time.After(5 * time.Millisecond):
			if clock.HasWaiters() {
				clock.Step(time.Second)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the wait never reached the fake clock's deadline: it sleeps in real time")
			}
		}
	}
}
