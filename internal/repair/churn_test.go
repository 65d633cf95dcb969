package repair_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
)

// freshDiagnoses returns an Executor whose fresh diagnoses answer the reports in turn (the last
// one again once they run out) and counts them.
func freshDiagnoses(kube *fake.Clientset, reports ...*model.Report) (*repair.Executor, *int) {
	n := 0
	return &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
		rep := reports[min(n, len(reports)-1)]
		n++
		return rep, snap(), nil
	}}, &n
}

// withUID is a StaleRevisionStuck report on web-0 with the given pod UID and resourceVersion.
func withUID(uid, rv string) *model.Report {
	return model.NewReport(false, nil, []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop",
		StatefulSet: "web", Pod: "web-0"}, Target: &stuck.PodRef{Name: "web-0", UID: types.UID(uid)}}})
}

func deleted(kube *fake.Clientset) []k8stesting.DeleteAction {
	var out []k8stesting.DeleteAction
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetVerb() == "delete" {
			out = append(out, d)
		}
	}
	return out
}

// TestBackOffChurnDoesNotBlockTheDelete: the kubelet rewrote web-0's status (resourceVersion 5 → 9)
// between the plan and the answer to the prompt; the same pod, still stuck, is deleted.
func TestBackOffChurnDoesNotBlockTheDelete(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	exec, diagnoses := freshDiagnoses(kube, withUID("uid-web-0", "9"))
	done, err := exec.Apply(context.Background(), mustPlan(withUID("uid-web-0", "5")))
	if err != nil || len(done) != 1 || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	if *diagnoses != 1 {
		t.Errorf("the delete must be proven by a fresh diagnosis: %d diagnoses", *diagnoses)
	}
	d := deleted(kube)
	if len(d) != 1 || string(*d[0].GetDeleteOptions().Preconditions.UID) != "uid-web-0" {
		t.Errorf("deletes %+v", d)
	}
}

// TestRecoveredPodIsNotDeleted: between plan and delete web-0 became Ready (or the template was
// reverted): the fresh diagnosis no longer proves it stuck, nothing is deleted.
func TestRecoveredPodIsNotDeleted(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	exec, _ := freshDiagnoses(kube, model.NewReport(false, nil, nil))
	done, err := exec.Apply(context.Background(), mustPlan(withUID("uid-web-0", "5")))
	if err != nil || done[0].Result != apiv1.ResultSkipped || !strings.Contains(done[0].Message, "no longer proves it stuck") {
		t.Fatalf("%+v %v", done, err)
	}
	if d := deleted(kube); len(d) != 0 {
		t.Errorf("deleted %d pods", len(d))
	}
}

// TestReplacedDuringDeleteIsProvenAgain: the pod is replaced between the fresh diagnosis and the
// delete (409 on the UID precondition): stsdiag proves again once; the new pod is stuck too, so
// it is deleted with its own UID — and never a third time.
func TestReplacedDuringDeleteIsProvenAgain(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	calls := 0
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: UID in precondition: uid-web-0, UID in object meta: uid-new"))
		}
		return false, nil, nil
	})
	exec, diagnoses := freshDiagnoses(kube, withUID("uid-web-0", "5"), withUID("uid-new", "1"))
	done, err := exec.Apply(context.Background(), mustPlan(withUID("uid-web-0", "5")))
	if err != nil || done[0].Result != apiv1.ResultDone || done[0].UID != "uid-new" || *diagnoses != 2 {
		t.Fatalf("%+v %v, %d diagnoses", done, err, *diagnoses)
	}
	d := deleted(kube)
	if len(d) != 2 || string(*d[1].GetDeleteOptions().Preconditions.UID) != "uid-new" {
		t.Errorf("deletes %+v", d)
	}
}

// TestReplacedAndRecoveredIsSkipped: after the conflict the fresh diagnosis says the replacement
// is fine: skipped, one delete attempt only.
func TestReplacedAndRecoveredIsSkipped(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed"))
	})
	exec, _ := freshDiagnoses(kube, withUID("uid-web-0", "5"), model.NewReport(false, nil, nil))
	done, err := exec.Apply(context.Background(), mustPlan(withUID("uid-web-0", "5")))
	if err != nil || done[0].Result != apiv1.ResultSkipped {
		t.Fatalf("%+v %v", done, err)
	}
	if d := deleted(kube); len(d) != 1 {
		t.Errorf("want exactly one delete attempt, got %d", len(d))
	}
}

// TestForceDeleteOnlyOnALostNode: ForceDeletePod is sent with grace period 0 and the UID
// precondition only while a fresh diagnosis still says the pod's node is lost.
func TestForceDeleteOnlyOnALostNode(t *testing.T) {
	stuck := func(lost string) *model.Report {
		return model.NewReport(false, nil, []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.PodStuckTerminating, Severity: apiv1.SeverityError, Namespace: "shop",
			StatefulSet: "web", Pod: "web-1"}, LostNode: lost, Target: &stuck.PodRef{Name: "web-1", UID: "uid-web-1"}}})
	}
	forced, _ := planOf(plan.Policy{ForceLostNode: true}, stuck("node-1"), snap())
	if len(forced) != 1 || forced[0].Kind() != apiv1.ForceDeletePod || forced[0].UID != "uid-web-1" {
		t.Fatalf("plan %+v", forced)
	}
	if p, _ := planOf(plan.Policy{ForceLostNode: true}, stuck(""), snap()); len(p) != 0 {
		t.Errorf("a node that is not lost: no force delete, got %+v", p)
	}
	if p, _ := planOf(plan.Policy{}, stuck("node-1"), snap()); len(p) != 0 {
		t.Errorf("without --force-lost-node: no force delete, got %+v", p)
	}

	kube := fake.NewClientset(objects()...)
	exec, _ := freshDiagnoses(kube, stuck("node-1"))
	done, err := exec.Apply(context.Background(), forced)
	if err != nil || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	opts := deleted(kube)[0].GetDeleteOptions()
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || string(*opts.Preconditions.UID) != "uid-web-1" {
		t.Errorf("delete options %+v", opts)
	}

	kube = fake.NewClientset(objects()...)
	exec, _ = freshDiagnoses(kube, stuck("")) // the node came back meanwhile
	done, _ = exec.Apply(context.Background(), forced)
	if done[0].Result != apiv1.ResultSkipped || len(deleted(kube)) != 0 {
		t.Errorf("the node is no longer lost: nothing force-deleted, got %+v", done)
	}
}

// TestEachDeleteProvenAfterTheLastWrite: with two pods to delete, the second is proven again
// after the first was deleted, and the prover is told of that write (a prover reading a cache
// waits for it); a delete that wrote nothing (the pod was already gone) needs no new proof.
func TestEachDeleteProvenAfterTheLastWrite(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	var calls [][]repair.Write
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(_ context.Context, after []repair.Write) (*model.Report, *stuck.Objects, error) {
		calls = append(calls, after)
		return stuckReport("web-0", "web-1"), snap(), nil
	}}
	done, err := exec.Apply(context.Background(), mustPlan(stuckReport("web-0", "web-1")))
	if err != nil || len(done) != 2 || done[0].Result != apiv1.ResultDone || done[1].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	want := repair.Write{Kind: apiv1.DeletePod, Namespace: "shop", Name: "web-0", UID: "uid-web-0"}
	if len(calls) != 2 || len(calls[0]) != 0 || len(calls[1]) != 1 || calls[1][0] != want {
		t.Errorf("proofs made after %v, want none then after the delete of web-0", calls)
	}

	kube = fake.NewClientset(objects()...)
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0")
	})
	calls = nil
	exec.Kube = kube
	if _, err := exec.Apply(context.Background(), mustPlan(stuckReport("web-0", "web-1"))); err != nil || len(calls) != 1 {
		t.Errorf("%d proofs (%v), want one: nothing was written between the deletes", len(calls), err)
	}
}
