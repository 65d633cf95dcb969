package canary

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// failed ends a step whose finding held for --hold: with --no-rollback it stops (Stuck);
// otherwise it rolls the template back as fix --rollback does (the same planner, guards and
// executor), deletes only the proven-stuck canary pods, and waits for them to be Ready on the
// old revision (RolledBack).
//
// The partition stays where the step set it until the canary pods are Ready again: lowering it
// while the failing template is in place would let the controller move more pods to it, and
// raising it would make nothing safer (the deleted canary pods come back on the update revision,
// which the rollback made the old one). Once status.updateRevision equals currentRevision no pod
// can move whatever the partition is, and only then is the partition restored to its value
// before the canary.
func (r *runner) failed(ctx context.Context, step engine.Resolved) error {
	failed := model.FailedStep{Step: step.Step, Findings: r.seen.Findings, Hold: r.o.Hold}
	return r.rollBack(ctx, failed, fmt.Sprintf("%s held for %s", explain.HeldFindings(failed.Findings), r.o.Hold),
		func(rep *model.Report, snap *stuck.Objects, set *appsv1.StatefulSet) ([]model.Action, model.Unrollable) {
			return plan.CanaryRollback(rep, snap, set, engine.CanaryPods(set, r.partition))
		})
}

// failedAnalysis ends a step whose analysis failed: its pods may all be Ready, so the rollback
// deletes none (plan.AnalysisRollback) — the controller replaces the canary pods, no longer on
// the update revision, as any rolling update does — and otherwise goes as failed's.
func (r *runner) failedAnalysis(ctx context.Context, step engine.Resolved, run *apiv1.AnalysisRun) error {
	failed := model.FailedStep{Step: step.Step, Hold: r.o.Hold, Analysis: run}
	return r.rollBack(ctx, failed, explain.Analysis(run),
		func(_ *model.Report, snap *stuck.Objects, set *appsv1.StatefulSet) ([]model.Action, model.Unrollable) {
			a, why := plan.AnalysisRollback(snap, set)
			if why != "" {
				return nil, model.Unrollable{Namespace: set.Namespace, Name: set.Name, Why: why}
			}
			return []model.Action{a}, model.Unrollable{}
		})
}

// rollBack rolls a failed step back with the actions planned for it (why: what failed), then
// follows the canary pods back to the earlier revision.
func (r *runner) rollBack(ctx context.Context, failed model.FailedStep, why string, planned func(*model.Report, *stuck.Objects, *appsv1.StatefulSet) ([]model.Action, model.Unrollable)) error {
	if r.o.NoRollback {
		r.end = model.CanaryHalted{FailedStep: failed, Partition: r.partition}
		return nil
	}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s failed: %s: rolling back\n", r.o.Namespace, r.o.Name, failed.Step, why)
	set, rolled, err := r.applyRollback(ctx, failed, planned)
	if err != nil || rolled == nil {
		return err
	}
	return r.followRollback(ctx, failed, set, *rolled)
}

// applyRollback plans the rollback on a fresh read and applies it through the repair executor,
// each delete proven on a fresh LIST of the StatefulSet, as fix proves. It returns the
// StatefulSet as planned from and the rollback done; none when the canary ended otherwise
// (someone else changed the StatefulSet, no safe rollback, the rollback failed: runner.end).
func (r *runner) applyRollback(ctx context.Context, failed model.FailedStep, planned func(*model.Report, *stuck.Objects, *appsv1.StatefulSet) ([]model.Action, model.Unrollable)) (*appsv1.StatefulSet, *apiv1.RolledBack, error) {
	rep, snap, err := diagnose.FromSource(ctx, r.live, r.o.Diagnosis)
	if err != nil {
		return nil, nil, err
	}
	set := find(snap, r.o.Namespace, r.o.Name)
	if set == nil || r.changed(set) {
		r.end = model.CanaryDeleted{Namespace: r.o.Namespace, Name: r.o.Name}
		if stopped, ok := r.stopFor(set); ok {
			r.end = stopped
		}
		return nil, nil, nil
	}
	actions, unrollable := planned(rep, snap, set)
	if actions == nil {
		r.end = model.CanaryUnrollable{FailedStep: failed, Why: unrollable, Partition: r.partition}
		return nil, nil, nil
	}
	scope := gather.Scope{Namespace: r.o.Namespace, Names: []string{r.o.Name}}
	prove := func(ctx context.Context, _ []repair.Write) (*model.Report, *stuck.Objects, error) {
		return diagnose.FromSource(ctx, gather.Lister{Clients: r.c, Scope: scope}, r.o.Diagnosis)
	}
	exec := repair.New(repair.Options{Kube: r.c.Kube, Prove: prove, DryRun: apiv1.DryRunNone,
		Policy: plan.Policy{Rollback: true}, Progress: r.o.Progress})
	applied, err := exec.Apply(ctx, actions)
	r.actions = append(r.actions, applied...)
	if err != nil {
		return nil, nil, err
	}
	rolled := verdict.RollbacksDone(applied)
	if len(rolled) == 0 {
		r.end = model.CanaryRollbackFailed{FailedStep: failed, Action: applied[0]}
		return nil, nil, nil
	}
	return set, &rolled[0], nil
}

// followRollback follows a rollback done from set until the canary pods are Ready on the earlier
// revision, then restores the partition to its value before the canary (failed's comment says
// why only then), and ends the canary RolledBack — or Stopped, or with the follow's verdict.
func (r *runner) followRollback(ctx context.Context, failed model.FailedStep, set *appsv1.StatefulSet, rolled apiv1.RolledBack) error {
	canary := engine.CanaryPods(set, r.partition)
	// The rollback wrote the template: from now on it is the one canary relies on. Its patch
	// tested the generation planned from, so the write made the next one; wait for the cache to
	// show it (an older object would be taken for someone else's change).
	r.generation = set.Generation + 1
	after, err := r.observed(ctx)
	if err != nil {
		return err
	}
	if after.UID != r.uid || controller.Partition(after) != r.partition {
		r.end = model.CanaryStopped{Change: changeOf(r.uid, r.generation, r.partition, nil, after, false), DuringRollback: true}
		return nil
	}
	r.remember(after)
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: template rolled back to revision %s; waiting for %s Ready on it\n", r.o.Namespace, r.o.Name, rolled.Revision, strings.Join(canary, ", "))
	res, err := follow.Run(ctx, r.live, follow.Options{Stepping: true, Diagnosis: r.o.Diagnosis, Hold: r.o.Hold, Steady: r.o.Steady, Log: r.o.Log, Stop: r.stopIfChanged})
	if err != nil {
		return err
	}
	if res.Result != apiv1.WaitComplete {
		r.seen, r.end = res, model.CanaryRollbackUnfinished{FailedStep: failed, Rolled: rolled, Then: res.Verdict()}
		return nil
	}
	// The verdict is about the step's findings, on the StatefulSets as they are now.
	r.seen = &model.WaitResult{StatefulSets: res.StatefulSets, Findings: failed.Findings}
	r.end = model.CanaryRolledBack{FailedStep: failed, Rolled: rolled, Pods: canary, Restore: r.restorePartition(ctx)}
	return nil
}

// restorePartition sets the partition back to its value before the canary, once the rollback
// is complete (the update revision is current) and nobody else changed the StatefulSet.
func (r *runner) restorePartition(ctx context.Context) model.PartitionRestore {
	restore := model.PartitionRestore{To: r.res.PartitionBefore, Stays: r.partition}
	if set, err := r.observed(ctx); err == nil && set.Status.UpdateRevision == set.Status.CurrentRevision && controller.Partition(set) != r.res.PartitionBefore &&
		!r.changed(set) {
		restore.Tried = true
		body, err := engine.PartitionPatch(set, r.res.PartitionBefore)
		if err == nil {
			_, err = r.c.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body, engine.PatchOptions)
		}
		restore.Err = err
	}
	return restore
}
