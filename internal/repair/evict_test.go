package repair_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/repair"
)

// budget429 is what EvictionREST answers when the budget allows no disruption
// (checkAndDecrement, k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go:446-468@v1.37.2).
func budget429() error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: "The disruption budget db-pdb needs 3 healthy pods and has 2 currently"})
	return err
}

// evictions returns the evictions sent (create pods/eviction).
func evictions(kube *fake.Clientset) []*policyv1.Eviction {
	var out []*policyv1.Eviction
	for _, a := range kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "eviction" {
			out = append(out, c.GetObject().(*policyv1.Eviction))
		}
	}
	return out
}

func TestEvictAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		answer      error
		wantResult  apiv1.ActionResult
		wantMessage string
		wantBudget  *apiv1.DisruptionBudget
		unavailable bool
	}{
		"201 evicted": {answer: nil, wantResult: apiv1.ResultDone, wantMessage: "pod evicted (Eviction API"},
		"429 budget": {answer: budget429(), wantResult: apiv1.ResultSkipped,
			wantMessage: "eviction refused by PodDisruptionBudget db-pdb (429 toomanyrequests): The disruption budget db-pdb needs 3 healthy pods and has 2 currently; nothing deleted",
			wantBudget:  &apiv1.DisruptionBudget{Name: "db-pdb", DesiredHealthy: ptr.To[int32](3), CurrentHealthy: ptr.To[int32](2), Message: "The disruption budget db-pdb needs 3 healthy pods and has 2 currently"}},
		"429 not yet processed": {answer: func() error {
			err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget db-pdb is still being processed by the server."})
			return err
		}(), wantResult: apiv1.ResultSkipped, wantMessage: "PodDisruptionBudget db-pdb (429 toomanyrequests)",
			wantBudget: &apiv1.DisruptionBudget{Name: "db-pdb", Message: "The disruption budget db-pdb is still being processed by the server."}},
		"403 budget negative": {answer: func() error {
			err := apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, "db-pdb", errors.New("pdb disruptions allowed is negative"))
			err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
				Message: "The disruption budget db-pdb does not allow evicting pods currently: pdb disruptions allowed is negative"})
			return err
		}(), wantResult: apiv1.ResultSkipped, wantMessage: "PodDisruptionBudget db-pdb (403 forbidden)",
			wantBudget: &apiv1.DisruptionBudget{Name: "db-pdb", Message: "The disruption budget db-pdb does not allow evicting pods currently: pdb disruptions allowed is negative"}},
		"403 RBAC": {answer: apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "web-0", errors.New("no")),
			wantResult: apiv1.ResultFailed, wantMessage: "forbidden: needs create pods/eviction in namespace shop"},
		"404 gone":             {answer: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0"), wantResult: apiv1.ResultSkipped, wantMessage: "the pod is already gone; nothing evicted"},
		"409 UID precondition": {answer: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: UID in precondition: uid-web-0, UID in object meta: new")), wantResult: apiv1.ResultSkipped, wantMessage: "the pod was replaced since it was proven stuck; nothing evicted"},
		"500 two budgets": {answer: apierrors.NewGenericServerResponse(http.StatusInternalServerError, "create", schema.GroupResource{Resource: "pods"}, "web-0",
			"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", 0, true),
			wantResult: apiv1.ResultSkipped, wantMessage: "more than one PodDisruptionBudget selects the pod"},
		"503 unavailable": {answer: apierrors.NewServiceUnavailable("etcd down"), wantResult: apiv1.ResultFailed, unavailable: true},
	} {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(objects()...)
			kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				return true, nil, tc.answer
			})
			done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Disruption: apiv1.DisruptionEvict}).Apply(context.Background(), mustPlan(stuckReport("web-0")))
			var unavailable *repair.UnavailableError
			if errors.As(err, &unavailable) != tc.unavailable || (err != nil && !tc.unavailable) {
				t.Fatalf("err %v, want unavailable %v", err, tc.unavailable)
			}
			if len(done) != 1 || done[0].Result != tc.wantResult || !strings.Contains(done[0].Message, tc.wantMessage) || done[0].Disruption != apiv1.DisruptionEvict {
				t.Fatalf("got %+v, want %s containing %q", done, tc.wantResult, tc.wantMessage)
			}
			if got := done[0].DisruptionBudget; (got == nil) != (tc.wantBudget == nil) || (got != nil && (got.Name != tc.wantBudget.Name || got.Message != tc.wantBudget.Message ||
				ptr.Deref(got.DesiredHealthy, -1) != ptr.Deref(tc.wantBudget.DesiredHealthy, -1) || ptr.Deref(got.CurrentHealthy, -1) != ptr.Deref(tc.wantBudget.CurrentHealthy, -1))) {
				t.Errorf("budget %+v, want %+v", got, tc.wantBudget)
			}
			sent := evictions(kube)
			if len(sent) != 1 || sent[0].Name != "web-0" || sent[0].DeleteOptions == nil || sent[0].DeleteOptions.Preconditions == nil ||
				string(*sent[0].DeleteOptions.Preconditions.UID) != "uid-web-0" || sent[0].DeleteOptions.Preconditions.ResourceVersion != nil {
				t.Errorf("want one eviction of web-0 with a UID-only precondition, got %+v", sent)
			}
			// Never a delete behind the budget's back.
			if d := deleted(kube); len(d) != 0 {
				t.Errorf("evict mode sent %d deletes", len(d))
			}
		})
	}
}

// TestForceDeleteStaysADelete: --force-lost-node's force delete is a delete even with
// --disruption=evict (an eviction cannot help a pod on a lost node).
func TestForceDeleteStaysADelete(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Disruption: apiv1.DisruptionEvict}
	a := mustPlan(stuckReport("web-0"))[0]
	a.Action.Action = apiv1.ForceDeletePod
	done, err := exec.Apply(context.Background(), []model.Action{a})
	if err != nil || len(done) != 1 || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	if len(evictions(kube)) != 0 || len(deleted(kube)) != 1 || *deleted(kube)[0].GetDeleteOptions().GracePeriodSeconds != 0 {
		t.Errorf("want one delete with grace period 0 and no eviction: %v", kube.Actions())
	}
}

// TestEvictable ports EvictionREST.Create's cases (k8s.io/kubernetes
// pkg/registry/core/pod/storage/eviction.go@v1.37.2): which pods the API server evicts.
func TestEvictable(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	pod := func(phase corev1.PodPhase, conds []corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-2", Namespace: "shop", Labels: map[string]string{"app": "db"}},
			Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
	}
	pdb := func(policy *policyv1.UnhealthyPodEvictionPolicyType, allowed, current, desired int32) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db-pdb", Namespace: "shop", Generation: 1},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), UnhealthyPodEvictionPolicy: policy},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: current, DesiredHealthy: desired}}
	}
	always, ifHealthy := ptr.To(policyv1.AlwaysAllow), ptr.To(policyv1.IfHealthyBudget)
	terminating := pod(corev1.PodRunning, ready)
	terminating.DeletionTimestamp = &metav1.Time{}
	unobserved := pdb(nil, 1, 3, 2)
	unobserved.Generation = 2
	other := pdb(nil, 1, 3, 2)
	other.Name = "other"
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		budgets []policyv1.PodDisruptionBudget
		want    bool
		why     string
	}{
		// canIgnorePDB (:392)
		{"Pending pod (ImagePullBackOff) ignores the budget", pod(corev1.PodPending, nil), []policyv1.PodDisruptionBudget{pdb(nil, 0, 2, 3)}, true, "a Pending pod is deleted without consulting"},
		{"Failed pod ignores the budget", pod(corev1.PodFailed, nil), []policyv1.PodDisruptionBudget{pdb(nil, 0, 2, 3)}, true, "a Failed pod"},
		{"terminating pod ignores the budget", terminating, []policyv1.PodDisruptionBudget{pdb(nil, 0, 2, 3)}, true, "a terminating pod"},
		// getPodDisruptionBudgets (:498), :224, :232
		{"no budget", pod(corev1.PodRunning, notReady), nil, true, "no PodDisruptionBudget selects the pod"},
		{"two budgets: 500", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(nil, 1, 3, 2), other}, false, "more than one PodDisruptionBudget"},
		// :241-:251 not Ready
		{"not Ready, AlwaysAllow, budget unhealthy", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(always, 0, 2, 3)}, true, "unhealthyPodEvictionPolicy AlwaysAllow"},
		{"not Ready, IfHealthyBudget, budget healthy", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(ifHealthy, 0, 2, 2)}, true, "is healthy (2 healthy, 2 needed)"},
		{"not Ready, default policy, budget healthy", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(nil, 1, 3, 2)}, true, "is healthy (3 healthy, 2 needed)"},
		{"not Ready, IfHealthyBudget, budget unhealthy (67250 under maxUnavailable 0)", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(ifHealthy, 0, 2, 3)}, false, "db-pdb needs 3 healthy pods and has 2 currently (429)"},
		{"not Ready, default policy, desiredHealthy 0", pod(corev1.PodRunning, notReady), []policyv1.PodDisruptionBudget{pdb(nil, 0, 0, 0)}, false, "needs 0 healthy pods and has 0 currently (429)"},
		// checkAndDecrement (:425) for a Ready pod
		{"Ready, budget allows one", pod(corev1.PodRunning, ready), []policyv1.PodDisruptionBudget{pdb(ifHealthy, 1, 3, 2)}, true, "allows 1 disruption(s)"},
		{"Ready, budget allows none", pod(corev1.PodRunning, ready), []policyv1.PodDisruptionBudget{pdb(always, 0, 3, 3)}, false, "needs 3 healthy pods and has 3 currently (429)"},
		{"Ready, budget negative: 403", pod(corev1.PodRunning, ready), []policyv1.PodDisruptionBudget{pdb(nil, -1, 3, 3)}, false, "negative number of disruptions (403)"},
		{"Ready, budget not observed: 429", pod(corev1.PodRunning, ready), []policyv1.PodDisruptionBudget{unobserved}, false, "still being processed by the server (429)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := repair.Evictable(tc.pod, tc.budgets)
			got, why := p.Allowed, explain.Eviction(p)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("Evictable = %v, %q; want %v, containing %q", got, why, tc.want, tc.why)
			}
		})
	}
}
