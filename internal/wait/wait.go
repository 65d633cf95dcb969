// Package wait is the wait use case: it follows StatefulSets (package follow) to a verdict in one
// cluster or a fleet of contexts, repairing once when asked (wait --fix).
package wait

import (
	"context"
	"fmt"
	"io"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/fleet"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
)

// WaitOptions tune Wait.
type WaitOptions struct {
	follow.Options
	// Timeout is the deadline the caller gave ctx, named in a TimedOut verdict.
	Timeout time.Duration
	// Fix applies fix's safe repairs once when stuck, then keeps waiting (wait --fix); with
	// Rollback a failing new template may be rolled back.
	Fix, Rollback bool
	// Disruption is how a pod proven stuck is removed (wait --fix --disruption).
	Disruption apiv1.DisruptionMode
	// Progress, if set, is told about each repair action as it completes.
	Progress func(model.Action)
	// Warn, if set, receives each warning about optional data that could not be read.
	Warn func(string)
	// Logs, if positive, adds to a Stuck verdict's findings about containers that exited the
	// last Logs lines of the run that exited (gather.PreviousLogs; wait --logs).
	Logs int64
}

// Wait follows the StatefulSets of scope in one cluster (Run over gather's informers) to a
// verdict, decided once where the loop ends (verdict.Decide: its end, the repairs, the
// budget). A wait that cannot start returns NotFound or Unevaluable (VerdictOf) with the error;
// the error is also set when a repair could not be evaluated.
func Wait(ctx context.Context, c gather.Clients, scope gather.Scope, opts WaitOptions) (*model.WaitResult, error) {
	live, warnings, err := gather.StartLive(ctx, c, scope, nil)
	if err != nil {
		end, err := follow.StartFailed(err, opts.Timeout)
		return explain.Result(verdict.Decide(verdict.Facts{End: end, Timeout: opts.Timeout})), err
	}
	for _, w := range warnings {
		if opts.Warn != nil {
			opts.Warn(w)
		}
	}
	gateOpts := opts.Options
	gateOpts.Timeout = opts.Timeout
	if opts.Fix {
		gateOpts.Repair = repairOnce(c, scope, opts)
	}
	res, err := follow.Run(ctx, live, gateOpts)
	if res.Result == apiv1.WaitStuck && opts.Logs > 0 {
		// The crash's own words; a log that cannot be read is a warning, never the verdict.
		logCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		for _, w := range gather.PreviousLogs(logCtx, c.Kube, res.Findings, opts.Logs) {
			if opts.Warn != nil {
				opts.Warn(w)
			}
		}
		cancel()
	}
	return res, err
}

// repairOnce is wait --fix's repair: fix's safe actions, each reported to Progress, each delete
// proven on a fresh LIST of the scope.
func repairOnce(c gather.Clients, scope gather.Scope, opts WaitOptions) func(context.Context, *model.Report, *stuck.Objects) ([]model.Action, error) {
	prove := func(ctx context.Context, _ []repair.Write) (*model.Report, *stuck.Objects, error) {
		return diagnose.FromSource(ctx, gather.Lister{Clients: c, Scope: scope}, opts.Diagnosis)
	}
	exec := repair.New(repair.Options{Kube: c.Kube, Prove: prove, DryRun: apiv1.DryRunNone, Policy: plan.Policy{Rollback: opts.Rollback}, Disruption: opts.Disruption, Progress: opts.Progress})
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	return func(ctx context.Context, rep *model.Report, snap *stuck.Objects) ([]model.Action, error) {
		actions, err := exec.Repair(ctx, rep, snap)
		if len(actions) == 0 && err == nil {
			fmt.Fprintln(log, "nothing stsdiag can repair safely")
		}
		return actions, err
	}
}

// DefaultSettle is how long every replica must have stayed Ready before a rollout counts as
// complete, unless --settle says otherwise (rollout.Settled's default; wait, fix --wait and
// canary).
const DefaultSettle = rollout.DefaultSettle

// RunFleet waits in every member of a fleet at once (a kubeconfig context, or a ClusterProfile
// as NAMESPACE/NAME), wait doing one member's wait: a stuck rollout or a missing StatefulSet in
// one ends the others' (fail fast); a member that cannot be evaluated (unreachable,
// unauthorized, its exec plugin failing) neither hides nor stops the others — their verdicts
// are still waited for — and MergeFleet combines the verdicts, the worst winning. A member whose
// wait fails gets the verdict of its error (VerdictOf), naming it; one that fails once its wait
// was ended is Interrupted (or TimedOut), never worse than the verdict that ended it.
func RunFleet(ctx context.Context, members []string, wait func(ctx context.Context, member string) (*model.WaitResult, error)) *model.WaitResult {
	results := fleet.Run(ctx, members, func(ctx context.Context, name string) *model.WaitResult {
		res, err := wait(ctx, name)
		if err == nil {
			return res
		}
		v := follow.VerdictOf(err)
		if ctx.Err() != nil {
			v = follow.VerdictOf(ctx.Err())
		}
		return explain.Result(verdict.Decide(verdict.Facts{End: model.ContextFailed{Context: name, As: v, Err: err}}))
	}, func(res *model.WaitResult) bool {
		return verdict.Decisive(res.Result) && res.Result != apiv1.WaitUnevaluable
	})
	return explain.Word(verdict.MergeFleet(members, results))
}
