package canary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/canary/stepanalysis"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/follow"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Options tune Run.
type Options struct {
	Namespace, Name string
	Steps           []engine.Step
	// Images (container name → reference) change the template in the same patch as the first
	// step's partition (--image).
	Images map[string]string
	// Hold is how long a finding must hold for a step to fail (--hold).
	Hold time.Duration
	// StepDuration is how long a step's pods must stay Ready on the update revision with no
	// finding for it to pass (--step-duration); 0: Hold.
	StepDuration time.Duration
	// Steady is how long a step's pods must have been Ready, not restarted, by their own
	// timestamps (rollout.Settled; --settle).
	Steady    time.Duration
	Diagnosis stuck.Options
	// NoRollback only stops and reports when a step fails.
	NoRollback bool
	// Timeout is the deadline the caller gave ctx, named in a TimedOut verdict.
	Timeout time.Duration
	// Log receives the progress lines.
	Log io.Writer
	// Progress, if set, is told about each rollback action as it completes.
	Progress func(model.Action)
	// Approve, if set, is shown the plan once every check passed and before the first write;
	// an error from it ends Run with that error and nothing written (canary's question, --yes,
	// --dry-run=client).
	Approve func(Plan) error
	// ServerDryRun sends the first patch with dryRun=All (validation and admission, nothing
	// persisted) before Approve is asked (--dry-run=server).
	ServerDryRun bool
	// Analysis, if set, gates each step on the application's metrics once its pods held healthy.
	Analysis *stepanalysis.Analysis
}

func (o Options) stepDuration() time.Duration {
	if o.StepDuration > 0 {
		return o.StepDuration
	}
	return o.Hold
}

// BadInputError is a canary that cannot start on this StatefulSet as it is (exit 2).
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

func badInput(format string, a ...any) error { return &BadInputError{Err: fmt.Errorf(format, a...)} }

// runner is one canary's state: what it last wrote, so that anything else is someone else's, and
// the facts its verdict is decided from once it ends (result).
type runner struct {
	o    Options
	c    gather.Clients
	live *gather.Live
	res  *model.CanaryResult
	// end is the state the canary ended in (verdict.DecideCanary decides its verdict); seen is the
	// last wait's result (its verdict, StatefulSets and findings); actions are the rollback's.
	end     model.Reason
	seen    *model.WaitResult
	actions []model.Action
	// The StatefulSet as canary last read or wrote it: its UID, generation, partition and
	// template. A change of replicas is no one's conflict (the steps follow it, engine.Next); a
	// change of anything else canary relies on stops it.
	uid        types.UID
	generation int64
	partition  int32
	template   *corev1.PodTemplateSpec
	// step is the step under way, as its verdicts name it; cur is that step resolved and index
	// its record among res.Steps (-1 when a scale re-resolved it).
	step  string
	cur   engine.Resolved
	index int
	// The step machine's turn: set is the StatefulSet as read for it; measured the step's
	// analysis once run, and passed whether the step passed, in the gate's current pass.
	set      *appsv1.StatefulSet
	measured *apiv1.AnalysisRun
	passed   bool
}

// Run runs a canary on one StatefulSet to a verdict, decided once from the state it ended in
// (verdict.DecideCanary). It returns an error (with a verdict in the result) when it cannot start:
// BadInputError for a StatefulSet a canary cannot step.
func Run(ctx context.Context, c gather.Clients, o Options) (*model.CanaryResult, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	r := &runner{o: o, c: c, res: &model.CanaryResult{Namespace: o.Namespace, StatefulSet: o.Name}}
	live, _, err := gather.StartLive(ctx, c, gather.Scope{Namespace: o.Namespace, Names: []string{o.Name}}, nil)
	if err != nil {
		end, err := follow.StartFailed(err, o.Timeout)
		return r.result(end), err
	}
	r.live = live
	steps, err := r.start(ctx)
	if err != nil {
		if r.end == nil {
			r.end = model.Failed{As: verdictOf(err), Err: err}
		}
		return r.result(r.end), err
	}
	if err := r.run(ctx, steps); err != nil {
		if ctx.Err() == nil {
			// The last wait's verdict stands, with the error.
			return r.result(model.CanaryStepEnded{Step: r.step, Then: r.seen.Verdict()}), err
		}
		// The deadline or a signal ended a patch or a read: the verdict says which.
		r.seen = nil
		return r.result(model.CanaryCut{As: follow.VerdictOf(ctx.Err()), Err: err}), nil
	}
	return r.result(r.end), nil
}

// result is the canary's result: the verdict of the state it ended in, with the last wait's
// StatefulSets and findings and the rollback's actions.
func (r *runner) result(end model.Reason) *model.CanaryResult {
	r.res.WaitResult = *explain.Result(verdict.DecideCanary(end))
	if r.seen != nil {
		r.res.StatefulSets, r.res.Findings = r.seen.StatefulSets, r.seen.Findings
	}
	r.res.Actions = r.actions
	return r.res
}

func verdictOf(err error) apiv1.Verdict {
	var bad *BadInputError
	if errors.As(err, &bad) {
		return apiv1.WaitUnevaluable
	}
	return follow.VerdictOf(err)
}

// observed waits until the controller has observed the StatefulSet's generation and returns it.
func (r *runner) observed(ctx context.Context) (*appsv1.StatefulSet, error) {
	for {
		snap, _, err := r.live.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		set := find(snap, r.o.Namespace, r.o.Name)
		if set == nil {
			return nil, &gather.NotFoundError{What: fmt.Sprintf("statefulset %s/%s", r.o.Namespace, r.o.Name)}
		}
		if set.Status.ObservedGeneration >= set.Generation && (set.UID != r.uid || set.Generation >= r.generation) {
			return set.DeepCopy(), nil
		}
		select {
		case <-r.live.Changes():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func find(snap *stuck.Objects, namespace, name string) *appsv1.StatefulSet {
	for i := range snap.StatefulSets {
		if s := &snap.StatefulSets[i]; s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

// start checks the StatefulSet and sets the first step's partition (with --image, in the same
// patch as the template). It returns the steps resolved against spec.replicas.
func (r *runner) start(ctx context.Context) ([]engine.Resolved, error) {
	set, err := r.observed(ctx)
	if err != nil {
		return nil, err
	}
	if err := engine.CheckStrategy(set); err != nil {
		return nil, &BadInputError{Err: err}
	}
	steps, merged, err := engine.Resolve(r.o.Steps, controller.Replicas(set))
	if err != nil {
		return nil, &BadInputError{Err: err}
	}
	for _, m := range merged {
		fmt.Fprintf(r.o.Log, "note: %s\n", m)
	}
	r.res.PartitionBefore = controller.Partition(set)
	for _, s := range steps {
		r.res.Steps = append(r.res.Steps, apiv1.CanaryStep{Step: s.Step, Pods: s.Pods, Partition: s.Partition, Result: apiv1.StepPending})
	}
	first := steps[0]
	var body []byte
	switch pending := set.Status.UpdateRevision != set.Status.CurrentRevision; {
	case len(r.o.Images) > 0 && pending:
		return nil, badInput("statefulset %s/%s is already rolling out revision %s (current %s): --image starts a new template only from a finished rollout; run canary without --image to step this one", set.Namespace, set.Name, set.Status.UpdateRevision, set.Status.CurrentRevision)
	case len(r.o.Images) > 0:
		if body, err = engine.ImagePatch(set, r.o.Images, first.Partition); err != nil {
			return nil, &BadInputError{Err: err}
		}
	case !pending:
		return nil, badInput("statefulset %s/%s has nothing to roll out: its update revision is its current revision (%s); change the template with --image, or change it with the partition held at %d or more first", set.Namespace, set.Name, set.Status.CurrentRevision, first.Partition)
	case controller.Partition(set) < first.Partition:
		return nil, badInput("statefulset %s/%s has partition %d, below the first step's %d (step %s): the new revision may already be past the canary; hold the partition at %d or more before changing the template, or use --image", set.Namespace, set.Name, controller.Partition(set), first.Partition, first.Step, controller.Replicas(set))
	case controller.Partition(set) > first.Partition:
		if body, err = engine.PartitionPatch(set, first.Partition); err != nil {
			return nil, err
		}
	}
	if r.o.Approve != nil {
		plan := Plan{Namespace: set.Namespace, Name: set.Name, Replicas: controller.Replicas(set), PartitionBefore: controller.Partition(set),
			Steps: r.res.Steps, Images: r.o.Images, CurrentImages: images(set), Pending: set.Status.UpdateRevision != set.Status.CurrentRevision}
		if r.o.ServerDryRun && body != nil {
			_, err := r.c.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body,
				metav1.PatchOptions{FieldManager: "stsdiag-canary", DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return nil, fmt.Errorf("the API server refused the first step's patch (dry run): %w", err)
			}
			plan.ServerAccepted = true
		}
		if err := r.o.Approve(plan); err != nil {
			return nil, err
		}
	}
	r.remember(set)
	if body != nil {
		if err := r.patch(ctx, set, body, first); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: partition already %d\n", set.Namespace, set.Name, first.Step, first.Partition)
	}
	return steps, nil
}

// patch sends a guarded patch and remembers what it wrote. A failed test (422) or a conflict
// stops the canary: Stopped, naming what changed.
func (r *runner) patch(ctx context.Context, set *appsv1.StatefulSet, body []byte, step engine.Resolved) error {
	out, err := r.c.Kube.AppsV1().StatefulSets(set.Namespace).Patch(ctx, set.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: "stsdiag-canary"})
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		r.end = model.CanaryNotStarted{Step: step.Step, Change: r.changedSince(ctx, set), Err: err}
		return errStopped
	case err != nil:
		return err
	}
	r.remember(out)
	what := ""
	if len(r.o.Images) > 0 && step.Partition == r.res.Steps[0].Partition && r.res.Steps[0].Result == apiv1.StepPending {
		what = " and the new template"
	}
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s: partition %d%s (%d of %d pods on the update revision: %s)\n",
		set.Namespace, set.Name, step.Step, step.Partition, what, step.Pods, controller.Replicas(out), strings.Join(engine.CanaryPods(out, step.Partition), ", "))
	return nil
}

var errStopped = errors.New("stopped")

func (r *runner) remember(set *appsv1.StatefulSet) {
	r.uid, r.generation, r.partition, r.template = set.UID, set.Generation, controller.Partition(set), set.Spec.Template.DeepCopy()
}

// changedSince reads the StatefulSet afresh and says what differs from what canary read or wrote.
func (r *runner) changedSince(ctx context.Context, set *appsv1.StatefulSet) model.CanaryChange {
	now, err := r.c.Kube.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
	if err != nil {
		return model.CanaryChange{Namespace: set.Namespace, Name: set.Name, Kind: model.ChangeUnreadable, Err: err}
	}
	return changeOf(set.UID, set.Generation, controller.Partition(set), &set.Spec.Template, now, true)
}

// changeOf is what someone else changed: the object, its partition, its template or (when
// generation counts: a patch's test failed) anything else in its spec.
func changeOf(uid types.UID, generation int64, partition int32, template *corev1.PodTemplateSpec, now *appsv1.StatefulSet, generationCounts bool) model.CanaryChange {
	c := model.CanaryChange{Namespace: now.Namespace, Name: now.Name, UID: now.UID, WasUID: uid, Partition: controller.Partition(now), WasPartition: partition,
		Generation: now.Generation, WasGeneration: generation, Kind: model.ChangeUnknown}
	switch {
	case now.UID != uid:
		c.Kind = model.ChangeRecreated
	case controller.Partition(now) != partition:
		c.Kind = model.ChangePartition
	case template != nil && !apiequality.Semantic.DeepEqual(*template, now.Spec.Template):
		c.Kind = model.ChangeTemplate
	case generationCounts && now.Generation != generation:
		c.Kind = model.ChangeSpec
	}
	return c
}

// changed reports whether the StatefulSet differs from what canary read or wrote in what canary
// relies on: its UID, its partition, its template (not its replicas).
func (r *runner) changed(set *appsv1.StatefulSet) bool {
	return set.UID != r.uid || controller.Partition(set) != r.partition || (r.template != nil && !apiequality.Semantic.DeepEqual(*r.template, set.Spec.Template))
}

// stopIfChanged is the gate's Stop: a change canary did not make ends the canary.
func (r *runner) stopIfChanged(snap *stuck.Objects) (apiv1.Verdict, string) {
	stopped, ok := r.stopFor(find(snap, r.o.Namespace, r.o.Name))
	if !ok {
		return "", ""
	}
	v := verdict.DecideCanary(stopped)
	return v.Result, explain.Verdict(v)
}

// stopFor says whether set, as read, differs from what canary read or wrote: someone else
// changed it, and the canary stops.
func (r *runner) stopFor(set *appsv1.StatefulSet) (model.CanaryStopped, bool) {
	if set == nil || !r.changed(set) || (set.UID == r.uid && set.Generation < r.generation) {
		return model.CanaryStopped{}, false // deleted: the gate's NotFound; an older generation: the cache lags canary's patch
	}
	return model.CanaryStopped{Change: changeOf(r.uid, r.generation, r.partition, r.template, set, false)}, true
}

// run gates each step and turns the step machine (engine.Turn, with the runner as its port,
// port.go) on the gate's verdict: a step whose pods held healthy goes forward (measured first
// when an analysis gates it), a stuck one rolls back.
func (r *runner) run(ctx context.Context, steps []engine.Resolved) error {
	r.cur, r.index = steps[0], 0
	for {
		r.step = r.cur.Step
		res, err := follow.Run(ctx, r.live, follow.Options{Stepping: true, Diagnosis: r.o.Diagnosis, Hold: r.o.Hold, Steady: r.o.Steady, Settle: r.o.stepDuration(), Log: r.o.Log, Stop: r.stopIfChanged})
		r.seen = res
		if err != nil {
			return err
		}
		r.measured, r.passed = nil, false
		switch res.Result {
		case apiv1.WaitComplete:
			if r.o.Analysis == nil {
				r.pass() // the gate's Complete passes it; an analysis' Successful does otherwise
			}
			if more, err := r.healthy(ctx); !more || err != nil {
				return err
			}
		case apiv1.WaitStuck:
			_, err := engine.Turn(ctx, r.o.Steps, stuckFacts(r.partition), r)
			return err
		case apiv1.WaitTimedOut:
			r.mark(r.index, r.cur, apiv1.StepStopped)
			r.end = model.CanaryTimedOut{After: r.o.Timeout, Step: r.cur.Step}
			return nil
		default:
			r.mark(r.index, r.cur, apiv1.StepStopped)
			r.end = model.CanaryStepEnded{Step: r.cur.Step, Then: res.Verdict()}
			return nil
		}
	}
}

// stuckFacts are the facts of a step the gate found stuck: a blocking finding held for --hold
// while the canary's rollout was under way, which the machine rolls back.
func stuckFacts(partition int32) engine.Facts {
	return engine.Facts{Partition: partition, Observed: true, Pending: true, Stuck: true}
}

// healthy turns the step machine for a step whose pods held healthy, on the StatefulSet read
// once the controller observed it, and again after its analysis measured it Successful. more is
// true when the canary goes on with the gate (a step forward, or the step under way still).
func (r *runner) healthy(ctx context.Context) (more bool, err error) {
	for {
		set, err := r.observed(ctx)
		if err != nil {
			r.seen, r.end = nil, model.Failed{As: follow.VerdictOf(err), Err: err}
			return false, nil
		}
		if stopped, ok := r.stopFor(set); ok {
			if !r.passed {
				r.mark(r.index, r.cur, apiv1.StepStopped)
			}
			r.end = stopped
			return false, nil
		}
		// The steps are re-resolved against the replicas of now (a scale during the canary
		// moves the steps); canary took the first step itself, so nothing is parked.
		f := engine.FactsOf(set)
		f.Healthy, f.Parked = true, false
		r.set = set
		out, err := engine.Turn(ctx, r.o.Steps, f, r)
		switch {
		case errors.Is(err, errStopped):
			return false, nil
		case err != nil:
			return false, err
		case out == engine.Measured:
			continue
		}
		return out == engine.Advanced || out == engine.Waited, nil
	}
}

// pass records the step under way as passed.
func (r *runner) pass() {
	r.passed = true
	r.mark(r.index, r.cur, apiv1.StepPassed)
	fmt.Fprintf(r.o.Log, "statefulset %s/%s: step %s passed: %d pods Ready on the update revision for %s with no finding\n", r.o.Namespace, r.o.Name, r.cur.Step, r.cur.Pods, r.o.stepDuration())
}

// mark records a step's result (a step re-resolved after a scale is added).
func (r *runner) mark(index int, step engine.Resolved, result apiv1.CanaryStepResult) {
	r.recorded(index, step).Result = result
}

// recorded is the step's record (added when the replicas re-resolved it).
func (r *runner) recorded(index int, step engine.Resolved) *apiv1.CanaryStep {
	if index < 0 || index >= len(r.res.Steps) || r.res.Steps[index].Step != step.Step || r.res.Steps[index].Partition != step.Partition {
		r.res.Steps = append(r.res.Steps, apiv1.CanaryStep{Step: step.Step, Pods: step.Pods, Partition: step.Partition})
		index = len(r.res.Steps) - 1
	}
	return &r.res.Steps[index]
}

// stepIndex finds a step in the recorded ones (-1 when the replicas changed it).
func (r *runner) stepIndex(step engine.Resolved) int {
	for i, s := range r.res.Steps {
		if s.Step == step.Step && s.Pods == step.Pods && s.Partition == step.Partition {
			return i
		}
	}
	return -1
}
