// Package fix is the fix use case: read → diagnose → plan → confirm → apply (package repair,
// every delete proven on fresh data) → follow the repaired rollouts until they settle (--wait).
package fix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/until"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// ErrNotConfirmed means the person asked declined the plan: nothing was changed.
var ErrNotConfirmed = errors.New("not confirmed; nothing changed")

// Options are the options of Run.
type Options struct {
	Clients gather.Clients
	// Scope is what fix reads: the first diagnosis and every proof are a fresh LIST of it.
	Scope gather.Scope
	// Diagnosis tunes the diagnoses.
	Diagnosis stuck.Options
	// Admission: every diagnosis also asks admission about the predicted image rewrites
	// (--confirm-with-admission, gather.SourceFor).
	Admission bool
	// DryRun is none, client or server.
	DryRun apiv1.DryRunMode
	// Progress, if set, is told about each action as it completes.
	Progress func(model.Action)
	// Policy says which optional repairs to plan (--rollback, --force-lost-node).
	Policy
	// Disruption is how a pod proven stuck is removed (--disruption): delete (default) or evict.
	Disruption apiv1.DisruptionMode
	// Confirm is shown the plan before anything changes; nil applies without asking. An error
	// means confirmation was impossible (no terminal): the actions are then skipped.
	Confirm func(plan *model.FixResult) (bool, error)
	// OnPlan, if set, is shown the plan and the diagnosis warnings first.
	OnPlan func(plan *model.FixResult, warnings []string)
	// Wait, if positive, follows the rollouts of the repaired StatefulSets for up to this long,
	// writing their progress to RolloutLog.
	Wait       time.Duration
	RolloutLog io.Writer
	// Steady is how long the followed rollouts' pods must have been Ready, not restarted,
	// before the rollout counts as complete (rollout.Settled; fix --settle).
	Steady time.Duration
}

// Policy says which optional repairs fix plans (plan's).
type Policy = plan.Policy

// ErrTimeout is the error of a --wait whose deadline passed before the rollouts completed.
var ErrTimeout = rollout.ErrTimeout

// Run diagnoses the scope, plans the safe repairs, asks, applies them and optionally follows the
// rollouts. The error is ErrNotConfirmed, a rollout.ErrTimeout (the --wait deadline passed), the
// context's error when it was cancelled (an interruption), or a failure to evaluate (gathering,
// an UnavailableError). The result is nil only when the first diagnosis failed.
func Run(ctx context.Context, o Options) (*model.FixResult, error) {
	rep, snap, err := o.diagnose(ctx)
	if err != nil {
		return nil, err
	}
	planned := plan.Planner{Policy: o.Policy}.Plan(rep, snap)
	result := &model.FixResult{DryRun: o.DryRun, Actions: planned.Actions, Unrepaired: planned.Unrepaired}
	if result.Actions == nil {
		result.Actions = []model.Action{}
	}
	// The plan says how each pod will be removed (--disruption).
	mode := (&repair.Executor{Disruption: o.Disruption}).DisruptionMode()
	for i := range result.Actions {
		if result.Actions[i].Kind() == apiv1.DeletePod {
			result.Actions[i].Disruption = mode
		}
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
				result.Actions[i].Conclude(model.Outcome{Reason: model.OutcomeNotConfirmed})
				explain.Outcome(&result.Actions[i])
			}
			return result, nil
		}
		if !ok {
			return result, ErrNotConfirmed
		}
	}
	exec := repair.New(repair.Options{Kube: o.Clients.Kube, Prove: o.prover(result.Actions), DryRun: o.DryRun, Progress: o.Progress,
		Policy: o.Policy, Disruption: o.Disruption})
	// --wait is one budget: the wait for the controller to observe a patch, then the rollout.
	var deadline time.Time
	if o.Wait > 0 {
		deadline = time.Now().Add(o.Wait)
		exec.Deadline = deadline
	}
	result.Actions, err = exec.Apply(ctx, result.Actions)
	if err != nil {
		return result, err
	}
	// The pods waiting for a patch the controller never observed were left: no rollout to
	// follow, and the cause is the controller, not a slow rollout.
	facts := verdict.RolloutFacts{NotObserved: len(exec.NotObserved()) > 0}
	if !facts.NotObserved && o.Wait > 0 && o.DryRun == apiv1.DryRunNone {
		facts, err = followRollouts(ctx, exec.Follower(), o, deadline, result.Actions)
	}
	result.Rollout = verdict.DecideRollout(facts)
	return result, err
}

// diagnose reads the scope (a fresh LIST, asking admission when Admission) and diagnoses it.
func (o Options) diagnose(ctx context.Context) (*model.Report, *stuck.Objects, error) {
	return diagnose.FromSource(ctx, gather.SourceFor(o.Clients, o.Scope, o.Admission), o.Diagnosis)
}

// prover is the executor's prover: a fresh read, so after every write it made, of the
// StatefulSets the actions repair (their namespaces, the sets named: as watch's fallback proof
// reads), not of the whole scope — fix -A proves on a few namespaces, not the cluster. With a
// Admission it reads as the plan did, asking admission again.
func (o Options) prover(actions []model.Action) repair.Prover {
	scopes := proofScopes(o.Scope, actions)
	return func(ctx context.Context, _ []repair.Write) (*model.Report, *stuck.Objects, error) {
		if o.Admission || len(scopes) == 0 {
			return o.diagnose(ctx)
		}
		var snap *stuck.Objects
		var warnings []string
		for _, scope := range scopes {
			one, w, err := gather.Lister{Clients: o.Clients, Scope: scope}.Snapshot(ctx)
			if err != nil {
				return nil, nil, err
			}
			snap, warnings = merge(snap, one), append(warnings, w...)
		}
		rep := diagnose.Report(snap, o.Diagnosis)
		rep.Warnings = warnings
		return rep, snap, nil
	}
}

// proofScopes are the scopes of the StatefulSets the actions repair, one per namespace, in the
// order the actions name them.
func proofScopes(scope gather.Scope, actions []model.Action) []gather.Scope {
	var out []gather.Scope
	at := map[string]int{}
	named := map[types.NamespacedName]bool{}
	for _, a := range actions {
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}
		if a.StatefulSet == "" || named[key] {
			continue
		}
		named[key] = true
		i, ok := at[a.Namespace]
		if !ok {
			i = len(out)
			at[a.Namespace] = i
			out = append(out, gather.Scope{Namespace: a.Namespace, OpenShift: scope.OpenShift})
		}
		out[i].Names = append(out[i].Names, a.StatefulSet)
	}
	return out
}

// merge adds the snapshot of one namespace to those of others: its namespaced objects, and the
// cluster's (nodes, StorageClasses) once.
func merge(into, one *stuck.Objects) *stuck.Objects {
	if into == nil {
		return one
	}
	into.StatefulSets = append(into.StatefulSets, one.StatefulSets...)
	into.Pods = append(into.Pods, one.Pods...)
	into.Revisions = append(into.Revisions, one.Revisions...)
	into.PVCs = append(into.PVCs, one.PVCs...)
	into.Events = append(into.Events, one.Events...)
	into.Services = append(into.Services, one.Services...)
	into.Namespaces = append(into.Namespaces, one.Namespaces...)
	into.ImageStreams = append(into.ImageStreams, one.ImageStreams...)
	into.Owners = append(into.Owners, one.Owners...)
	into.Warnings = append(into.Warnings, one.Warnings...)
	into.ServicesListed = into.ServicesListed && one.ServicesListed
	for k, v := range one.Selected {
		into.Selected[k] = v
	}
	return into
}

// followSettled follows one StatefulSet until the controller reports its rollout complete and
// its pods have settled (rollout.Settled, read with a LIST of the set's pods): a pod that was
// Ready for a moment and crashed sends it back to following. It says how following ended.
func followSettled(ctx context.Context, follow repair.Follower, o Options, namespace, name string, log io.Writer) (verdict.Followed, error) {
	last := ""
	var followed verdict.Followed
	var failed error // why following failed, as the look saw it
	fail := func(how verdict.Followed, err error) (bool, time.Time, error) {
		followed, failed = how, err
		return true, time.Time{}, nil
	}
	err := until.Run(ctx, nil, nil, func(ctx context.Context) (bool, time.Time, error) {
		var complete *appsv1.StatefulSet
		err := follow(ctx, namespace, name, func(set *appsv1.StatefulSet) bool {
			if line := rollout.Progress(set); line != last {
				fmt.Fprintln(log, line)
				last = line
			}
			if controller.StatusComplete(set) {
				complete = set
				return true
			}
			return false
		})
		if errors.Is(err, rollout.ErrTimeout) {
			return fail(verdict.FollowedTimedOut, fmt.Errorf("%w (%s)", err, last))
		}
		if err != nil {
			return fail(verdict.FollowedFailed, err)
		}
		ok, u, err := settledNow(ctx, o.Clients, complete, o.Steady)
		if err != nil {
			return fail(verdict.FollowedFailed, err)
		}
		if ok {
			followed = verdict.FollowedComplete
			return true, time.Time{}, nil
		}
		if line := u.String(); line != last {
			fmt.Fprintf(log, "statefulset %s/%s: complete by the controller's status; %s\n", namespace, name, line)
			last = line
		}
		pause := time.Second
		if !u.At.IsZero() {
			pause = max(min(time.Until(u.At), 5*time.Second), 100*time.Millisecond)
		}
		return false, time.Now().Add(pause), nil
	})
	switch {
	case failed != nil:
		return followed, failed
	case errors.Is(err, context.DeadlineExceeded):
		return verdict.FollowedTimedOut, fmt.Errorf("%w of statefulset %s/%s (%s)", rollout.ErrTimeout, namespace, name, last)
	case err != nil:
		return verdict.FollowedFailed, fmt.Errorf("interrupted while following statefulset %s/%s: %w", namespace, name, err)
	}
	return followed, nil
}

// settledNow reads the StatefulSet's pods (its selector, in its namespace) and says whether
// they have settled.
func settledNow(ctx context.Context, c gather.Clients, set *appsv1.StatefulSet, steady time.Duration) (bool, rollout.Unsettled, error) {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return false, rollout.Unsettled{}, err
	}
	pods, err := c.Kube.CoreV1().Pods(set.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return false, rollout.Unsettled{}, err
	}
	ok, u := rollout.SettledAmong(set, pods.Items, time.Now(), steady)
	return ok, u, nil
}

// followRollouts follows every StatefulSet a repair was done for, one after the other, until one
// does not complete, and returns the facts fix's outcome is decided from (verdict.DecideRollout).
func followRollouts(ctx context.Context, follow repair.Follower, o Options, deadline time.Time, actions []model.Action) (verdict.RolloutFacts, error) {
	log := o.RolloutLog
	if log == nil {
		log = io.Discard
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var facts verdict.RolloutFacts
	repaired := map[string]bool{}
	var order []model.Action
	for _, a := range actions {
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}.String()
		if a.Result != apiv1.ResultDone {
			facts.Unrepaired = true
			continue
		}
		if !repaired[key] {
			repaired[key] = true
			order = append(order, a)
		}
	}
	for _, a := range order {
		followed, err := followSettled(ctx, follow, o, a.Namespace, a.StatefulSet, log)
		facts.Followed = append(facts.Followed, followed)
		if err != nil {
			return facts, err
		}
	}
	return facts, nil
}
