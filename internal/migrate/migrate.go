// Package migrate is the migrate use case: change what Kubernetes forbids changing in a
// StatefulSet (podManagementPolicy, serviceName, volumeClaimTemplates' storage) by recreating the
// object while its pods and claims stay. Read → plan (package migration, pure) → confirm → apply:
// grow the claims, save the original in a ConfigMap, delete it with propagationPolicy Orphan,
// create the new one with the running template, prove the adoption, apply the spec asked for,
// remove the copy. Every write has its preconditions and is decided on a fresh read, so the same
// command, run again after any interruption, finishes the job.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/jsonpatch"
	"github.com/stsdiag/stsdiag/internal/migration"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// ErrNotConfirmed means the person asked declined: nothing was changed.
var ErrNotConfirmed = errors.New("not confirmed; nothing changed")

// ErrBadInput is wrapped by errors about what was asked (no change given, a file for another
// StatefulSet): exit 2.
var ErrBadInput = errors.New("bad input")

// Options are the options of Run and Status.
type Options struct {
	Clients gather.Clients
	// Namespace and Name are the StatefulSet's.
	Namespace, Name string
	// Desired is the StatefulSet asked for (migrate -f), as written; nil with the flag forms.
	Desired *appsv1.StatefulSet
	// PodManagementPolicy, ServiceName and ClaimSizes are the flag forms: each changes the
	// running StatefulSet's field when set.
	PodManagementPolicy string
	ServiceName         *string
	ClaimSizes          map[string]resource.Quantity
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// GitOpsPaused: the user says the GitOps controller or Helm release managing the set is
	// paused (--gitops-paused).
	GitOpsPaused bool
	// Timeout bounds the waits of one run (finalizers, the controller's adoption).
	Timeout time.Duration
	// Diagnosis tunes the diagnosis the plan names a stuck rollout from.
	Diagnosis stuck.Options
	// Confirm is shown the plan before anything changes; nil applies without asking. An error
	// means confirmation was impossible (no terminal).
	Confirm func(*apiv1.MigrationResult) (bool, error)
	// OnPlan, if set, is shown the plan first; Progress each step done and each new wait.
	OnPlan   func(*apiv1.MigrationResult)
	Progress func(step apiv1.MigrationStep)
	// Poll is how often the waits read again (default 500ms); ResizeWait how long the claims'
	// resize is observed after growing them (default 5s).
	Poll, ResizeWait time.Duration
}

func (o *Options) defaults() {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.ResizeWait <= 0 {
		o.ResizeWait = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
}

func (o *Options) kube() kubernetes.Interface { return o.Clients.Kube }

// flagsGiven reports whether a change was asked for (a file or a flag).
func (o *Options) flagsGiven() bool {
	return o.Desired != nil || o.PodManagementPolicy != "" || o.ServiceName != nil || len(o.ClaimSizes) > 0
}

// Run migrates the StatefulSet, or resumes a migration begun before. The result is nil only
// when nothing could be read; the error is ErrNotConfirmed, ErrBadInput, the context's error
// (an interruption), or a failure to read or write.
func Run(ctx context.Context, o Options) (*apiv1.MigrationResult, error) {
	o.defaults()
	res := apiv1.NewMigrationResult(o.Namespace, o.Name)
	obs, err := o.observe(ctx, nil)
	if err != nil {
		return nil, err
	}
	var plan *migration.Plan
	if obs.Saved != nil {
		res.SavedCopy = o.Namespace + "/" + apiv1.SavedCopyName(o.Name)
		if err := o.resumable(ctx, obs, res); err != nil {
			return res, err
		}
	} else {
		if obs.Set == nil {
			if migration.Phase(obs) == apiv1.PhaseOrphaned {
				res.Phase, res.Result = apiv1.PhaseOrphaned, apiv1.MigrationIncomplete
				res.Message = fmt.Sprintf("pods of statefulset %s/%s run without it and there is no saved copy (configmap %s): migrate cannot finish what it did not begin; recover by hand (docs/migrate.md)",
					o.Namespace, o.Name, apiv1.SavedCopyName(o.Name))
				return res, nil
			}
			return nil, &gather.NotFoundError{What: fmt.Sprintf("statefulset %s/%s", o.Namespace, o.Name)}
		}
		if !o.flagsGiven() {
			return nil, fmt.Errorf("%w: say what to change: -f FILE, --pod-management-policy, --service-name or --claim-size (no migration of %s/%s is under way to resume)", ErrBadInput, o.Namespace, o.Name)
		}
		if plan, err = o.plan(ctx, obs, res); err != nil {
			return res, err
		}
	}
	if o.OnPlan != nil {
		o.OnPlan(res)
	}
	if res.Result != "" { // refused, nothing to migrate
		return res, nil
	}
	if o.DryRun {
		res.Result, res.Message = apiv1.MigrationPlanned, "dry run: the plan; nothing changed"
		return res, nil
	}
	if o.Confirm != nil {
		ok, err := o.Confirm(res)
		if err != nil || !ok {
			res.Result = apiv1.MigrationNotConfirmed
			res.Message = "not confirmed; nothing changed"
			if err != nil {
				res.Message = fmt.Sprintf("not applied: %v", err)
				return res, nil
			}
			return res, ErrNotConfirmed
		}
	}
	res.Steps = []apiv1.MigrationStep{}
	return res, o.apply(ctx, plan, res)
}

// resumable fills the result for a migration found under way: a file or flags asking for another
// spec than the saved one is refused (res.Result set).
func (o *Options) resumable(ctx context.Context, obs migration.Observed, res *apiv1.MigrationResult) error {
	saved := obs.Saved
	res.Phase = migration.Phase(obs)
	res.Changes = changesOf(saved)
	if o.flagsGiven() {
		want, err := o.desired(ctx, saved.Original)
		if err != nil {
			return err
		}
		if !migration.SpecEqual(want.Spec, saved.Final.Spec) {
			r := migration.Refusal{Reason: migration.OtherMigration, Object: res.SavedCopy}
			res.Result = apiv1.MigrationRefused
			res.Refusals = append(res.Refusals, apiv1.MigrationRefusal{Reason: string(r.Reason), Message: explain.MigrationRefusal(r)})
			res.Message = "refused: a migration to another spec is under way"
			return nil
		}
	}
	res.Message = fmt.Sprintf("a migration is under way (phase %s, saved copy %s): resuming it", res.Phase, res.SavedCopy)
	return nil
}

// changesOf are the changes a saved migration makes.
func changesOf(saved *migration.Saved) []apiv1.FieldChange {
	run := saved.Original.DeepCopy()
	p := migration.Make(migration.Input{Running: run, Desired: saved.Final})
	if p.Changes == nil {
		return []apiv1.FieldChange{}
	}
	return p.Changes
}

// plan reads what a plan needs, makes it and words it into res; res.Result is set when the
// migration ends there (refused, nothing to migrate).
func (o *Options) plan(ctx context.Context, obs migration.Observed, res *apiv1.MigrationResult) (*migration.Plan, error) {
	run := obs.Set
	res.Phase = apiv1.PhaseNotStarted
	want, err := o.desired(ctx, run)
	if err != nil {
		return nil, err
	}
	in := migration.Input{Running: run, Desired: want, Pods: obs.Pods, Claims: obs.Claims, GitOpsPaused: o.GitOpsPaused}
	if in.Classes, in.ClassesError, err = o.classes(ctx); err != nil {
		return nil, err
	}
	if findings, err := o.findings(ctx); err == nil {
		res.Findings = model.PublicFindings(findings)
		in.StuckOnOldRevision = slices.ContainsFunc(findings, func(f stuck.Finding) bool { return f.Code == apiv1.StaleRevisionStuck })
	}
	p := migration.Make(in)
	if len(p.Refusals) == 0 && p.Migrates() {
		created, err := o.dryRunCreate(ctx, p.Create)
		if err != nil {
			return nil, fmt.Errorf("asking the API server to create the new statefulset (server-side dry run): %w", err)
		}
		in.Created = created
		p = migration.Make(in)
	}
	res.Changes = p.Changes
	if res.Changes == nil {
		res.Changes = []apiv1.FieldChange{}
	}
	for _, r := range p.Refusals {
		res.Refusals = append(res.Refusals, apiv1.MigrationRefusal{Reason: string(r.Reason), Field: r.Field, Message: explain.MigrationRefusal(r)})
	}
	for _, n := range p.Notes {
		res.Notes = append(res.Notes, explain.MigrationNote(n))
	}
	for _, g := range p.Growths {
		res.Claims = append(res.Claims, apiv1.ClaimGrowth{Name: g.Claim, UID: string(g.UID), From: g.From.String(), To: g.To.String()})
	}
	switch {
	case len(p.Refusals) > 0:
		res.Result, res.Message = apiv1.MigrationRefused, fmt.Sprintf("refused (%d reason(s)); nothing changed", len(p.Refusals))
	case !p.Migrates():
		res.Result, res.Message = apiv1.NothingToMigrate, "no field Kubernetes forbids changing differs; nothing changed"
		if len(p.Changes) > 0 {
			res.Message += " (the fields that differ change in place: kubectl apply)"
		}
	default:
		res.Steps = explain.MigrationPlanSteps(p, o.Namespace, o.Name)
		res.Message = "plan"
	}
	return p, nil
}

// desired is the StatefulSet asked for, normalized as the API server stores it: the file, through
// a server-side dry-run create (defaults filled in, admission run); or the running set with the
// flags' changes.
func (o *Options) desired(ctx context.Context, running *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	if o.Desired != nil {
		if o.Desired.Name != o.Name {
			return nil, fmt.Errorf("%w: the file's StatefulSet is %s, not %s", ErrBadInput, o.Desired.Name, o.Name)
		}
		if o.Desired.Namespace != "" && o.Desired.Namespace != o.Namespace {
			return nil, fmt.Errorf("%w: the file's StatefulSet is in namespace %s, not %s", ErrBadInput, o.Desired.Namespace, o.Namespace)
		}
		want, err := o.dryRunCreate(ctx, migration.Clean(o.Desired))
		if err != nil {
			return nil, fmt.Errorf("%w: the API server refuses the file's StatefulSet (server-side dry run): %v", ErrBadInput, err)
		}
		want.Name, want.Namespace = o.Name, o.Namespace
		return want, nil
	}
	want := running.DeepCopy()
	if o.PodManagementPolicy != "" {
		want.Spec.PodManagementPolicy = appsv1.PodManagementPolicyType(o.PodManagementPolicy)
	}
	if o.ServiceName != nil {
		want.Spec.ServiceName = *o.ServiceName
	}
	for name, size := range o.ClaimSizes {
		i := slices.IndexFunc(want.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: --claim-size %s: statefulset %s/%s has no volume claim template %s", ErrBadInput, name, o.Namespace, o.Name, name)
		}
		tpl := &want.Spec.VolumeClaimTemplates[i]
		if tpl.Spec.Resources.Requests == nil {
			tpl.Spec.Resources.Requests = corev1.ResourceList{}
		}
		tpl.Spec.Resources.Requests[corev1.ResourceStorage] = size
	}
	return want, nil
}

// dryRunCreate creates the object with dryRun=All under a generated name (the name is taken):
// what the API server would store, defaults and admission included.
func (o *Options) dryRunCreate(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	probe := set.DeepCopy()
	probe.Namespace = o.Namespace
	probe.GenerateName = probe.Name[:min(len(probe.Name), 57)] + "-"
	probe.Name = ""
	return o.kube().AppsV1().StatefulSets(o.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// classes reads the StorageClasses; where they cannot be read, why (an interruption is an
// error).
func (o *Options) classes(ctx context.Context) (map[string]*storagev1.StorageClass, string, error) {
	l, err := o.kube().StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return nil, "", fmt.Errorf("listing storageclasses: %w", err)
	}
	if err != nil {
		return nil, err.Error(), nil
	}
	out := map[string]*storagev1.StorageClass{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out, "", nil
}

// findings are the StatefulSet's findings now (a rollout stuck or in progress is named in the
// plan).
func (o *Options) findings(ctx context.Context) ([]stuck.Finding, error) {
	rep, _, err := diagnose.FromSource(ctx, gather.Lister{Clients: o.Clients, Scope: gather.Scope{Namespace: o.Namespace, Names: []string{o.Name}}}, o.Diagnosis)
	if err != nil {
		return nil, err
	}
	var out []stuck.Finding
	for _, f := range rep.Findings {
		if f.StatefulSet == o.Name && f.Severity != apiv1.SeverityInfo {
			out = append(out, f)
		}
	}
	return out, nil
}

// observe reads what the next step is decided on: the StatefulSet, the saved copy, the pods the
// original's selector matches (every pod of the namespace when there is neither), the claims.
func (o *Options) observe(ctx context.Context, deletions *deletionLog) (migration.Observed, error) {
	var obs migration.Observed
	set, err := o.kube().AppsV1().StatefulSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return obs, fmt.Errorf("reading statefulset %s/%s: %w", o.Namespace, o.Name, err)
	default:
		obs.Set = set
	}
	cm, err := o.kube().CoreV1().ConfigMaps(o.Namespace).Get(ctx, apiv1.SavedCopyName(o.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return obs, fmt.Errorf("reading configmap %s/%s: %w", o.Namespace, apiv1.SavedCopyName(o.Name), err)
	default:
		if obs.Saved, err = migration.ParseSaved(cm); err != nil {
			return obs, err
		}
	}
	selector := labels.Everything()
	switch {
	case obs.Saved != nil:
		selector, err = metav1.LabelSelectorAsSelector(obs.Saved.Original.Spec.Selector)
	case obs.Set != nil:
		selector, err = metav1.LabelSelectorAsSelector(obs.Set.Spec.Selector)
	}
	if err != nil {
		return obs, err
	}
	pods, err := o.kube().CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return obs, fmt.Errorf("listing pods in %s: %w", o.Namespace, err)
	}
	obs.Pods = ofName(pods.Items, o.Name)
	claims, err := o.kube().CoreV1().PersistentVolumeClaims(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return obs, fmt.Errorf("listing persistentvolumeclaims in %s: %w", o.Namespace, err)
	}
	obs.Claims = claims.Items
	if deletions != nil {
		obs.Deleted = deletions.list()
	}
	return obs, nil
}

// ofName keeps the pods whose name is one of the StatefulSet's (<name>-<ordinal>).
func ofName(pods []corev1.Pod, name string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if _, ok := controller.ParseOrdinal(name, p.Name); ok {
			out = append(out, p)
		}
	}
	return out
}

// apply runs the steps until the migration is done, fails, or its waits outlast the timeout.
func (o *Options) apply(ctx context.Context, plan *migration.Plan, res *apiv1.MigrationResult) error {
	deletions, stop, err := o.watchDeletions(ctx)
	if err != nil {
		return err
	}
	defer stop()
	deadline := time.Now().Add(o.Timeout)
	var (
		copyRemoved bool
		lastWait    string
		conflicts   int
		grown       []string
	)
	for {
		if err := ctx.Err(); err != nil {
			res.Result, res.Message = apiv1.MigrationIncomplete, "interrupted; the same command finishes the migration"
			return err
		}
		obs, err := o.observe(ctx, deletions)
		if err != nil {
			return o.stopped(res, err)
		}
		obs.CopyRemoved = copyRemoved
		a := migration.Next(plan, obs)
		res.Phase = a.Phase
		if a.Proof != nil {
			res.Proof = a.Proof
		}
		if len(grown) > 0 && a.Kind != migration.GrowClaim {
			o.observeResize(ctx, res, grown)
			grown = nil
		}
		switch a.Kind {
		case migration.Done:
			res.Phase, res.Result = apiv1.PhaseDone, apiv1.Migrated
			res.Message = fmt.Sprintf("migrated statefulset %s/%s: every pod adopted and proven so, the saved copy removed", o.Namespace, o.Name)
			return nil
		case migration.Fail:
			res.Result, res.Message = apiv1.MigrationIncomplete, explain.MigrationWhy(a.Why, o.Namespace, o.Name)
			return nil
		case migration.Wait:
			why := explain.MigrationWhy(a.Why, o.Namespace, o.Name)
			if time.Now().After(deadline) {
				res.Result = apiv1.MigrationIncomplete
				res.Message = fmt.Sprintf("not finished within %s: %s; the saved copy stays and the same command finishes the migration", o.Timeout, why)
				return nil
			}
			if why != lastWait && o.Progress != nil {
				o.Progress(apiv1.MigrationStep{Step: stepOf(a.Phase), Message: "waiting: " + why})
			}
			lastWait = why
			select {
			case <-ctx.Done():
			case <-time.After(o.Poll):
			}
			continue
		}
		lastWait = ""
		step := explain.MigrationStep(a, o.Namespace, o.Name)
		err = o.write(ctx, a)
		switch {
		case isConflict(err):
			// Someone wrote in between (the controller's status, the garbage collector): read
			// again and decide again.
			if conflicts++; conflicts > 50 {
				return o.stopped(res, fmt.Errorf("%s: conflicts kept coming: %w", step.Message, err))
			}
			continue
		case err != nil:
			step.Result, step.Message = apiv1.ResultFailed, step.Message+": "+err.Error()
			res.Steps = append(res.Steps, step)
			return o.stopped(res, err)
		}
		conflicts = 0
		step.Result = apiv1.ResultDone
		res.Steps = append(res.Steps, step)
		if o.Progress != nil {
			o.Progress(step)
		}
		switch a.Kind {
		case migration.RemoveCopy:
			copyRemoved = true
		case migration.GrowClaim:
			grown = append(grown, a.Claim.Name)
			o.claimGrown(res, a.Claim.Name)
		}
	}
}

// stopped ends a run that failed to read or write: the migration is incomplete.
func (o *Options) stopped(res *apiv1.MigrationResult, err error) error {
	res.Result = apiv1.MigrationIncomplete
	res.Message = fmt.Sprintf("stopped: %v; the same command finishes the migration", err)
	return err
}

func stepOf(phase apiv1.MigrationPhase) apiv1.MigrationStepName {
	switch phase {
	case apiv1.PhaseNotStarted, apiv1.PhaseSaved:
		return apiv1.MigrationSaveCopy
	case apiv1.PhaseDeleting:
		return apiv1.MigrationDeleteOrphan
	case apiv1.PhaseDeleted:
		return apiv1.MigrationCreate
	case apiv1.PhaseCreated:
		return apiv1.MigrationProve
	}
	return apiv1.MigrationApplySpec
}

// isConflict: a precondition (UID, resourceVersion) failed, or the object exists already (an
// earlier run's write): decide again on a fresh read.
func isConflict(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// write makes the step's one write, with its preconditions.
func (o *Options) write(ctx context.Context, a migration.Action) error {
	kube := o.kube()
	switch a.Kind {
	case migration.GrowClaim:
		patch, err := jsonpatch.Patch{jsonpatch.Test("/metadata/uid", a.Claim.UID), jsonpatch.Test("/metadata/resourceVersion", a.Claim.ResourceVersion),
			jsonpatch.Replace("/spec/resources/requests/storage", a.To.String())}.Marshal()
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().PersistentVolumeClaims(o.Namespace).Patch(ctx, a.Claim.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if apierrors.IsInvalid(err) && isTestFailure(err) {
			return apierrors.NewConflict(corev1.Resource("persistentvolumeclaims"), a.Claim.Name, err)
		}
		return err
	case migration.SaveCopy:
		cm, err := a.Saved.ConfigMap()
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	case migration.RefreshRecord, migration.MarkProven:
		cm, err := a.Saved.ConfigMap()
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().ConfigMaps(o.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	case migration.DeleteOrphan:
		return kube.AppsV1().StatefulSets(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
			Preconditions:     &metav1.Preconditions{UID: ptr.To(a.Object.UID), ResourceVersion: ptr.To(a.Object.ResourceVersion)}})
	case migration.Create:
		_, err := kube.AppsV1().StatefulSets(o.Namespace).Create(ctx, a.Object, metav1.CreateOptions{})
		return err
	case migration.ApplySpec:
		_, err := kube.AppsV1().StatefulSets(o.Namespace).Update(ctx, a.Object, metav1.UpdateOptions{})
		return err
	case migration.RemoveCopy:
		err := kube.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, apiv1.SavedCopyName(o.Name), metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: ptr.To(a.Saved.UID), ResourceVersion: ptr.To(a.Saved.ResourceVersion)}})
		if apierrors.IsNotFound(err) {
			return apierrors.NewConflict(corev1.Resource("configmaps"), apiv1.SavedCopyName(o.Name), err)
		}
		return err
	}
	return fmt.Errorf("no write for %s", a.Kind)
}

// isTestFailure: a JSON patch's test operation failed (the API server answers 422 with the
// patch library's message: k8s.io/apiserver pkg/endpoints/handlers/patch.go:423-426@v0.37.2).
func isTestFailure(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && (strings.Contains(status.Status().Message, "test failed") || strings.Contains(status.Status().Message, "testing value"))
}

// claimGrown marks a claim's growth done in the result.
func (o *Options) claimGrown(res *apiv1.MigrationResult, name string) {
	for i := range res.Claims {
		if res.Claims[i].Name == name {
			res.Claims[i].Result = apiv1.ResultDone
		}
	}
}

// observeResize reads the grown claims for up to ResizeWait, until each reports a resize state
// or its capacity reached the request, and records what each says: the volume plugin resizes,
// migrate never waits for one that is not there.
func (o *Options) observeResize(ctx context.Context, res *apiv1.MigrationResult, grown []string) {
	deadline := time.Now().Add(o.ResizeWait)
	for {
		settled := true
		for _, name := range grown {
			claim, err := o.kube().CoreV1().PersistentVolumeClaims(o.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			status, capacity, reached := resizeStatus(claim)
			for i := range res.Claims {
				if res.Claims[i].Name == name {
					res.Claims[i].ResizeStatus, res.Claims[i].Capacity = status, capacity
					res.Claims[i].Message = resizeMessage(status, reached)
				}
			}
			settled = settled && (len(status) > 0 || reached)
		}
		if settled || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.Poll):
		}
	}
}

// resizeStatus is what a claim says of its resize: its resize conditions, and the allocated
// resource statuses (KEP-1790) by resource.
func resizeStatus(claim *corev1.PersistentVolumeClaim) ([]string, string, bool) {
	var out []string
	for _, c := range claim.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			s := string(c.Type)
			if c.Message != "" {
				s += ": " + c.Message
			}
			out = append(out, s)
		}
	}
	for r, s := range claim.Status.AllocatedResourceStatuses {
		out = append(out, string(r)+": "+string(s))
	}
	slices.Sort(out)
	capacity := claim.Status.Capacity[corev1.ResourceStorage]
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	return out, capacity.String(), capacity.Cmp(request) >= 0
}

func resizeMessage(status []string, reached bool) string {
	switch {
	case reached:
		return "capacity reached the request"
	case len(status) > 0:
		return "resizing, as the volume plugin reports"
	}
	return "no resize reported yet: the volume plugin resizes it when it supports expansion; nothing waits for it"
}

// deletionLog collects the pod deletions a watch sees.
type deletionLog struct {
	mu      sync.Mutex
	deleted []migration.Deletion
}

func (d *deletionLog) add(pod *corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var owner types.UID
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		owner = ref.UID
	}
	d.deleted = append(d.deleted, migration.Deletion{Pod: pod.Name, UID: pod.UID, Owner: owner})
}

func (d *deletionLog) list() []migration.Deletion {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deleted)
}

// watchDeletions watches the namespace's pods of the StatefulSet's names from now on and
// records each deletion with its controller then, for the proof.
func (o *Options) watchDeletions(ctx context.Context) (*deletionLog, func(), error) {
	pods := o.kube().CoreV1().Pods(o.Namespace)
	l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods in %s: %w", o.Namespace, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, opts)
		}})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	log := &deletionLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if pod, ok := e.Object.(*corev1.Pod); ok && e.Type == watch.Deleted {
				if _, ok := controller.ParseOrdinal(o.Name, pod.Name); ok {
					log.add(pod)
				}
			}
		}
	}()
	return log, func() { w.Stop(); cancel(); <-done }, nil
}

// Status says where a migration of the StatefulSet stands: InProgress (exit 1) with the phase
// and what it waits for, or None.
func Status(ctx context.Context, o Options) (*apiv1.MigrationResult, error) {
	o.defaults()
	res := apiv1.NewMigrationResult(o.Namespace, o.Name)
	obs, err := o.observe(ctx, nil)
	if err != nil {
		return nil, err
	}
	res.Phase = migration.Phase(obs)
	if obs.Saved != nil {
		res.SavedCopy = o.Namespace + "/" + apiv1.SavedCopyName(o.Name)
		res.Changes = changesOf(obs.Saved)
	}
	switch res.Phase {
	case apiv1.PhaseNotStarted, apiv1.PhaseDone:
		res.Result, res.Message = apiv1.MigrationNone, fmt.Sprintf("no migration of statefulset %s/%s is under way", o.Namespace, o.Name)
		if obs.Set == nil {
			return nil, &gather.NotFoundError{What: fmt.Sprintf("statefulset %s/%s", o.Namespace, o.Name)}
		}
	case apiv1.PhaseOrphaned:
		res.Result = apiv1.MigrationInProgress
		res.Message = fmt.Sprintf("pods of statefulset %s/%s run without it and there is no saved copy: a migration by other means stopped half-way; recover by hand (docs/migrate.md)", o.Namespace, o.Name)
	default:
		res.Result = apiv1.MigrationInProgress
		a := migration.Next(nil, obs)
		res.Proof = a.Proof
		next := string(a.Kind)
		if a.Kind == migration.Wait || a.Kind == migration.Fail {
			next = explain.MigrationWhy(a.Why, o.Namespace, o.Name)
		}
		res.Message = fmt.Sprintf("a migration is under way, phase %s (saved copy %s); next: %s; run migrate %s -n %s to finish it",
			res.Phase, res.SavedCopy, next, o.Name, o.Namespace)
	}
	return res, nil
}
