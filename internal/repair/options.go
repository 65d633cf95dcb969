package repair

import (
	"context"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options say what to repair and how; fix, wait --fix and watch --fix share them.
type Options struct {
	Clients gather.Clients
	// Scope is what a fresh diagnosis reads (after a patch or a conflict).
	Scope gather.Scope
	// Diagnosis tunes the fresh diagnoses.
	Diagnosis stuck.Options
	// Source, if set, is where fresh diagnoses read the cluster instead of a fresh LIST of the
	// scope (gather.Lister): every delete is proven on what it returns.
	Source gather.Source
	// DryRun is none, client or server.
	DryRun apiv1.DryRunMode
	// Progress, if set, is told about each action as it completes.
	Progress func(model.Action)
	// Policy says which optional repairs to plan (--rollback, --force-lost-node).
	plan.Policy
	// Disruption is how a pod proven stuck is removed (--disruption): delete (default) or evict.
	Disruption apiv1.DisruptionMode
}

// Rediagnose diagnoses what the source returns; by default a fresh LIST of the scope.
func (o Options) Rediagnose() Diagnoser {
	src := o.Source
	if src == nil {
		src = gather.Lister{Clients: o.Clients, Scope: o.Scope}
	}
	return func(ctx context.Context) (*model.Report, *stuck.Objects, error) {
		return diagnose.FromSource(ctx, src, o.Diagnosis)
	}
}

// New returns the executor for the options: it plans with their policy and proves each action
// again with their fresh diagnoses.
func New(o Options) *Executor {
	return &Executor{
		Kube:       o.Clients.Kube,
		DryRun:     o.DryRun,
		Progress:   o.Progress,
		Planner:    plan.Planner{Policy: o.Policy},
		Rediagnose: o.Rediagnose(),
		Disruption: o.Disruption,
	}
}

// Repair plans the safe repairs of a diagnosis and applies them. It is what wait --fix does
// when a finding has held.
func (e *Executor) Repair(ctx context.Context, rep *model.Report, snap *stuck.Objects) ([]model.Action, error) {
	actions := e.Planner.Plan(rep, snap).Actions
	if len(actions) == 0 {
		return nil, nil
	}
	return e.Apply(ctx, actions)
}
