package canary

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
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
	finding := describeFindings(r.res.Findings)
	if r.o.NoRollback {
		r.stop(apiv1.WaitStuck, fmt.Sprintf("step %s failed: %s held for %s; --no-rollback: stopped, the partition stays %d", step.Step, finding, r.o.Hold, r.partition))
		return nil
	}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s failed: %s held for %s: rolling back\n", r.o.Namespace, r.o.Name, step.Step, finding, r.o.Hold)
	rep, snap, err := diagnose.FromSource(ctx, r.live, r.o.Diagnosis)
	if err != nil {
		return err
	}
	set := find(snap, r.o.Namespace, r.o.Name)
	if set == nil || r.changed(set) {
		v, msg := r.stopIfChanged(snap)
		if v == "" {
			v, msg = apiv1.WaitNotFound, fmt.Sprintf("statefulset %s/%s: deleted while canary ran", r.o.Namespace, r.o.Name)
		}
		r.stop(v, msg)
		return nil
	}
	actions, why := engine.RollbackActions(rep, snap, set, r.partition)
	if actions == nil {
		r.stop(apiv1.WaitStuck, fmt.Sprintf("step %s failed: %s held for %s; %s; the partition stays %d", step.Step, finding, r.o.Hold, why, r.partition))
		return nil
	}
	canary := engine.CanaryPods(set, r.partition)
	scope := gather.Scope{Namespace: r.o.Namespace, Names: []string{r.o.Name}}
	exec := repair.New(repair.Options{Clients: r.c, Scope: scope, Diagnosis: r.o.Diagnosis, DryRun: apiv1.DryRunNone,
		Policy: plan.Policy{Rollback: true}, Progress: r.o.Progress})
	applied, err := exec.Apply(ctx, actions)
	r.res.Actions = append(r.res.Actions, applied...)
	if err != nil {
		return err
	}
	rolled := verdict.RolledBack(applied)
	if len(rolled) == 0 {
		r.stop(apiv1.WaitStuck, fmt.Sprintf("step %s failed: %s held for %s; the rollback was not made: %s", step.Step, finding, r.o.Hold, applied[0].Message))
		return nil
	}
	// The rollback wrote the template: from now on it is the one canary relies on.
	after, err := r.observed(ctx)
	if err != nil {
		return err
	}
	if after.UID != r.uid || engine.Partition(after) != r.partition {
		r.stop(apiv1.CanaryStopped, describeChange(r.uid, r.generation, r.partition, nil, after, false)+" during the rollback; nothing overwritten")
		return nil
	}
	r.remember(after)
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: template rolled back to revision %s; waiting for %s Ready on it\n", r.o.Namespace, r.o.Name, rolled[0].Revision, strings.Join(canary, ", "))
	stepFindings := r.res.Findings
	res, err := follow.Run(ctx, r.live, follow.Options{Diagnosis: r.o.Diagnosis, Hold: r.o.Hold, Steady: r.o.Steady, Log: r.o.Log, Stop: r.stopIfChanged})
	if err != nil {
		return err
	}
	if res.Result != apiv1.WaitComplete {
		actions := r.res.Actions
		r.res.WaitResult = *res
		r.res.Actions, r.res.RolledBack = actions, rolled
		r.res.Message = fmt.Sprintf("rolled back to revision %s after step %s failed (%s), but: %s", rolled[0].Revision, step.Step, finding, res.Message)
		return nil
	}
	restored := ""
	if set, err := r.observed(ctx); err == nil && set.Status.UpdateRevision == set.Status.CurrentRevision && engine.Partition(set) != r.res.PartitionBefore &&
		!r.changed(set) {
		body, err := engine.PartitionPatch(set, r.res.PartitionBefore)
		if err == nil {
			if _, err = r.c.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body, engine.PatchOptions); err == nil {
				restored = fmt.Sprintf("; partition restored to %d", r.res.PartitionBefore)
			}
		}
		if err != nil {
			restored = fmt.Sprintf("; the partition stays %d (restoring %d failed: %v)", r.partition, r.res.PartitionBefore, err)
		}
	}
	actions = r.res.Actions
	r.res.WaitResult = *res
	r.res.Actions, r.res.RolledBack, r.res.Findings = actions, rolled, stepFindings
	r.res.Result = apiv1.WaitRolledBack
	r.res.Message = fmt.Sprintf("step %s failed: %s held for %s; rolled back to revision %s (revision %s failed), %s Ready on it again%s",
		step.Step, finding, r.o.Hold, rolled[0].Revision, rolled[0].FromRevision, strings.Join(canary, ", "), restored)
	return nil
}

// describeFindings names the blocking findings that held: pod, code and reason.
func describeFindings(findings []stuck.Finding) string {
	var parts []string
	for _, f := range findings {
		if !f.Blocking() {
			continue
		}
		s := string(f.Code)
		if f.Pod != "" {
			s = f.Pod + " " + s
		}
		if f.Reason != "" {
			s += " (" + f.Reason + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "a finding"
	}
	return strings.Join(parts, ", ")
}
