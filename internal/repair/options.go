package repair

import (
	"context"

	"k8s.io/client-go/kubernetes"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options say how to repair; fix, wait --fix, watch --fix and canary's rollback each build them
// with a prover of their own.
type Options struct {
	Kube kubernetes.Interface
	// Prove reads the cluster again and diagnoses it: every delete is proven on what it returns.
	// fix and wait --fix read a fresh LIST of their scope; watch reads its informers' caches once
	// they have seen the executor's writes.
	Prove Prover
	// DryRun is none, client or server.
	DryRun apiv1.DryRunMode
	// Progress, if set, is told about each action as it completes.
	Progress func(model.Action)
	// Policy says which optional repairs to plan (--rollback, --force-lost-node).
	plan.Policy
	// Disruption is how a pod proven stuck is removed (--disruption): delete (default) or evict.
	Disruption apiv1.DisruptionMode
	// Follow and Reads replace the executor's reads of Kube (WatchFollower, ClientReads).
	Follow Follower
	Reads  EvictionReads
}

// New returns the executor for the options: it plans with their policy and proves each action
// again with their prover.
func New(o Options) *Executor {
	return &Executor{
		Kube:       o.Kube,
		DryRun:     o.DryRun,
		Progress:   o.Progress,
		Planner:    plan.Planner{Policy: o.Policy},
		Prove:      o.Prove,
		Disruption: o.Disruption,
		Follow:     o.Follow,
		Reads:      o.Reads,
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
