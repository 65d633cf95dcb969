package repair

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/text"
)

// The API server's answers to an eviction are those of EvictionREST.Create in
// k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go@v1.37.2:
//   - 201 (Status Success): the pod was deleted — at once for a Pending, Succeeded or Failed pod or
//     one already terminating (canIgnorePDB, :392), else once its budget allowed it;
//   - 429 TooManyRequests with a DisruptionBudget cause: the budget allows no disruption now
//     (checkAndDecrement, :446, "The disruption budget NAME needs D healthy pods and has C
//     currently" and variants), or its status is not yet observed by the disruption controller
//     (createTooManyRequestsError, :414, Retry-After 10 s);
//   - 403 Forbidden with a DisruptionBudget cause: disruptionsAllowed negative or too many
//     evictions not yet confirmed (:430, :438) — not an RBAC refusal;
//   - 500 "This pod has more than one PodDisruptionBudget, which the eviction subresource does
//     not support." (:224);
//   - 404 the pod is gone; 409 the UID precondition failed (another pod of that name).

// evictPod evicts the pod through the Eviction API with the UID precondition of a delete: the
// API server deletes exactly the pod proven stuck, and only where its PodDisruptionBudget allows
// it. A refusal is a skipped action naming the budget: never a delete behind its back.
func (e *Executor) evictPod(ctx context.Context, a *model.Action) (conflict bool, err error) {
	a.Disruption = apiv1.DisruptionEvict
	opts := &metav1.DeleteOptions{DryRun: e.dryRunOptions()}
	if a.UID != "" {
		uid := types.UID(a.UID)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = e.Kube.PolicyV1().Evictions(a.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: a.Pod, Namespace: a.Namespace},
		DeleteOptions: opts,
	})
	switch {
	case budgetRefusal(err) != nil:
		a.DisruptionBudget = budgetRefusal(err)
		conclude(a, model.Outcome{Reason: model.OutcomeRefusedByBudget, Code: statusCode(err), StatusReason: string(apierrors.ReasonForError(err))})
		return false, nil
	case statusCode(err) == 500 && strings.Contains(err.Error(), "more than one PodDisruptionBudget"):
		conclude(a, model.Outcome{Reason: model.OutcomeMultipleBudgets})
		return false, nil
	}
	// 201, 409 (the UID precondition), 404, an RBAC 403 and the rest are a delete's answers.
	return e.removed(a, err, "create", "pods/eviction")
}

// needsHealthy parses checkAndDecrement's "needs %d healthy pods and has %d currently"
// (eviction.go:455@v1.37.2).
var needsHealthy = regexp.MustCompile(`^The disruption budget (\S+) needs (\d+) healthy pods and has (\d+) currently`)

// budgetName parses the budget's name from the other DisruptionBudget causes ("The disruption
// budget NAME ...", eviction.go:420, :434, :442, :457, :459, :461@v1.37.2).
var budgetName = regexp.MustCompile(`^The disruption budget (\S+) `)

// budgetRefusal returns the PodDisruptionBudget named by a 429 or 403 with a DisruptionBudget
// cause, or nil for any other error.
func budgetRefusal(err error) *apiv1.DisruptionBudget {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || (!apierrors.IsTooManyRequests(err) && !apierrors.IsForbidden(err)) {
		return nil
	}
	details := status.Status().Details
	if details == nil {
		return nil
	}
	for _, cause := range details.Causes {
		if cause.Type != policyv1.DisruptionBudgetCause {
			continue
		}
		budget := &apiv1.DisruptionBudget{Message: cause.Message}
		if m := needsHealthy.FindStringSubmatch(cause.Message); m != nil {
			budget.Name = m[1]
			budget.DesiredHealthy, budget.CurrentHealthy = parseInt32(m[2]), parseInt32(m[3])
		} else if m := budgetName.FindStringSubmatch(cause.Message); m != nil {
			budget.Name = m[1]
		}
		return budget
	}
	return nil
}

func parseInt32(s string) *int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil
	}
	v := int32(n)
	return &v
}

func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// Evictable predicts the API server's answer to evicting pod, given the PodDisruptionBudgets of
// its namespace, as EvictionREST.Create decides (eviction.go@v1.37.2): allowed or not, and the
// rule and budget that decide (explain.Eviction words it). fix --dry-run=client
// --disruption=evict says it for each pod.
func Evictable(pod *corev1.Pod, budgets []policyv1.PodDisruptionBudget) model.EvictionPrediction {
	// canIgnorePDB (:392): terminal, Pending or terminating pods are deleted without a budget.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil {
		return model.EvictionPrediction{Allowed: true, Rule: model.EvictionIgnoresBudget, PodState: podState(pod)}
	}
	// getPodDisruptionBudgets (:498): the budgets of the namespace whose selector matches.
	var matching []policyv1.PodDisruptionBudget
	for _, b := range budgets {
		if b.Namespace != pod.Namespace {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matching = append(matching, b)
	}
	switch {
	case len(matching) > 1:
		return model.EvictionPrediction{Rule: model.EvictionMultipleBudgets}
	case len(matching) == 0:
		return model.EvictionPrediction{Allowed: true, Rule: model.EvictionNoBudget}
	}
	b := matching[0]
	decided := func(allowed bool, rule model.EvictionRule) model.EvictionPrediction {
		return model.EvictionPrediction{Allowed: allowed, Rule: rule, Budget: b.Name, CurrentHealthy: b.Status.CurrentHealthy,
			DesiredHealthy: b.Status.DesiredHealthy, DisruptionsAllowed: b.Status.DisruptionsAllowed}
	}
	if !podReady(pod) {
		// :241–:251: an unhealthy pod under AlwaysAllow, or under IfHealthyBudget (the default)
		// while the budget is healthy, is deleted without decrementing it.
		if b.Spec.UnhealthyPodEvictionPolicy != nil && *b.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			return decided(true, model.EvictionUnhealthyAlwaysAllow)
		}
		if b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0 {
			return decided(true, model.EvictionUnhealthyBudgetHealthy)
		}
	}
	// checkAndDecrement (:425).
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return decided(false, model.EvictionBudgetNotObserved)
	case b.Status.DisruptionsAllowed < 0:
		return decided(false, model.EvictionBudgetNegative)
	case b.Status.DisruptionsAllowed == 0:
		return decided(false, model.EvictionBudgetExhausted)
	}
	return decided(true, model.EvictionBudgetAllows)
}

func podState(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "terminating"
	}
	return string(pod.Status.Phase)
}

// podReady is podutil.IsPodReady: the Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// EvictionReads reads what a client dry run predicts an eviction from: the pod and the
// PodDisruptionBudgets of its namespace.
type EvictionReads interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Budgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error)
}

// ClientReads reads them with a GET of the pod and a LIST of the budgets.
func ClientReads(kube kubernetes.Interface) EvictionReads { return clientReads{kube} }

type clientReads struct{ kube kubernetes.Interface }

func (r clientReads) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return r.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (r clientReads) Budgets(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	list, err := r.kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// predictEviction says, in a client dry run, what an eviction would get (nil when the pod cannot
// be read; a prediction that says why when the budgets cannot be).
func (e *Executor) predictEviction(ctx context.Context, a model.Action) *model.EvictionPrediction {
	reads := e.Reads
	if reads == nil {
		reads = ClientReads(e.Kube)
	}
	pod, err := reads.Pod(ctx, a.Namespace, a.Pod)
	if err != nil {
		return nil
	}
	budgets, err := reads.Budgets(ctx, a.Namespace)
	if err != nil {
		return &model.EvictionPrediction{Unreadable: text.FirstLine(err)}
	}
	p := Evictable(pod, budgets)
	return &p
}
