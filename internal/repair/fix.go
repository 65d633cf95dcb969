package repair

import (
	"context"
	"errors"
	"io"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/stuck"
)

// Options say what to repair and how; fix, wait --fix and watch --fix share them.
type Options struct {
	Clients gather.Clients
	// Scope is what a fresh diagnosis reads (after a patch or a conflict).
	Scope gather.Scope
	// Diagnosis tunes the fresh diagnoses.
	Diagnosis stuck.Options
	// DryRun is none, client or server.
	DryRun apiv1.DryRunMode
	// Progress, if set, is told about each action as it completes.
	Progress func(model.Action)
	// Rollback also plans rollbacks of failing update revisions to an earlier revision whose
	// pods are Ready (fix/wait/watch --rollback; see PlanRollbacks).
	Rollback bool
}

// New returns the executor for the options: its fresh diagnoses gather the same scope again.
func New(o Options) *Executor {
	return &Executor{
		Kube:     o.Clients.Kube,
		DryRun:   o.DryRun,
		Progress: o.Progress,
		Rollback: o.Rollback,
		Rediagnose: func(ctx context.Context) (*model.Report, *snapshot.Snapshot, error) {
			return diagnose.Run(ctx, o.Clients, o.Scope, o.Diagnosis)
		},
	}
}

// Repair plans the safe repairs of a diagnosis and applies those keep accepts (all when keep is
// nil). It is what wait --fix and watch --fix do when a finding has held.
func (e *Executor) Repair(ctx context.Context, rep *model.Report, snap *snapshot.Snapshot, keep func(model.Action) bool) ([]model.Action, error) {
	planned, unrepaired := Plan(rep, snap)
	if e.Rollback {
		planned, _ = PlanRollbacks(rep, snap, planned, unrepaired)
	}
	var actions []model.Action
	for _, a := range planned {
		if keep == nil || keep(a) {
			actions = append(actions, a)
		}
	}
	if len(actions) == 0 {
		return nil, nil
	}
	return e.Apply(ctx, actions)
}

// ErrNotConfirmed means the person asked declined the plan: nothing was changed.
var ErrNotConfirmed = errors.New("not confirmed; nothing changed")

// FixOptions are the options of Fix.
type FixOptions struct {
	Options
	// Confirm is shown the plan before anything changes; nil applies without asking. An error
	// means confirmation was impossible (no terminal): the actions are then skipped.
	Confirm func(plan *model.FixResult) (bool, error)
	// OnPlan, if set, is shown the plan and the diagnosis warnings first.
	OnPlan func(plan *model.FixResult, warnings []string)
	// ForceLostNode also plans ForceDeletePod for pods stuck terminating on a lost node.
	ForceLostNode bool
	// Wait, if positive, follows the rollouts of the repaired StatefulSets for up to this long,
	// writing their progress to RolloutLog.
	Wait       time.Duration
	RolloutLog io.Writer
}

// Fix diagnoses the scope, plans the safe repairs, asks, applies them and optionally follows the
// rollouts. The error is ErrNotConfirmed, a rollout.ErrTimeout, or a failure to evaluate
// (gathering, an UnavailableError): the result is valid in every case but the last.
func Fix(ctx context.Context, o FixOptions) (*model.FixResult, error) {
	rep, snap, err := diagnose.Run(ctx, o.Clients, o.Scope, o.Diagnosis)
	if err != nil {
		return nil, err
	}
	result := &model.FixResult{DryRun: o.DryRun}
	result.Actions, result.Unrepaired = Plan(rep, snap)
	if o.Rollback {
		result.Actions, result.Unrepaired = PlanRollbacks(rep, snap, result.Actions, result.Unrepaired)
	}
	if o.ForceLostNode {
		forced := PlanForceDeletes(rep)
		result.Actions = append(result.Actions, forced...)
		result.Unrepaired = withoutPods(result.Unrepaired, apiv1.PodStuckTerminating, forced)
	}
	if result.Actions == nil {
		result.Actions = []model.Action{}
	}
	if o.OnPlan != nil {
		o.OnPlan(result, rep.Warnings)
	}
	if len(result.Actions) == 0 {
		return result, nil
	}
	if o.DryRun == apiv1.DryRunNone && o.Confirm != nil {
		ok, err := o.Confirm(result)
		if err != nil {
			for i := range result.Actions {
				result.Actions[i].Result, result.Actions[i].Message = apiv1.ResultSkipped, "not confirmed"
			}
			return result, nil
		}
		if !ok {
			return result, ErrNotConfirmed
		}
	}
	result.Actions, err = New(o.Options).Apply(ctx, result.Actions)
	if err != nil {
		return result, err
	}
	if o.Wait > 0 && o.DryRun == apiv1.DryRunNone {
		if err := followRollouts(ctx, o, result); err != nil {
			return result, err
		}
	}
	return result, nil
}

// followRollouts follows every StatefulSet a repair was done for. "complete" is said only when
// every StatefulSet with a planned action was repaired and has completed: never of a set whose
// action was skipped or failed, which is likely still stuck.
func followRollouts(ctx context.Context, o FixOptions, result *model.FixResult) error {
	log := o.RolloutLog
	if log == nil {
		log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	repaired, unrepaired := map[string]bool{}, false
	var order []model.Action
	for _, a := range result.Actions {
		key := snapshot.Key(a.Namespace, a.StatefulSet)
		if a.Result != apiv1.ResultDone {
			unrepaired = true
			continue
		}
		if !repaired[key] {
			repaired[key] = true
			order = append(order, a)
		}
	}
	for _, a := range order {
		if err := rollout.Wait(ctx, o.Clients.Kube, a.Namespace, a.StatefulSet, log); err != nil {
			if errors.Is(err, rollout.ErrTimeout) {
				result.Rollout = apiv1.RolloutTimedOut
			}
			return err
		}
	}
	if len(order) > 0 && !unrepaired {
		result.Rollout = apiv1.RolloutComplete
	}
	return nil
}

// withoutPods drops the findings of a code about pods the actions repair.
func withoutPods(findings []model.Finding, code apiv1.Code, actions []model.Action) []model.Finding {
	repaired := map[string]bool{}
	for _, a := range actions {
		repaired[snapshot.Key(a.Namespace, a.Pod)] = true
	}
	var out []model.Finding
	for _, f := range findings {
		if f.Code != code || !repaired[snapshot.Key(f.Namespace, f.Pod)] {
			out = append(out, f)
		}
	}
	return out
}
