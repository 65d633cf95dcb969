package repair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/internal/until"
	"github.com/stsdiag/stsdiag/stuck"
)

// Prover reads the cluster again and diagnoses it: the proof of each delete, and what a patch
// refused by its tests is checked against. after lists the writes the executor made so far in
// this Apply, the last one last: a prover that reads a cache returns only once the cache has seen
// them (or reads afresh); one that LISTs reads after them anyway. The executor imports no reader:
// each use case injects its prover.
type Prover func(ctx context.Context, after []Write) (*model.Report, *stuck.Objects, error)

// Write is a change the executor made to the cluster (not a dry run's).
type Write struct {
	// Kind is the action that wrote: PatchImage or Rollback patched the StatefulSet Name,
	// DeletePod or ForceDeletePod deleted or evicted the pod Name.
	Kind            apiv1.ActionKind
	Namespace, Name string
	// UID is the object's: the StatefulSet patched, the pod removed.
	UID string
	// ResourceVersion and Generation are the StatefulSet's as the patch answered (empty for a
	// pod: neither a delete's answer nor an eviction's is read).
	ResourceVersion string
	Generation      int64
}

// Executor applies planned actions.
type Executor struct {
	Kube   kubernetes.Interface
	DryRun apiv1.DryRunMode
	// Planner plans Repair.
	Planner plan.Planner
	// Prove diagnoses afresh: before the first delete and before every delete that follows a
	// write, and after a patch or a conflict, a fresh plan proves what is still called for.
	// Without it (tests) the plan's own diagnosis is the proof.
	Prove Prover
	// Follow follows a patched StatefulSet until its controller observed the patch
	// (WatchFollower of Kube if nil).
	Follow Follower
	// Reads reads the pod and its budgets for a client dry run's eviction (ClientReads of Kube if
	// nil). Prove, Follow and Reads are all the executor reads through: Kube only writes.
	Reads EvictionReads
	// Progress, if set, is told about each action as it completes.
	Progress func(model.Action)
	// Disruption is how a DeletePod removes its pod: delete (the default when empty) or evict
	// (the Eviction API). A ForceDeletePod is always a delete: an eviction cannot help a pod on
	// a lost node (its PodDisruptionBudget counts it unhealthy and its kubelet never answers).
	Disruption apiv1.DisruptionMode
	// Deadline bounds the wait for the controller to observe a patch (fix --wait's end). When
	// zero, ctx's deadline does (wait --fix's --timeout), else defaultObserveTimeout from now.
	Deadline time.Time
	// Clock tells the time the observation budget is measured in, and waits (real time if nil).
	Clock clock.Clock

	// notObserved lists the patched StatefulSets (namespace/name) whose controller did not
	// observe the patch within the budget.
	notObserved []string
	// writes are the writes of the current Apply, in order; proved is how many of them the last
	// proof was made after (-1: none made yet).
	writes []Write
	proved int
}

// defaultObserveTimeout bounds the wait for the controller to observe a patch when nothing else
// does (fix without --wait, watch --fix).
const defaultObserveTimeout = 2 * time.Minute

// NotObserved lists the patched StatefulSets (namespace/name) whose controller did not observe
// the patch within the budget in the last Apply: the deletes waiting for it were not made.
func (e *Executor) NotObserved() []string { return e.notObserved }

// UnavailableError means the API could not be reached or answered unexpectedly: nothing more
// can be evaluated.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "the API server became unavailable: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// Apply carries out the actions and returns them with their results: image patches first, then
// deletes, each proven again by a fresh diagnosis right before it is sent, then the deletes that
// wait for a patch. It returns an UnavailableError when the API fails in a way that is not an
// answer about one object.
func (e *Executor) Apply(ctx context.Context, actions []model.Action) ([]model.Action, error) {
	out := make([]model.Action, 0, len(actions))
	e.notObserved, e.writes, e.proved = nil, nil, -1
	patched := map[string]int64{}
	var deletes, later []model.Action
	for _, a := range actions {
		a.DryRun = e.DryRun == apiv1.DryRunClient || e.DryRun == apiv1.DryRunServer
		switch {
		case a.Kind() == apiv1.PatchImage || a.Kind() == apiv1.Rollback:
			patch := e.patch
			if a.Kind() == apiv1.Rollback {
				patch = e.rollback
			}
			done, generation, err := patch(ctx, &a)
			if err != nil {
				return append(out, a), err
			}
			if done {
				patched[types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}.String()] = generation
			}
			e.report(a)
			out = append(out, a)
		case a.AfterPatch:
			later = append(later, a)
		default:
			deletes = append(deletes, a)
		}
	}
	if len(deletes) > 0 {
		done, err := e.deleteProven(ctx, deletes)
		out = append(out, done...)
		if err != nil {
			return out, err
		}
	}
	if len(later) == 0 {
		return out, nil
	}
	pending, decided, err := e.provenAfterPatch(ctx, later, patched)
	for _, a := range decided {
		e.report(a)
		out = append(out, a)
	}
	if err != nil {
		return out, err
	}
	if len(pending) > 0 {
		done, err := e.deleteProven(ctx, pending)
		out = append(out, done...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// proofs maps kind/namespace/pod to the delete a fresh plan calls for now: a DeletePod of a
// StaleRevisionStuck pod, a ForceDeletePod of a pod stuck terminating on a lost node, each with
// the UID of the pod proven.
type proofs map[string]model.Action

func proofKey(kind apiv1.ActionKind, namespace, pod string) string {
	return string(kind) + "/" + types.NamespacedName{Namespace: namespace, Name: pod}.String()
}

// prove plans afresh and collects the proofs. Without a Prove it returns nil (the plan's own
// diagnosis is then the proof).
func (e *Executor) prove(ctx context.Context) (proofs, error) {
	p, _, err := e.proveSnap(ctx)
	return p, err
}

// proveSnap is prove that also returns the snapshot the proofs were made on.
func (e *Executor) proveSnap(ctx context.Context) (proofs, *stuck.Objects, error) {
	if e.Prove == nil {
		return nil, nil, nil
	}
	fresh, snap, err := e.replanSnap(ctx)
	if err != nil {
		return nil, nil, err
	}
	p := proofs{}
	for _, a := range fresh.Actions {
		if plan.IsDelete(a.Kind()) && !a.AfterPatch && a.UID != "" {
			p[proofKey(a.Kind(), a.Namespace, a.Pod)] = a
		}
	}
	return p, snap, nil
}

// replan diagnoses afresh and plans with every repair allowed: an action still called for is in
// that plan, checked by the same invariants as the first.
func (e *Executor) replan(ctx context.Context) (plan.Plan, error) {
	plan, _, err := e.replanSnap(ctx)
	return plan, err
}

func (e *Executor) replanSnap(ctx context.Context) (plan.Plan, *stuck.Objects, error) {
	rep, snap, err := e.Prove(ctx, slices.Clone(e.writes))
	if err != nil {
		return plan.Plan{}, nil, &UnavailableError{Err: err}
	}
	e.proved = len(e.writes)
	return plan.Planner{Policy: plan.Everything}.Plan(rep, snap), snap, nil
}

// wrote records a write of the current Apply (a dry run writes nothing).
func (e *Executor) wrote(w Write) {
	if e.DryRun == apiv1.DryRunNone {
		e.writes = append(e.writes, w)
	}
}

// writtenSinceProof reports whether the executor wrote since its last proof.
func (e *Executor) writtenSinceProof() bool { return e.proved < len(e.writes) }

// conclude sets what became of an action: its outcome, the result that means, and explain's
// words for it (the executor writes none).
func conclude(a *model.Action, o model.Outcome) {
	a.Conclude(o)
	explain.Outcome(a)
}

// deleteProven deletes each pod only if a diagnosis made right now still proves it stuck, with a
// UID precondition so exactly the pod proven is deleted. The kubelet rewrites a failing pod's
// status (and resourceVersion) on every back-off, so the resourceVersion is no precondition: the
// fresh proof is, made after the executor's last write (a pod removed before this one is proven
// again). On a conflict (the pod was replaced meanwhile) it proves again and retries once.
func (e *Executor) deleteProven(ctx context.Context, actions []model.Action) ([]model.Action, error) {
	out := make([]model.Action, 0, len(actions))
	if e.DryRun == apiv1.DryRunClient {
		for _, a := range actions {
			o := model.Outcome{Reason: model.OutcomeDryRun}
			if a.Kind() == apiv1.DeletePod {
				a.Disruption = e.DisruptionMode()
				if a.Disruption == apiv1.DisruptionEvict {
					o.Eviction = e.predictEviction(ctx, a)
				}
			}
			conclude(&a, o)
			e.report(a)
			out = append(out, a)
		}
		return out, nil
	}
	fresh, err := e.prove(ctx)
	if err != nil {
		return out, err
	}
	for _, a := range actions {
		if e.Prove != nil && e.writtenSinceProof() {
			// The pod before this one was removed: prove this one on data read after that.
			if fresh, err = e.prove(ctx); err != nil {
				return out, err
			}
		}
		for attempt := 0; ; attempt++ {
			if fresh != nil {
				proof, ok := fresh[proofKey(a.Kind(), a.Namespace, a.Pod)]
				if !ok {
					conclude(&a, model.Outcome{Reason: model.OutcomeNotProven})
					break
				}
				a.UID = proof.UID
			}
			remove := e.deletePod
			if a.Kind() == apiv1.DeletePod && e.Disruption == apiv1.DisruptionEvict {
				remove = e.evictPod
			}
			conflict, err := remove(ctx, &a)
			if err != nil {
				e.report(a)
				return append(out, a), err
			}
			if !conflict || attempt > 0 || fresh == nil {
				break
			}
			if fresh, err = e.prove(ctx); err != nil {
				e.report(a)
				return append(out, a), err
			}
		}
		e.report(a)
		out = append(out, a)
	}
	return out, nil
}

func (e *Executor) report(a model.Action) {
	if e.Progress != nil {
		e.Progress(a)
	}
}

func (e *Executor) dryRunOptions() []string {
	if e.DryRun == apiv1.DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// patch sets the image with a JSON patch that first tests the object's UID and the image as
// diagnosed, so a concurrent change is never overwritten. On such a change it diagnoses again,
// once, and retries with the fresh finding.
func (e *Executor) patch(ctx context.Context, a *model.Action) (done bool, generation int64, err error) {
	return e.guardedPatch(ctx, a, guarded{send: e.sendPatch, fresh: e.freshPatch})
}

// guarded describes one kind of precondition-guarded StatefulSet patch (image patch, rollback).
type guarded struct {
	send func(context.Context, *model.Action) (*appsv1.StatefulSet, error)
	// fresh diagnoses again and returns the same change if it is still called for.
	fresh func(context.Context, model.Action) (model.Action, bool, error)
}

// guardedPatch sends a patch whose test operations refuse it when the StatefulSet changed since
// diagnosis; then it diagnoses again, once, and retries only with the fresh change. A concurrent
// change is never overwritten.
func (e *Executor) guardedPatch(ctx context.Context, a *model.Action, g guarded) (done bool, generation int64, err error) {
	if e.DryRun == apiv1.DryRunClient {
		conclude(a, model.Outcome{Reason: model.OutcomeDryRun})
		return false, 0, nil
	}
	for attempt := 0; ; attempt++ {
		set, err := g.send(ctx, a)
		switch {
		case err == nil && e.DryRun == apiv1.DryRunServer:
			conclude(a, model.Outcome{Reason: model.OutcomeServerDryRunAccepted})
			return false, 0, nil
		case err == nil:
			conclude(a, model.Outcome{Reason: model.OutcomeDone})
			e.wrote(Write{Kind: a.Kind(), Namespace: a.Namespace, Name: a.StatefulSet, UID: string(set.UID),
				ResourceVersion: set.ResourceVersion, Generation: set.Generation})
			return true, set.Generation, nil
		case apierrors.IsForbidden(err):
			conclude(a, model.Outcome{Reason: model.OutcomeForbidden, Verb: "patch", Resource: "statefulsets.apps", Err: text.FirstLine(err)})
			return false, 0, nil
		case apierrors.IsNotFound(err):
			conclude(a, model.Outcome{Reason: model.OutcomeGone})
			return false, 0, nil
		case apierrors.IsInvalid(err) || apierrors.IsConflict(err):
			if attempt > 0 || e.Prove == nil {
				conclude(a, model.Outcome{Reason: model.OutcomeChangedAgain})
				return false, 0, nil
			}
			fresh, ok, err := g.fresh(ctx, *a)
			if err != nil {
				return false, 0, err
			}
			if !ok {
				conclude(a, model.Outcome{Reason: model.OutcomeNotNeeded})
				return false, 0, nil
			}
			*a = fresh
		case isAPIAnswer(err):
			conclude(a, model.Outcome{Reason: model.OutcomeFailed, Err: text.FirstLine(err)})
			return false, 0, nil
		default:
			conclude(a, model.Outcome{Reason: model.OutcomeFailed, Err: text.FirstLine(err)})
			return false, 0, &UnavailableError{Err: err}
		}
	}
}

// sendPatch sends the image patch the finding carries (stuck.ImagePatch's JSON patch, as
// openshift.PatchDigest does), tested on the StatefulSet's UID.
func (e *Executor) sendPatch(ctx context.Context, a *model.Action) (*appsv1.StatefulSet, error) {
	if a.UID == "" {
		return nil, fmt.Errorf("image patch of %s/%s planned without a UID", a.Namespace, a.StatefulSet)
	}
	body := stuck.ImagePatch{Path: a.Path, From: a.From, To: a.To}.JSONPatch(types.UID(a.UID))
	return e.Kube.AppsV1().StatefulSets(a.Namespace).Patch(ctx, a.StatefulSet, types.JSONPatchType, []byte(body),
		metav1.PatchOptions{DryRun: e.dryRunOptions(), FieldManager: "stsdiag"})
}

// freshPatch diagnoses again and returns the same container's patch, if it is still needed.
func (e *Executor) freshPatch(ctx context.Context, a model.Action) (model.Action, bool, error) {
	replanned, err := e.replan(ctx)
	if err != nil {
		return a, false, err
	}
	for _, fresh := range replanned.Actions {
		if fresh.Kind() == apiv1.PatchImage && fresh.Namespace == a.Namespace && fresh.StatefulSet == a.StatefulSet && fresh.Container == a.Container {
			return fresh, true, nil
		}
	}
	return a, false, nil
}

// deletePod deletes the pod only if it is still the one proven stuck (UID precondition); a
// ForceDeletePod uses grace period 0. conflict is true when the pod was replaced meanwhile.
func (e *Executor) deletePod(ctx context.Context, a *model.Action) (conflict bool, err error) {
	opts := metav1.DeleteOptions{DryRun: e.dryRunOptions()}
	if a.UID != "" {
		uid := types.UID(a.UID)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if a.Kind() == apiv1.ForceDeletePod {
		opts.GracePeriodSeconds = ptr.To[int64](0)
	}
	if a.Kind() == apiv1.DeletePod {
		a.Disruption = apiv1.DisruptionDelete
	}
	err = e.Kube.CoreV1().Pods(a.Namespace).Delete(ctx, a.Pod, opts)
	return e.removed(a, err, "delete", "pods")
}

// removed concludes a delete or an eviction from the API server's answer (the answers both
// share; evictPod first takes those only an eviction gets). conflict is true when the UID
// precondition failed: the pod was replaced meanwhile.
func (e *Executor) removed(a *model.Action, err error, verb, resource string) (conflict bool, _ error) {
	switch {
	case err == nil && e.DryRun == apiv1.DryRunServer:
		conclude(a, model.Outcome{Reason: model.OutcomeServerDryRunAccepted})
	case err == nil:
		conclude(a, model.Outcome{Reason: model.OutcomeDone})
		e.wrote(Write{Kind: a.Kind(), Namespace: a.Namespace, Name: a.Pod, UID: a.UID})
	case apierrors.IsConflict(err):
		conclude(a, model.Outcome{Reason: model.OutcomeReplaced})
		return true, nil
	case apierrors.IsNotFound(err):
		conclude(a, model.Outcome{Reason: model.OutcomeGone})
	case apierrors.IsForbidden(err):
		conclude(a, model.Outcome{Reason: model.OutcomeForbidden, Verb: verb, Resource: resource, Err: text.FirstLine(err)})
	case isAPIAnswer(err):
		conclude(a, model.Outcome{Reason: model.OutcomeFailed, Err: text.FirstLine(err)})
	default:
		conclude(a, model.Outcome{Reason: model.OutcomeFailed, Err: text.FirstLine(err)})
		return false, &UnavailableError{Err: err}
	}
	return false, nil
}

// provenAfterPatch waits for the controller to observe each patch, plans afresh and splits the
// deletes that wait for a patch: pending are those of pods the fresh plan proves stuck on an old
// revision now, with their UID (deleteProven proves them once more right before deleting);
// decided are the others, with their result.
func (e *Executor) provenAfterPatch(ctx context.Context, later []model.Action, patched map[string]int64) (pending, decided []model.Action, err error) {
	if e.DryRun != apiv1.DryRunNone {
		for _, a := range later {
			conclude(&a, model.Outcome{Reason: model.OutcomeDryRunAfterPatch})
			decided = append(decided, a)
		}
		return nil, decided, nil
	}
	for _, a := range later {
		if _, ok := patched[types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}.String()]; ok {
			pending = append(pending, a)
			continue
		}
		conclude(&a, model.Outcome{Reason: model.OutcomeNotPatched})
		decided = append(decided, a)
	}
	if len(pending) == 0 || e.Prove == nil {
		return pending, decided, nil
	}
	notObserved, err := e.waitObserved(ctx, patched)
	if err != nil {
		return nil, nil, err
	}
	fresh, notObserved, err := e.proveObserved(ctx, patched, notObserved)
	if err != nil {
		return nil, nil, err
	}
	e.notObserved = sortedKeys(notObserved)
	var proven []model.Action
	for _, a := range pending {
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}.String()
		if observed, ok := notObserved[key]; ok {
			a.NotObserved = true
			conclude(&a, model.Outcome{Reason: model.OutcomeNotObserved, ObservedGeneration: observed, PatchedGeneration: patched[key]})
			decided = append(decided, a)
			continue
		}
		proof, ok := fresh[proofKey(apiv1.DeletePod, a.Namespace, a.Pod)]
		if !ok {
			conclude(&a, model.Outcome{Reason: model.OutcomeNotStuckAfterPatch})
			decided = append(decided, a)
			continue
		}
		a.UID = proof.UID
		proven = append(proven, a)
	}
	return proven, inPlanOrder(decided, later), nil
}

// inPlanOrder sorts actions (deletes, one per pod) as they are in plan.
func inPlanOrder(actions, plan []model.Action) []model.Action {
	index := map[string]int{}
	for i, a := range plan {
		index[proofKey(a.Kind(), a.Namespace, a.Pod)] = i
	}
	sort.SliceStable(actions, func(i, j int) bool {
		return index[proofKey(actions[i].Kind(), actions[i].Namespace, actions[i].Pod)] < index[proofKey(actions[j].Kind(), actions[j].Namespace, actions[j].Pod)]
	})
	return actions
}

// waitObserved follows each patched StatefulSet until its controller has observed the patch's
// generation, within the remaining budget (observeDeadline). notObserved maps the StatefulSets
// not observed in time to the last observedGeneration seen (-1: none). It fails only when ctx is
// cancelled or the API fails.
func (e *Executor) waitObserved(ctx context.Context, patched map[string]int64) (notObserved map[string]int64, err error) {
	follow := e.Follower()
	deadline := e.observeDeadline(ctx)
	notObserved = map[string]int64{}
	for _, key := range sortedKeys(patched) {
		generation := patched[key]
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		observed := int64(-1)
		remaining := deadline.Sub(e.now())
		if remaining <= 0 {
			notObserved[key] = observed
			continue
		}
		observeCtx, cancel := context.WithTimeout(ctx, remaining)
		err := follow(observeCtx, ns, name, func(set *appsv1.StatefulSet) bool {
			observed = set.Status.ObservedGeneration
			return set.Status.ObservedGeneration >= generation
		})
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, rollout.ErrTimeout) && ctx.Err() == nil:
			notObserved[key] = observed
		case ctx.Err() != nil:
			return nil, err
		default:
			return nil, &UnavailableError{Err: err}
		}
	}
	return notObserved, nil
}

// proveObserved proves afresh, trusting the fresh diagnosis of a patched StatefulSet only once
// its snapshot shows the patch observed (status.observedGeneration ≥ the patched generation): a
// read older than the follower's is read again, once a second, until the budget ends; a
// StatefulSet still unobserved then joins notObserved.
func (e *Executor) proveObserved(ctx context.Context, patched, notObserved map[string]int64) (proofs, map[string]int64, error) {
	deadline := e.observeDeadline(ctx)
	var fresh proofs
	err := until.Run(ctx, e.clock(), nil, func(ctx context.Context) (bool, time.Time, error) {
		var snap *stuck.Objects
		var err error
		fresh, snap, err = e.proveSnap(ctx)
		if err != nil {
			return false, time.Time{}, err
		}
		stale := map[string]int64{}
		for key, generation := range patched {
			if _, ok := notObserved[key]; ok || snap == nil {
				continue
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			for i := range snap.StatefulSets {
				set := &snap.StatefulSets[i]
				if set.Namespace == ns && set.Name == name && set.Status.ObservedGeneration < generation {
					stale[key] = set.Status.ObservedGeneration
				}
			}
		}
		if len(stale) == 0 {
			return true, time.Time{}, nil
		}
		if !e.now().Add(time.Second).Before(deadline) {
			for key, observed := range stale {
				notObserved[key] = observed
			}
			return true, time.Time{}, nil
		}
		return false, e.now().Add(time.Second), nil
	})
	if err != nil {
		return nil, nil, err
	}
	return fresh, notObserved, nil
}

// observeDeadline is when the wait for the controller to observe a patch ends: Deadline, else
// ctx's deadline, else defaultObserveTimeout from now.
func (e *Executor) observeDeadline(ctx context.Context) time.Time {
	if !e.Deadline.IsZero() {
		return e.Deadline
	}
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return e.now().Add(defaultObserveTimeout)
}

func (e *Executor) now() time.Time { return e.clock().Now() }

func (e *Executor) clock() clock.Clock {
	if e.Clock != nil {
		return e.Clock
	}
	return clock.RealClock{}
}

// DisruptionMode is how the executor removes a pod proven stuck: delete unless evict was asked.
func (e *Executor) DisruptionMode() apiv1.DisruptionMode {
	if e.Disruption == "" {
		return apiv1.DisruptionDelete
	}
	return e.Disruption
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Follower is how the executor follows a StatefulSet: Follow, else a watch of it.
func (e *Executor) Follower() Follower {
	if e.Follow != nil {
		return e.Follow
	}
	return WatchFollower(e.Kube)
}

// isAPIAnswer reports whether err is a status the API server returned (as opposed to a
// transport failure).
func isAPIAnswer(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code != 0 && status.Status().Code < 500
}
