package repair_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// outcomeCase drives the executor, against the fake API, into one outcome of one action.
type outcomeCase struct {
	name string
	// reason is the outcome the action ends in: its words are locked in
	// testdata/golden/actions/<reason>.txt.
	reason     string
	objects    func() []runtime.Object // objects() if nil
	actions    func() []model.Action
	pick       int // the action of the result the case is about
	dryRun     apiv1.DryRunMode
	disruption apiv1.DisruptionMode
	// fresh, if set, is every fresh diagnosis.
	fresh func() (*model.Report, *stuck.Objects)
	react func(*fake.Clientset)
	setup func(*repair.Executor)
}

func deleteOf(pods ...string) func() []model.Action {
	return func() []model.Action { return mustPlan(stuckReport(pods...)) }
}

func patchOnly() []model.Action {
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	return actions[:1]
}

func patchAndDelete() []model.Action {
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	return actions
}

func rollbackAndDelete() []model.Action {
	actions, _ := planWithRollbacks(failingReport("db-2"), rolloutSnap("db-good"))
	return actions
}

func forceDelete() []model.Action {
	a := mustPlan(stuckReport("web-1"))[0]
	a.Action.Action = apiv1.ForceDeletePod
	return []model.Action{a}
}

func rolloutObjs() []runtime.Object { return rolloutObjects("db-good") }

func answer(verb, resource string, err error) func(*fake.Clientset) {
	return func(kube *fake.Clientset) {
		kube.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			if resource == "pods" && verb == "create" && a.GetSubresource() != "eviction" {
				return false, nil, nil
			}
			return true, nil, err
		})
	}
}

func evicted() func(*fake.Clientset) { return answer("create", "pods", nil) }

func stillStuck(pod string) func() (*model.Report, *stuck.Objects) {
	return func() (*model.Report, *stuck.Objects) { return stuckReport(pod), snap() }
}

func nothingFound() (*model.Report, *stuck.Objects) { return model.NewReport(false, nil, nil), snap() }

// notObservedSetup: the controller never observes the patch (observedGeneration stays 2 of 3).
func notObservedSetup(e *repair.Executor) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	e.Clock, e.Deadline = clock, clock.Now().Add(3*time.Minute)
	e.Follow = func(ctx context.Context, ns, name string, done func(*appsv1.StatefulSet) bool) error {
		if done(objects()[0].(*appsv1.StatefulSet)) {
			return nil
		}
		return fmt.Errorf("%w of statefulset %s/%s", rollout.ErrTimeout, ns, name)
	}
}

func observedAtOnce(e *repair.Executor) {
	e.Deadline = time.Now().Add(time.Minute)
	e.Follow = func(context.Context, string, string, func(*appsv1.StatefulSet) bool) error { return nil }
}

// evictionCluster is objects() with web-0 in the given state and the namespace's budgets.
func evictionCluster(pod func(*corev1.Pod), budgets ...policyv1.PodDisruptionBudget) func() []runtime.Object {
	return func() []runtime.Object {
		var out []runtime.Object
		for _, o := range objects() {
			if p, ok := o.(*corev1.Pod); ok && p.Name == "web-0" {
				p.Labels = map[string]string{"app": "web"}
				pod(p)
			}
			out = append(out, o)
		}
		for i := range budgets {
			out = append(out, &budgets[i])
		}
		return out
	}
}

func webBudget(name string, policy *policyv1.UnhealthyPodEvictionPolicyType, allowed, current, desired int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(0)), UnhealthyPodEvictionPolicy: policy},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: current, DesiredHealthy: desired}}
}

func phase(p corev1.PodPhase, ready bool) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		pod.Status = corev1.PodStatus{Phase: p, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	}
}

func terminatingPod(pod *corev1.Pod) {
	phase(corev1.PodRunning, true)(pod)
	pod.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func forbidden(group, resource, name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, name, errors.New("User \"ci\" cannot do this"))
}

var (
	patchInvalid = apierrors.NewGenericServerResponse(422, "patch", schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web",
		"testing value /spec/template/spec/containers/0/image failed", 0, false)
	badRequest  = apierrors.NewBadRequest("the request is invalid: spec.template: Required value")
	unavailable = apierrors.NewServiceUnavailable("etcd cluster is unavailable")
)

func outcomeCases() []outcomeCase {
	always, ifHealthy := ptr.To(policyv1.AlwaysAllow), ptr.To(policyv1.IfHealthyBudget)
	unobserved := webBudget("web-pdb", nil, 1, 2, 1)
	unobserved.Generation = 2
	return []outcomeCase{
		// Done: each kind of change, sent and accepted.
		{name: "patch", reason: "Done", actions: patchOnly},
		{name: "rollback", reason: "Done", objects: rolloutObjs, actions: rollbackAndDelete,
			fresh: func() (*model.Report, *stuck.Objects) { return afterRollback(), rolledBackSnap() }},
		{name: "rollback's delete", reason: "Done", objects: rolloutObjs, actions: rollbackAndDelete, pick: 1,
			fresh: func() (*model.Report, *stuck.Objects) { return afterRollback(), rolledBackSnap() }},
		{name: "delete", reason: "Done", actions: deleteOf("web-0"), fresh: stillStuck("web-0")},
		{name: "evict", reason: "Done", actions: deleteOf("web-0"), disruption: apiv1.DisruptionEvict, react: evicted(), fresh: stillStuck("web-0")},
		{name: "force delete", reason: "Done", actions: forceDelete},

		// DryRun: a client dry run sends nothing; an eviction says what the API server would answer.
		{name: "patch", reason: "DryRun", dryRun: apiv1.DryRunClient, actions: patchOnly},
		{name: "rollback", reason: "DryRun", dryRun: apiv1.DryRunClient, objects: rolloutObjs, actions: rollbackAndDelete},
		{name: "delete", reason: "DryRun", dryRun: apiv1.DryRunClient, actions: deleteOf("web-0")},
		{name: "force delete", reason: "DryRun", dryRun: apiv1.DryRunClient, actions: forceDelete},
		{name: "evict, the pod unreadable", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			react: answer("get", "pods", forbidden("", "pods", "web-0"))},
		{name: "evict, the budgets unreadable", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			react: answer("list", "poddisruptionbudgets", forbidden("policy", "poddisruptionbudgets", ""))},
		{name: "evict a Pending pod", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodPending, false), webBudget("web-pdb", nil, 0, 2, 3))},
		{name: "evict a terminating pod", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(terminatingPod, webBudget("web-pdb", nil, 0, 2, 3))},
		{name: "evict, no budget", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, false))},
		{name: "evict, two budgets", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, false), webBudget("web-pdb", nil, 1, 3, 2), webBudget("other", nil, 1, 3, 2))},
		{name: "evict not Ready, AlwaysAllow", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, false), webBudget("web-pdb", always, 0, 2, 3))},
		{name: "evict not Ready, budget healthy", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, false), webBudget("web-pdb", nil, 1, 3, 2))},
		{name: "evict not Ready, budget exhausted", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, false), webBudget("web-pdb", ifHealthy, 0, 2, 3))},
		{name: "evict Ready, budget allows", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, true), webBudget("web-pdb", ifHealthy, 1, 3, 2))},
		{name: "evict Ready, budget negative", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, true), webBudget("web-pdb", nil, -1, 3, 3))},
		{name: "evict Ready, budget not observed", reason: "DryRun", dryRun: apiv1.DryRunClient, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			objects: evictionCluster(phase(corev1.PodRunning, true), unobserved)},

		// DryRunAfterPatch: a delete that waits for a patch, in a dry run.
		{name: "client", reason: "DryRunAfterPatch", dryRun: apiv1.DryRunClient, actions: patchAndDelete, pick: 1},
		{name: "server", reason: "DryRunAfterPatch", dryRun: apiv1.DryRunServer, actions: patchAndDelete, pick: 1},

		// ServerDryRunAccepted: sent with dryRun=All and accepted.
		{name: "patch", reason: "ServerDryRunAccepted", dryRun: apiv1.DryRunServer, actions: patchOnly},
		{name: "rollback", reason: "ServerDryRunAccepted", dryRun: apiv1.DryRunServer, objects: rolloutObjs, actions: rollbackAndDelete},
		{name: "delete", reason: "ServerDryRunAccepted", dryRun: apiv1.DryRunServer, actions: deleteOf("web-0"), fresh: stillStuck("web-0")},
		{name: "evict", reason: "ServerDryRunAccepted", dryRun: apiv1.DryRunServer, disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"),
			react: evicted(), fresh: stillStuck("web-0")},
		{name: "force delete", reason: "ServerDryRunAccepted", dryRun: apiv1.DryRunServer, actions: forceDelete},

		// NotProven: the fresh diagnosis right before the removal no longer proves the pod stuck.
		{name: "delete", reason: "NotProven", actions: deleteOf("web-0"), fresh: nothingFound},
		{name: "evict", reason: "NotProven", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: nothingFound},
		{name: "force delete", reason: "NotProven", actions: forceDelete, fresh: nothingFound},

		// NotNeeded: a patch's test failed and a fresh diagnosis no longer calls for it.
		{name: "patch", reason: "NotNeeded", actions: patchOnly, react: answer("patch", "statefulsets", patchInvalid), fresh: nothingFound},
		{name: "rollback", reason: "NotNeeded", objects: rolloutObjs, actions: rollbackAndDelete, react: answer("patch", "statefulsets", patchInvalid),
			fresh: func() (*model.Report, *stuck.Objects) { return afterRollback(), rolledBackSnap() }},

		// ChangedAgain: the retried patch's test failed too (or nothing could prove it again).
		{name: "patch", reason: "ChangedAgain", actions: patchOnly, react: answer("patch", "statefulsets", patchInvalid),
			fresh: func() (*model.Report, *stuck.Objects) { return unresolvedReport("myapp:2"), snap() }},
		{name: "patch, conflict, no fresh diagnosis", reason: "ChangedAgain", actions: patchOnly,
			react: answer("patch", "statefulsets", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web", errors.New("the object has been modified")))},
		{name: "rollback", reason: "ChangedAgain", objects: rolloutObjs, actions: rollbackAndDelete, react: answer("patch", "statefulsets", patchInvalid),
			fresh: func() (*model.Report, *stuck.Objects) { return failingReport("db-2"), rolloutSnap("db-good") }},

		// Gone: the object no longer exists.
		{name: "patch", reason: "Gone", actions: patchOnly, react: answer("patch", "statefulsets", apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web"))},
		{name: "rollback", reason: "Gone", objects: rolloutObjs, actions: rollbackAndDelete,
			react: answer("patch", "statefulsets", apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db"))},
		{name: "delete", reason: "Gone", actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("delete", "pods", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0"))},
		{name: "evict", reason: "Gone", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0"))},

		// Replaced: the UID precondition failed, and proving again did not change that.
		{name: "delete", reason: "Replaced", actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("delete", "pods", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: UID in precondition: uid-web-0, UID in object meta: new")))},
		{name: "evict", reason: "Replaced", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: UID in precondition: uid-web-0, UID in object meta: new")))},

		// Forbidden: RBAC refused the request; the message names the verb and resource needed.
		{name: "patch", reason: "Forbidden", actions: patchOnly, react: answer("patch", "statefulsets", forbidden("apps", "statefulsets", "web"))},
		{name: "rollback", reason: "Forbidden", objects: rolloutObjs, actions: rollbackAndDelete, react: answer("patch", "statefulsets", forbidden("apps", "statefulsets", "db"))},
		{name: "delete", reason: "Forbidden", actions: deleteOf("web-0"), fresh: stillStuck("web-0"), react: answer("delete", "pods", forbidden("", "pods", "web-0"))},
		{name: "evict", reason: "Forbidden", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", forbidden("", "pods/eviction", "web-0"))},
		{name: "force delete", reason: "Forbidden", actions: forceDelete, react: answer("delete", "pods", forbidden("", "pods", "web-1"))},

		// RefusedByBudget: the Eviction API refused (429 or 403 with a DisruptionBudget cause).
		{name: "429 needs healthy", reason: "RefusedByBudget", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", budget429())},
		{name: "429 still being processed", reason: "RefusedByBudget", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", func() error {
				err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
				err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget db-pdb is still being processed by the server."})
				return err
			}())},
		{name: "403 negative", reason: "RefusedByBudget", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", func() error {
				err := apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, "db-pdb", errors.New("pdb disruptions allowed is negative"))
				err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
					Message: "The disruption budget db-pdb does not allow evicting pods currently: pdb disruptions allowed is negative"})
				return err
			}())},

		// MultipleBudgets: more than one budget selects the pod (500).
		{name: "evict", reason: "MultipleBudgets", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"),
			react: answer("create", "pods", apierrors.NewGenericServerResponse(http.StatusInternalServerError, "create", schema.GroupResource{Resource: "pods"}, "web-0",
				"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", 0, true))},

		// NotPatched: a delete that waited for a patch that was not made.
		{name: "patch forbidden", reason: "NotPatched", actions: patchAndDelete, pick: 1, react: answer("patch", "statefulsets", forbidden("apps", "statefulsets", "web"))},

		// NotObserved: the controller did not observe the patch within the budget.
		{name: "patch", reason: "NotObserved", actions: patchAndDelete, pick: 1, react: patchedTo(3),
			fresh: func() (*model.Report, *stuck.Objects) { return stuckReport("web-0"), snapObserved(2) }, setup: notObservedSetup},

		// NotStuckAfterPatch: once the patch was observed the pod is not stuck on an old revision.
		{name: "patch", reason: "NotStuckAfterPatch", actions: patchAndDelete, pick: 1, react: patchedTo(3),
			fresh: func() (*model.Report, *stuck.Objects) { return model.NewReport(true, nil, nil), snapObserved(3) }, setup: observedAtOnce},

		// Failed: any other answer of the API server, or none.
		{name: "patch, 400", reason: "Failed", actions: patchOnly, react: answer("patch", "statefulsets", badRequest)},
		{name: "patch, unavailable", reason: "Failed", actions: patchOnly, react: answer("patch", "statefulsets", unavailable)},
		{name: "delete, 400", reason: "Failed", actions: deleteOf("web-0"), fresh: stillStuck("web-0"), react: answer("delete", "pods", badRequest)},
		{name: "delete, unavailable", reason: "Failed", actions: deleteOf("web-0"), fresh: stillStuck("web-0"), react: answer("delete", "pods", unavailable)},
		{name: "evict, 400", reason: "Failed", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"), react: answer("create", "pods", badRequest)},
		{name: "evict, unavailable", reason: "Failed", disruption: apiv1.DisruptionEvict, actions: deleteOf("web-0"), fresh: stillStuck("web-0"), react: answer("create", "pods", unavailable)},
	}
}

// patchedTo makes the fake API server answer a patch with the StatefulSet at the generation.
func patchedTo(generation int64) func(*fake.Clientset) {
	return func(kube *fake.Clientset) {
		kube.PrependReactor("patch", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
			set := objects()[0].(*appsv1.StatefulSet).DeepCopy()
			set.Generation = generation
			return true, set, nil
		})
	}
}

// TestOutcomeWording drives the executor into every outcome of every kind of action and locks
// what each says: testdata/golden/actions/<reason>.txt holds, per outcome reason, the result,
// the message and the progress line of every case that ends in it. The public JSON's result and
// message are these. Run with -update to accept a change of wording.
func TestOutcomeWording(t *testing.T) {
	byReason := map[string][]string{}
	for _, c := range outcomeCases() {
		t.Run(c.reason+"/"+c.name, func(t *testing.T) {
			a := runOutcome(t, c)
			if a.Outcome.Reason != model.OutcomeReason(c.reason) {
				t.Errorf("outcome %q, want %q", a.Outcome.Reason, c.reason)
			}
			byReason[c.reason] = append(byReason[c.reason], actionWords(c.name, a, c.dryRun))
		})
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		t.Run(reason, func(t *testing.T) {
			text := fmt.Sprintf("# %s: every action outcome of this reason the executor's tests reach, as worded.\n\n%s", reason, strings.Join(byReason[reason], "\n"))
			snapshottest.Golden(t, filepath.Join("actions", reason+".txt"), []byte(text), *update)
		})
	}
}

func runOutcome(t *testing.T, c outcomeCase) model.Action {
	t.Helper()
	return runOutcomeWith(t, c, nil)
}

// runOutcomeWith runs the case; watch, if set, is given the client and the executor before Apply.
func runOutcomeWith(t *testing.T, c outcomeCase, watch func(*fake.Clientset, *repair.Executor)) model.Action {
	t.Helper()
	objs := objects
	if c.objects != nil {
		objs = c.objects
	}
	kube := fake.NewClientset(objs()...)
	if c.react != nil {
		c.react(kube)
	}
	dryRun := c.dryRun
	if dryRun == "" {
		dryRun = apiv1.DryRunNone
	}
	exec := &repair.Executor{Kube: kube, DryRun: dryRun, Disruption: c.disruption}
	if c.fresh != nil {
		exec.Prove = func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
			rep, s := c.fresh()
			return rep, s, nil
		}
	}
	if c.setup != nil {
		c.setup(exec)
	}
	if watch != nil {
		watch(kube, exec)
	}
	done, err := exec.Apply(context.Background(), c.actions())
	var unavailableErr *repair.UnavailableError
	if err != nil && !errors.As(err, &unavailableErr) {
		t.Fatalf("apply: %v", err)
	}
	if c.pick >= len(done) {
		t.Fatalf("action %d of %d: %+v", c.pick, len(done), done)
	}
	return done[c.pick]
}

// actionWords is one case of a golden file.
func actionWords(name string, a model.Action, dryRun apiv1.DryRunMode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s: %s %s/%s", name, a.Kind(), a.Namespace, a.StatefulSet)
	if a.Pod != "" {
		fmt.Fprintf(&b, " pod %s", a.Pod)
	}
	if a.Disruption != "" {
		fmt.Fprintf(&b, " disruption %s", a.Disruption)
	}
	if dryRun != "" {
		fmt.Fprintf(&b, " dry run %s", dryRun)
	}
	fmt.Fprintf(&b, "\nresult: %s\nmessage: %s\nline: %s\n", a.Result, a.Message, explain.ActionLine(a))
	return b.String()
}
