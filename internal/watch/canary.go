package watch

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/hold"
	"github.com/stsdiag/stsdiag/internal/jsonpatch"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// watch steps the canary declared on a StatefulSet by its annotations (engine.AnnotationSteps,
// engine.AnnotationHold) with the step machine `stsdiag canary` drives (engine.Turn), this
// file's canaryTurn being watch's port, and the hold rules of wait: a step passes once its pods
// have been Ready on the update revision with no blocking finding for the hold, and fails once a
// blocking finding has held for it. Its state is the cluster's — the partition says which step
// the canary is at — so a restarted watch (or a new leader) resumes the canary; only when a step
// started looking healthy is kept in memory, and losing it only restarts that step's hold.
//
// Between rollouts watch holds the partition at spec.replicas ("parked"): with the update and
// current revisions equal no pod moves whatever the partition, and the next template change then
// moves no pod until watch sets the first step's partition.

// canaryMemory is what watch remembers of one annotated StatefulSet between syncs.
type canaryMemory struct {
	healthy hold.Tracker // "revision/partition" → when the step first looked healthy
	warned  string       // the last warning Event, not repeated
	// analysis is the step's measuring by the analysis the set declares (analysis.go).
	analysis *stepAnalysis
}

// canaryOf returns the memory of a StatefulSet's canary (created on first use).
func (c *Controller) canaryOf(key string) *canaryMemory {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canaries == nil {
		c.canaries = map[string]*canaryMemory{}
	}
	m := c.canaries[key]
	if m == nil {
		m = &canaryMemory{}
		c.canaries[key] = m
	}
	return m
}

func (c *Controller) forgetCanary(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.canaries[key]; m != nil {
		m.stopAnalysis()
	}
	delete(c.canaries, key)
}

// driveCanary drives the canary declared on a StatefulSet (a set gone, or declaring none, is
// forgotten, and a partition it parked given back). running is true while the canary owns the
// StatefulSet: while it runs it is the only writer of the set's template and pods (no second
// repair path acts on it).
func (c *Controller) driveCanary(ctx context.Context, key string, set *appsv1.StatefulSet, snap *stuck.Objects, rep *model.Report, state *setState, now time.Time) (running bool, err error) {
	if set != nil && annotated(set) {
		return c.syncCanary(ctx, key, set, snap, rep, state, now)
	}
	c.forgetCanary(key)
	if set == nil {
		return false, nil
	}
	return false, c.releaseCanary(ctx, key, set)
}

// annotated reports whether a canary is declared on the StatefulSet.
func annotated(set *appsv1.StatefulSet) bool {
	_, ok := set.Annotations[engine.AnnotationSteps]
	return ok && set.DeletionTimestamp == nil
}

// syncCanary turns the step machine once for an annotated StatefulSet. running is true while a
// rollout is under way (update revision ≠ current revision, observed) and the canary owns the
// StatefulSet: watch --fix's other repairs then leave it alone.
func (c *Controller) syncCanary(ctx context.Context, key string, set *appsv1.StatefulSet, snap *stuck.Objects, rep *model.Report, state *setState, now time.Time) (running bool, err error) {
	mem := c.canaryOf(key)
	steps, holdFor, err := declared(set, c.opts.Hold)
	if err == nil {
		err = engine.CheckStrategy(set)
	}
	if err != nil {
		c.canaryWarning(key, set, mem, "CanaryInvalid", err.Error())
		return false, nil
	}
	t := &canaryTurn{c: c, key: key, set: set, snap: snap, rep: rep, state: state, holdFor: holdFor, mem: mem}
	facts := t.facts(now)
	out, err := engine.Turn(ctx, steps, facts, t)
	switch out {
	case engine.Invalid, engine.Finished:
		return false, err
	case engine.Waited:
		return (facts.Observed && facts.Pending) || !facts.Observed, err
	}
	return true, err
}

// canaryTurn is watch's port of the step machine (engine.Port) for one sync of one annotated
// StatefulSet: each decision carried out with guarded patches, the repair executor (within the
// namespace's repair budget), Events, the Reconciling condition and metrics; the step's analysis
// measured in the background (analysis.go).
type canaryTurn struct {
	c     *Controller
	key   string
	set   *appsv1.StatefulSet
	snap  *stuck.Objects
	rep   *model.Report
	state *setState
	// holdFor is how long a step must hold healthy, or a finding stuck (the annotation, else
	// --hold); due are the blocking findings that held for it.
	holdFor time.Duration
	due     []string
	mem     *canaryMemory
	// step names the step under way: "revision/partition".
	step string
}

var _ engine.Port = (*canaryTurn)(nil)

// facts are the machine's facts of the StatefulSet now: Stuck once a blocking finding held for
// the hold, Healthy once the step's pods have been Ready on the update revision, settled, with
// no blocking finding, for the hold. The set is looked at again when either will have held.
func (t *canaryTurn) facts(now time.Time) engine.Facts {
	c, set := t.c, t.set
	facts := engine.FactsOf(set)
	var blocking []string
	for k, f := range t.state.findings {
		// A pause is watch's own (RolloutBlocked CanaryPaused, from its condition), not the
		// pods': it waits for a person and never fails the step.
		if f.Blocking() && f.Reason != apiv1.ReasonCanaryPaused {
			blocking = append(blocking, k)
		}
	}
	due, next := t.state.held.Due(now, t.holdFor, blocking)
	t.due = due
	facts.Stuck = len(due) > 0
	c.requeueAt(t.key, now, next)
	t.step = fmt.Sprintf("%s/%d", set.Status.UpdateRevision, facts.Partition)
	stepComplete := facts.Observed && facts.Pending && engine.StepComplete(set) && len(blocking) == 0
	if stepComplete {
		// A pod Ready for a moment between two crashes is no healthy step: the pods' own
		// timestamps must say Ready and not restarted for --settle.
		var unsettled rollout.Unsettled
		stepComplete, unsettled = rollout.SettledAmong(set, t.snap.Pods, now, c.opts.Steady)
		c.requeueAt(t.key, now, unsettled.At)
	}
	if stepComplete {
		t.mem.healthy.Observe(now, []string{t.step})
	} else {
		t.mem.healthy.Observe(now, nil)
	}
	healthy, next := t.mem.healthy.Due(now, t.holdFor, []string{t.step})
	facts.Healthy = len(healthy) > 0
	c.requeueAt(t.key, now, next)
	return facts
}

// Invalid implements engine.Port: a Warning Event CanaryInvalid, nothing changed.
func (t *canaryTurn) Invalid(_ context.Context, err error) error {
	t.c.canaryWarning(t.key, t.set, t.mem, "CanaryInvalid", err.Error())
	return nil
}

// Wait implements engine.Port: Reconciling=True, reason CanaryStep, while a step is under way.
func (t *canaryTurn) Wait(ctx context.Context, f engine.Facts) error {
	if f.Observed && f.Pending {
		t.c.setReconciling(ctx, t.key, t.set, corev1.ConditionTrue, "CanaryStep", fmt.Sprintf("canary of revision %s: partition %d, waiting for %s to be Ready on it for %s with no finding",
			t.set.Status.UpdateRevision, f.Partition, strings.Join(engine.CanaryPods(t.set, f.Partition), ", "), t.holdFor))
	}
	return nil
}

// Done implements engine.Port: Reconciling=False, and the partition parked at replicas for the
// next rollout.
func (t *canaryTurn) Done(ctx context.Context, f engine.Facts) error {
	c, set := t.c, t.set
	c.setReconciling(ctx, t.key, set, corev1.ConditionFalse, "CanaryIdle", "no canary under way: the partition is held at spec.replicas until the next template change")
	if f.Partition >= f.Replicas || !f.Observed {
		return nil
	}
	note := fmt.Sprintf("parked: partition %d (spec.replicas) while revision %s is current", f.Replicas, set.Status.CurrentRevision)
	if err := c.patchPartition(ctx, set, f.Replicas, note); err != nil {
		return c.canaryPatchError(t.key, set, t.mem, err)
	}
	c.metrics.CanarySteps.WithLabelValues("parked", set.Namespace).Inc()
	c.recorder.Event(set, corev1.EventTypeNormal, "CanaryParked", fmt.Sprintf("stsdiag holds the partition at %d (spec.replicas): revision %s is current, the next template change rolls out by %s", f.Replicas, set.Status.CurrentRevision, engine.AnnotationSteps))
	c.logf("%s: canary: %s", t.key, note)
	return nil
}

// declared reads the canary's annotations.
func declared(set *appsv1.StatefulSet, defaultHold time.Duration) ([]engine.Step, time.Duration, error) {
	steps, err := engine.ParseSteps(set.Annotations[engine.AnnotationSteps])
	if err != nil {
		return nil, 0, fmt.Errorf("annotation %s: %w", engine.AnnotationSteps, err)
	}
	holdFor := defaultHold
	if v, ok := set.Annotations[engine.AnnotationHold]; ok {
		if holdFor, err = time.ParseDuration(v); err != nil || holdFor < 0 {
			return nil, 0, fmt.Errorf("annotation %s: %q is not a duration such as 5m", engine.AnnotationHold, v)
		}
	}
	return steps, holdFor, nil
}

func (c *Controller) requeueAt(key string, now, at time.Time) {
	if !at.IsZero() {
		c.queue.AddAfter(key, at.Sub(now)+50*time.Millisecond)
	}
}

// Advance implements engine.Port: the partition lowered to the decided step, within the
// namespace's repair budget; the step's Event ends with the analysis that let it go forward.
func (t *canaryTurn) Advance(ctx context.Context, d engine.Decision, run *apiv1.AnalysisRun) error {
	c, set := t.c, t.set
	also := ""
	if run != nil {
		also = fmt.Sprintf("; analysis %s successful", run.Template)
	}
	if !c.reserveRepairs(set.Namespace, 1) {
		c.metrics.CanarySteps.WithLabelValues("ratelimited", set.Namespace).Inc()
		c.recorder.Event(set, corev1.EventTypeWarning, "RepairRateLimited", fmt.Sprintf("stsdiag postponed canary step %s: --max-repairs-per-hour %d reached in this namespace", d.Step.Step, c.opts.MaxRepairsPerHour))
		c.queue.AddAfter(t.key, 5*time.Minute)
		return nil
	}
	note := fmt.Sprintf("step %s (%d of %d): partition %d, revision %s", d.Step.Step, d.Index+1, d.Of, d.Step.Partition, set.Status.UpdateRevision)
	if err := c.patchPartition(ctx, set, d.Step.Partition, note); err != nil {
		c.refundRepairs(set.Namespace, 1)
		return c.canaryPatchError(t.key, set, t.mem, err)
	}
	pods := engine.CanaryPods(set, d.Step.Partition)
	c.metrics.CanarySteps.WithLabelValues("advanced", set.Namespace).Inc()
	c.recorder.Event(set, corev1.EventTypeNormal, "CanaryStep", truncate(fmt.Sprintf("stsdiag canary %s: %d of %d pods on revision %s (%s), each to be Ready for %s with no finding%s",
		note, d.Step.Pods, controller.Replicas(set), set.Status.UpdateRevision, strings.Join(pods, ", "), t.holdFor, also)))
	c.logf("%s: canary %s%s", t.key, note, also)
	return nil
}

// RollBack implements engine.Port: the template rolled back as fix --rollback does and the
// proven-stuck canary pods deleted (plan.CanaryRollback through the repair executor), within the
// budget.
func (t *canaryTurn) RollBack(ctx context.Context, f engine.Facts) error {
	var held []string
	for _, k := range t.due {
		f := t.state.findings[k]
		held = append(held, strings.TrimSpace(f.Pod+" "+string(f.Code)+reasonOf(f)))
	}
	what := fmt.Sprintf("%s held for %s", strings.Join(held, ", "), t.holdFor)
	actions, unrollable := plan.CanaryRollback(t.rep, t.snap, t.set, engine.CanaryPods(t.set, f.Partition))
	if actions == nil {
		t.c.canaryUnrollable(ctx, t.key, t.set, t.mem, what, explain.Unrollable(unrollable))
		return nil
	}
	return t.c.applyRollback(ctx, t.key, t.set, actions, what, "stuck canary pods deleted")
}

// canaryUnrollable says a failed canary has no safe rollback (why): Reconciling=True with reason
// CanaryStuck and a Warning Event. what is what failed, last: the longest, cut first.
func (c *Controller) canaryUnrollable(ctx context.Context, key string, set *appsv1.StatefulSet, mem *canaryMemory, what, why string) {
	c.setReconciling(ctx, key, set, corev1.ConditionTrue, "CanaryStuck", truncate(fmt.Sprintf("canary of revision %s stuck, %s: %s", set.Status.UpdateRevision, why, what)))
	c.canaryWarning(key, set, mem, "CanaryStuck", fmt.Sprintf("stsdiag canary of revision %s stuck, %s: %s", set.Status.UpdateRevision, why, what))
}

// applyRollback applies a failed canary's rollback actions through the repair executor, within
// the budget. what is what failed, pods what became of the canary pods, both for the Event (what
// last: an analysis' words end with its query, cut first).
func (c *Controller) applyRollback(ctx context.Context, key string, set *appsv1.StatefulSet, actions []model.Action, what, pods string) error {
	if !c.reserveRepairs(set.Namespace, len(actions)) {
		c.metrics.CanarySteps.WithLabelValues("ratelimited", set.Namespace).Inc()
		c.recorder.Event(set, corev1.EventTypeWarning, "RepairRateLimited", fmt.Sprintf("stsdiag postponed the canary's rollback (%d actions): --max-repairs-per-hour %d reached in this namespace", len(actions), c.opts.MaxRepairsPerHour))
		c.queue.AddAfter(key, 5*time.Minute)
		return nil
	}
	exec := repair.New(repair.Options{Kube: c.clients.Kube, Prove: c.prover(key, set.Namespace, set.Name), DryRun: apiv1.DryRunNone,
		Policy: plan.Policy{Rollback: true}, Disruption: c.opts.Disruption})
	done, err := exec.Apply(ctx, actions)
	changed := 0
	for _, a := range done {
		if a.Result == apiv1.ResultDone {
			changed++
		}
		c.metrics.Repairs.WithLabelValues(string(a.Kind()), string(a.Result), a.Namespace).Inc()
		c.logf("%s: canary rollback %s: %s: %s", key, a.Result, explain.Action(a), a.Message)
	}
	c.refundRepairs(set.Namespace, len(actions)-changed)
	if rolled := verdict.RollbacksDone(done); len(rolled) > 0 {
		c.metrics.CanarySteps.WithLabelValues("rolledback", set.Namespace).Inc()
		c.recorder.Event(set, corev1.EventTypeWarning, "CanaryRolledBack", truncate(fmt.Sprintf("stsdiag canary of revision %s failed; template rolled back to revision %s, %s (%d actions done): %s",
			rolled[0].FromRevision, rolled[0].Revision, pods, changed, what)))
		c.logf("%s: canary of revision %s rolled back to %s: %s", key, rolled[0].FromRevision, rolled[0].Revision, what)
	}
	c.queue.AddAfter(key, time.Second)
	return err
}

func reasonOf(f stuck.Finding) string {
	if f.Reason == "" {
		return ""
	}
	return " (" + f.Reason + ")"
}

// patchPartition sets the partition with canary's guarded JSON patch (UID, generation and the
// partition as read) and records the step in engine.AnnotationStep in the same patch.
func (c *Controller) patchPartition(ctx context.Context, set *appsv1.StatefulSet, partition int32, note string) error {
	body, err := append(engine.PartitionOps(set, partition), jsonpatch.Add(jsonpatch.Annotation(engine.AnnotationStep), note)).Marshal()
	if err != nil {
		return err
	}
	_, err = c.clients.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: "stsdiag-canary"})
	return err
}

// canaryPatchError: a failed test (someone else changed the StatefulSet since the cache read it)
// is no error: the change's own event queues the set again, decided afresh.
func (c *Controller) canaryPatchError(key string, set *appsv1.StatefulSet, mem *canaryMemory, err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.logf("%s: canary: the StatefulSet changed since it was read (%v); deciding again on fresh data, nothing overwritten", key, err)
		c.queue.AddAfter(key, time.Second)
		return nil
	}
	if apierrors.IsForbidden(err) {
		c.canaryWarning(key, set, mem, "CanaryForbidden", fmt.Sprintf("stsdiag cannot drive the canary declared by %s: %v; grant patch on statefulsets and delete on pods (deploy/watch-fix)", engine.AnnotationSteps, err))
		return nil
	}
	return err
}

// canaryWarning records a Warning Event once per distinct message.
func (c *Controller) canaryWarning(key string, set *appsv1.StatefulSet, mem *canaryMemory, reason, message string) {
	if mem.warned == message {
		return
	}
	mem.warned = message
	c.recorder.Event(set, corev1.EventTypeWarning, reason, truncate(message))
	c.logf("%s: canary: %s", key, message)
}

// releaseCanary gives the partition back when the canary annotation is removed: a StatefulSet that
// still carries watch's engine.AnnotationStep with its partition parked at spec.replicas (or
// above) would otherwise never roll out again. The partition goes to 0 and the annotation away, in
// one guarded patch.
func (c *Controller) releaseCanary(ctx context.Context, key string, set *appsv1.StatefulSet) error {
	if _, ok := set.Annotations[engine.AnnotationStep]; !ok || set.DeletionTimestamp != nil ||
		set.Status.ObservedGeneration < set.Generation || controller.Partition(set) < controller.Replicas(set) {
		return nil
	}
	body, err := append(engine.PartitionOps(set, 0), jsonpatch.Remove(jsonpatch.Annotation(engine.AnnotationStep))).Marshal()
	if err != nil {
		return err
	}
	if _, err := c.clients.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: "stsdiag-canary"}); err != nil {
		return c.canaryPatchError(key, set, c.canaryOf(key), err)
	}
	c.recorder.Event(set, corev1.EventTypeNormal, "CanaryReleased", fmt.Sprintf("stsdiag: %s removed: partition %d (held by the canary) set back to 0", engine.AnnotationSteps, controller.Partition(set)))
	c.logf("%s: canary: %s removed, partition %d set back to 0", key, engine.AnnotationSteps, controller.Partition(set))
	return nil
}
