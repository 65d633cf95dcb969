// Package follow follows StatefulSets from informer caches (gather.Live), diagnosing on every
// change and when a rule matures, until their rollouts complete and settle, or a finding that
// keeps them from completing has held for a grace period: the loop of wait and canary.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/hold"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/until"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Options tune Run.
type Options struct {
	// Diagnosis tunes each diagnosis.
	Diagnosis stuck.Options
	// Hold is how long a blocking finding must hold before the rollout counts as stuck.
	Hold time.Duration
	// Repair, if set, is called once when stuck (wait --fix); Gate then keeps waiting.
	Repair func(ctx context.Context, rep *model.Report, snap *stuck.Objects) ([]model.Action, error)
	// Log receives one line per change.
	Log io.Writer
	// Clock measures the grace and wakes the gate when a finding matures (real time if nil).
	Clock clock.Clock
	// Steady is how long every replica must have been Ready, its containers running and not
	// restarted, before a rollout the controller reports complete is Complete (rollout.Settled;
	// wait --settle). The pods' own timestamps measure it, so a crash between two looks counts.
	Steady time.Duration
	// Settle, if set, is how long the rollout must stay complete with no blocking finding before
	// Run says Complete (canary's --hold); a blocking finding or an incomplete rollout restarts it.
	Settle time.Duration
	// Stop, if set, is asked about every snapshot before it is diagnosed: a non-empty verdict
	// ends Run with it and the message (canary stops when someone else changed the StatefulSet).
	Stop func(snap *stuck.Objects) (apiv1.Verdict, string)
	// Stepping says the caller steps the partition itself (canary): a step is complete at its
	// partition even where the StatefulSet declares watch's canary. Otherwise (wait) a canary
	// watch steps is complete only once it reached every replica (rollout.CanaryUnderWay).
	Stepping bool
	// Timeout is the deadline the caller gave ctx (wait --timeout), named in a TimedOut verdict
	// and in a NotObserved one (zero: not named).
	Timeout time.Duration
}

// Source is what the gate follows: snapshots of the scope, with the warnings of reading them, and
// a signal when something in it changed (gather.Live).
type Source interface {
	Snapshot(ctx context.Context) (*stuck.Objects, []string, error)
	Changes() <-chan struct{}
}

// Run follows the StatefulSets of the source until their rollouts complete (Complete), a
// blocking finding holds for the grace (Stuck), ctx's deadline passes (TimedOut), ctx is
// cancelled otherwise, e.g. by a signal (Interrupted), or one is missing or deleted (NotFound).
// It diagnoses again on every change and when a finding or a time-based rule matures. The
// verdict is decided once, from where the loop ended and the repairs it made (verdict.Decide).
// The error is set when a repair could not be evaluated.
func Run(ctx context.Context, live Source, opts Options) (*model.WaitResult, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	var held hold.Tracker    // blocking findings by key
	var settled hold.Tracker // "complete" while complete with no blocking finding (Settle)
	lastLine := map[string]string{}
	var actions []model.Action
	repaired := false
	var rep *model.Report
	result := func(end model.Reason) *model.WaitResult {
		res := explain.Result(verdict.Decide(verdict.Facts{End: end, Timeout: opts.Timeout, Actions: actions}))
		if rep != nil {
			res.StatefulSets, res.Findings = rep.StatefulSets, rep.Findings
		}
		res.Actions = actions
		return res
	}
	var end *model.WaitResult
	var endErr error
	finish := func(res *model.WaitResult, err error) (bool, time.Time, error) {
		end, endErr = res, err
		return true, time.Time{}, nil
	}
	look := func(ctx context.Context) (bool, time.Time, error) {
		snap, _, err := live.Snapshot(ctx)
		if err != nil {
			var nf *read.NotFoundError
			if errors.As(err, &nf) && rep != nil {
				return finish(result(model.Deleted{What: nf.What}), nil)
			}
			return finish(result(model.Failed{As: apiv1.WaitNotFound, Err: err}), nil)
		}
		if rep == nil && len(snap.Selected) == 0 && snap.Selected != nil {
			return finish(result(model.NoMatch{}), nil)
		}
		if opts.Stop != nil {
			if v, words := opts.Stop(snap); v != "" {
				rep = diagnose.Report(snap, opts.Diagnosis)
				return finish(result(model.Stopped{As: v, Words: words}), nil)
			}
		}
		rep = diagnose.Report(snap, opts.Diagnosis)
		now := opts.Clock.Now()
		complete := progress(snap, lastLine, opts.Log, opts.Stepping)
		expired, blocking, next := holdBlocking(&held, rep.Findings, now, opts)
		if complete && blocking == 0 {
			var unsettled rollout.Unsettled
			complete, unsettled = podsSettled(snap, now, opts.Steady)
			if line := unsettled.String(); !complete && lastLine[unsettledKey] != line {
				fmt.Fprintf(opts.Log, "complete by the controller's status; %s\n", line)
				lastLine[unsettledKey] = line
			}
			if !unsettled.At.IsZero() && (next.IsZero() || unsettled.At.Before(next)) {
				next = unsettled.At
			}
		}
		switch {
		case len(expired) > 0 && opts.Repair != nil && !repaired:
			repaired = true
			fmt.Fprintf(opts.Log, "stuck for %s: applying fix's safe repairs (--fix)\n", opts.Hold)
			applied, err := opts.Repair(ctx, rep, snap)
			actions = append(actions, applied...)
			if err != nil {
				return finish(result(model.Failed{As: apiv1.WaitStuck, Err: err}), err)
			}
			held.Reset()
			return false, now, nil // diagnose again at once
		case len(expired) > 0:
			return finish(result(model.Held{Findings: expired, Hold: opts.Hold}), nil)
		case complete && blocking == 0 && opts.Settle <= 0:
			return finish(result(model.Complete{}), nil)
		}
		if complete && blocking == 0 {
			if len(settled.Observe(now, []string{"complete"})) > 0 {
				fmt.Fprintf(opts.Log, "complete with no finding: holding for %s\n", opts.Settle)
			}
			due, at := settled.Due(now, opts.Settle, []string{"complete"})
			if len(due) > 0 {
				return finish(result(model.Complete{Settle: opts.Settle}), nil)
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		} else {
			settled.Reset()
		}
		if !rep.RecheckAt.IsZero() && (next.IsZero() || rep.RecheckAt.Before(next)) {
			next = rep.RecheckAt
		}
		if !next.IsZero() {
			// A little after, so what is due then has matured.
			next = latest(next, now).Add(10 * time.Millisecond)
		}
		return false, next, nil
	}
	if err := until.Run(ctx, opts.Clock, live.Changes(), look); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return result(model.TimedOut{After: opts.Timeout}), nil
		}
		return result(model.Interrupted{}), nil
	}
	return end, endErr
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// holdBlocking records the blocking findings now (logging each new one) and returns those that
// held for the grace, how many block, and when the next one will have held (zero: none).
func holdBlocking(held *hold.Tracker, findings []stuck.Finding, now time.Time, opts Options) (expired []stuck.Finding, blocking int, next time.Time) {
	byKey := map[string]stuck.Finding{}
	var keys []string
	for _, f := range findings {
		if f.Blocking() {
			byKey[f.Key()] = f
			keys = append(keys, f.Key())
		}
	}
	for _, key := range held.Observe(now, keys) {
		f := byKey[key]
		fmt.Fprintf(opts.Log, "%s/%s: %s %s%s — stuck if it holds for %s\n", f.Namespace, f.StatefulSet, f.Code, f.Pod, reasonSuffix(f), opts.Hold)
	}
	due, next := held.Due(now, opts.Hold, keys)
	isDue := map[string]bool{}
	for _, key := range due {
		isDue[key] = true
	}
	for _, f := range findings {
		if f.Blocking() && isDue[f.Key()] {
			expired = append(expired, f)
		}
	}
	return expired, len(keys), next
}

// progress logs a line per StatefulSet whose rollout state changed and reports whether all
// selected StatefulSets are complete: their canaries too unless the caller steps them.
func progress(snap *stuck.Objects, last map[string]string, log io.Writer, stepping bool) bool {
	var sets []*appsv1.StatefulSet
	for i := range snap.StatefulSets {
		if snap.InScope(snap.StatefulSets[i].Namespace, snap.StatefulSets[i].Name) {
			sets = append(sets, &snap.StatefulSets[i])
		}
	}
	complete := len(sets) > 0
	for _, set := range sets {
		line := rollout.Progress(set)
		under := !stepping && controller.CanaryUnderWay(set)
		if under && controller.StatusComplete(set) {
			line = fmt.Sprintf("statefulset %s/%s: canary of revision %s under way: %d of %d pods updated (stsdiag watch steps it, %s)",
				set.Namespace, set.Name, set.Status.UpdateRevision, set.Status.UpdatedReplicas, controller.Replicas(set), apiv1.AnnotationCanarySteps)
		}
		key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String()
		if last[key] != line {
			fmt.Fprintln(log, line)
			last[key] = line
		}
		if !controller.StatusComplete(set) || under {
			complete = false
		}
	}
	return complete
}

// unsettledKey keys the last unsettled line in progress's map (no StatefulSet key has a space).
const unsettledKey = "unsettled pods"

// podsSettled reports whether every selected StatefulSet's pods have been Ready for steady
// (rollout.Settled), and the pod that settles last.
func podsSettled(snap *stuck.Objects, now time.Time, steady time.Duration) (bool, rollout.Unsettled) {
	var last rollout.Unsettled
	owned := controller.ByController(snap.Pods, snap.Revisions) // once, not a scan of every pod per StatefulSet
	for i := range snap.StatefulSets {
		set := &snap.StatefulSets[i]
		if !snap.InScope(set.Namespace, set.Name) {
			continue
		}
		ok, u := rollout.Settled(set, owned.Pods[set.UID], now, steady)
		switch {
		case !ok && u.NotReady:
			return false, u
		case !ok && (last.At.IsZero() || u.At.After(last.At)):
			last = u
		}
	}
	return last.Pod == "", last
}

func reasonSuffix(f stuck.Finding) string {
	if f.Reason == "" {
		return ""
	}
	return " (" + f.Reason + ")"
}

// StartFailed is why a wait that could not start its reads ended: the deadline (TimedOut,
// within timeout) or a signal (Interrupted) while the API server had not answered yet — verdicts
// of their own, not failures: the returned error is nil — else Failed with the verdict of the
// error (VerdictOf), and the error.
func StartFailed(err error, timeout time.Duration) (model.Reason, error) {
	switch VerdictOf(err) {
	case apiv1.WaitTimedOut:
		return model.TimedOut{After: timeout, Reading: err}, nil
	case apiv1.WaitInterrupted:
		return model.Interrupted{}, nil
	}
	return model.Failed{As: VerdictOf(err), Err: err}, err
}

// VerdictOf is the verdict of a wait (or canary) that failed with err: NotFound when a StatefulSet or
// namespace it names does not exist, Interrupted or TimedOut when its context ended first,
// Unevaluable for anything else (forbidden, unreachable, an unusable kubeconfig, a repair that
// could not be evaluated).
func VerdictOf(err error) apiv1.Verdict {
	var nf *read.NotFoundError
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
