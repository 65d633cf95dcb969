package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/fleet"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// precedence orders wait's verdicts from worst to best when several clusters are waited for:
// one that could not be evaluated or whose StatefulSets do not exist, then a stuck rollout, a
// rollback, a patch its controller never observed, a timeout, an interruption.
var precedence = []apiv1.Verdict{apiv1.WaitUnevaluable, apiv1.WaitNotFound, apiv1.WaitStuck, apiv1.WaitRolledBack, apiv1.WaitNotObserved, apiv1.WaitTimedOut, apiv1.WaitInterrupted, apiv1.WaitComplete}

// Decisive reports whether a verdict ends the wait for every cluster (fail fast): a stuck
// rollout or a cluster that cannot be evaluated.
func Decisive(result apiv1.Verdict) bool {
	return result == apiv1.WaitUnevaluable || result == apiv1.WaitNotFound || result == apiv1.WaitStuck
}

// VerdictOf is the verdict of a wait that failed with err: NotFound when a StatefulSet or
// namespace it names does not exist, Interrupted or TimedOut when its context ended first,
// Unevaluable for anything else (forbidden, unreachable, an unusable kubeconfig, a repair that
// could not be evaluated).
func VerdictOf(err error) apiv1.Verdict {
	var nf *gather.NotFoundError
	switch {
	case errors.As(err, &nf):
		return apiv1.WaitNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return apiv1.WaitTimedOut
	case errors.Is(err, context.Canceled):
		return apiv1.WaitInterrupted
	}
	return apiv1.WaitUnevaluable
}

// WaitOptions tune Wait.
type WaitOptions struct {
	Options
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
// verdict. A wait that cannot start returns NotFound or Unevaluable (VerdictOf) with the error;
// the error is also set when a repair could not be evaluated.
func Wait(ctx context.Context, c gather.Clients, scope gather.Scope, opts WaitOptions) (*model.WaitResult, error) {
	live, warnings, err := gather.StartLive(ctx, c, scope, nil)
	if err != nil {
		return model.NewWaitResult(VerdictOf(err), err.Error()), err
	}
	for _, w := range warnings {
		if opts.Warn != nil {
			opts.Warn(w)
		}
	}
	gateOpts := opts.Options
	if opts.Fix {
		gateOpts.Repair = repairOnce(c, scope, opts)
	}
	res, err := Run(ctx, live, gateOpts)
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
	if res.Result == apiv1.WaitTimedOut {
		res.Message = fmt.Sprintf("timed out after %s while the rollout was still progressing", opts.Timeout)
		notObservedVerdict(res, opts.Timeout)
	}
	repair.RollbackVerdict(res)
	return res, err
}

// repairOnce is wait --fix's repair: fix's safe actions, each reported to Progress.
func repairOnce(c gather.Clients, scope gather.Scope, opts WaitOptions) func(context.Context, *model.Report, *snapshot.Snapshot) ([]model.Action, error) {
	exec := repair.New(repair.Options{Clients: c, Scope: scope, Diagnosis: opts.Diagnosis, DryRun: apiv1.DryRunNone, Policy: plan.Policy{Rollback: opts.Rollback}, Disruption: opts.Disruption, Progress: opts.Progress})
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	return func(ctx context.Context, rep *model.Report, snap *snapshot.Snapshot) ([]model.Action, error) {
		actions, err := exec.Repair(ctx, rep, snap)
		if len(actions) == 0 && err == nil {
			fmt.Fprintln(log, "nothing stsdiag can repair safely")
		}
		return actions, err
	}
}

// RunFleet waits in every context at once, wait doing one context's wait: a decisive verdict
// (Decisive) in one ends the others' (fail fast), and MergeFleet combines the verdicts. A
// context whose wait fails gets the verdict of its error (VerdictOf), naming the context; one
// that fails once its wait was ended is Interrupted (or TimedOut), never worse than the verdict
// that ended it.
func RunFleet(ctx context.Context, contexts []string, wait func(ctx context.Context, context string) (*model.WaitResult, error)) *model.WaitResult {
	results := fleet.Run(ctx, contexts, func(ctx context.Context, name string) *model.WaitResult {
		res, err := wait(ctx, name)
		if err == nil {
			return res
		}
		verdict := VerdictOf(err)
		if ctx.Err() != nil {
			verdict = VerdictOf(ctx.Err())
		}
		return model.NewWaitResult(verdict, fmt.Sprintf("context %s: %v", name, err))
	}, func(res *model.WaitResult) bool { return Decisive(res.Result) })
	return MergeFleet(contexts, results)
}

// MergeFleet combines the verdicts of one wait per kubeconfig context into one: the worst verdict
// wins, StatefulSets, findings and actions carry their context, and the message names each
// context that did not complete.
func MergeFleet(contexts []string, results []*model.WaitResult) *model.WaitResult {
	worst := len(precedence) - 1
	merged := model.NewWaitResult(apiv1.WaitComplete, "")
	var messages []string
	for i, res := range results {
		name := contexts[i]
		for rank, verdict := range precedence {
			if res.Result == verdict && rank < worst {
				worst = rank
			}
		}
		if res.Result != apiv1.WaitComplete {
			messages = append(messages, fmt.Sprintf("%s: %s: %s", name, res.Result, res.Message))
		}
		for _, s := range res.StatefulSets {
			s.Context = name
			merged.StatefulSets = append(merged.StatefulSets, s)
		}
		for _, f := range res.Findings {
			f.Context = name
			merged.Findings = append(merged.Findings, f)
		}
		for _, a := range res.Actions {
			a.Context = name
			merged.Actions = append(merged.Actions, a)
		}
		merged.RolledBack = append(merged.RolledBack, res.RolledBack...)
	}
	merged.Result = precedence[worst]
	merged.Message = "every rollout complete"
	if len(messages) > 0 {
		merged.Message = strings.Join(messages, "; ")
	}
	model.SortFindings(merged.Findings)
	return merged
}

// notObservedVerdict turns a TimedOut wait --fix whose patch the StatefulSet controller never
// observed into NotObserved, naming the StatefulSets: the cause is the controller, not a slow
// rollout.
func notObservedVerdict(res *model.WaitResult, timeout time.Duration) {
	var sets []string
	seen := map[string]bool{}
	for _, a := range res.Actions {
		key := a.Namespace + "/" + a.StatefulSet
		if a.NotObserved && !seen[key] {
			seen[key] = true
			sets = append(sets, key)
		}
	}
	if len(sets) == 0 {
		return
	}
	res.Result = apiv1.WaitNotObserved
	res.Message = fmt.Sprintf("the StatefulSet controller never observed the patch to %s within %s; the pods waiting for it were not deleted", strings.Join(sets, ", "), timeout)
}
