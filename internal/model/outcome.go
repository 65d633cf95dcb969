package model

import apiv1 "github.com/stsdiag/stsdiag/api/v1"

// OutcomeReason is what became of an applied action, as a fact: the executor decides it,
// explain words it (explain.Outcome), and it decides the action's Result.
type OutcomeReason string

// Outcome reasons. Each has a golden file of its words in testdata/golden/actions/.
const (
	// OutcomeDone: the change was sent and made.
	OutcomeDone OutcomeReason = "Done"
	// OutcomeDryRun: a client dry run, nothing sent (an eviction says what the API server would
	// answer: Outcome.Eviction).
	OutcomeDryRun OutcomeReason = "DryRun"
	// OutcomeDryRunAfterPatch: a delete that waits for a patch, in a dry run (client or server).
	OutcomeDryRunAfterPatch OutcomeReason = "DryRunAfterPatch"
	// OutcomeServerDryRunAccepted: sent with dryRun=All, and the API server accepted it.
	OutcomeServerDryRunAccepted OutcomeReason = "ServerDryRunAccepted"
	// OutcomeNotProven: the fresh diagnosis right before the removal no longer proves the pod
	// stuck; nothing was sent.
	OutcomeNotProven OutcomeReason = "NotProven"
	// OutcomeNotNeeded: a patch's tests refused it, and a fresh diagnosis no longer calls for it.
	OutcomeNotNeeded OutcomeReason = "NotNeeded"
	// OutcomeChangedAgain: a patch's tests refused it again after a fresh diagnosis (or nothing
	// could diagnose afresh).
	OutcomeChangedAgain OutcomeReason = "ChangedAgain"
	// OutcomeGone: the StatefulSet or the pod no longer exists (404).
	OutcomeGone OutcomeReason = "Gone"
	// OutcomeReplaced: the pod's UID precondition failed (409): another pod of that name.
	OutcomeReplaced OutcomeReason = "Replaced"
	// OutcomeForbidden: RBAC refused the request (Verb, Resource, Err).
	OutcomeForbidden OutcomeReason = "Forbidden"
	// OutcomeRefusedByBudget: the Eviction API refused with a DisruptionBudget cause (429 or
	// 403: Code, StatusReason; the budget is the action's DisruptionBudget).
	OutcomeRefusedByBudget OutcomeReason = "RefusedByBudget"
	// OutcomeMultipleBudgets: more than one PodDisruptionBudget selects the pod (500).
	OutcomeMultipleBudgets OutcomeReason = "MultipleBudgets"
	// OutcomeNotPatched: a delete that waited for a patch of its StatefulSet that was not made.
	OutcomeNotPatched OutcomeReason = "NotPatched"
	// OutcomeNotObserved: the StatefulSet controller did not observe the patch within the budget
	// (ObservedGeneration, PatchedGeneration).
	OutcomeNotObserved OutcomeReason = "NotObserved"
	// OutcomeNotStuckAfterPatch: once the patch was observed, the pod is not stuck on an old
	// revision.
	OutcomeNotStuckAfterPatch OutcomeReason = "NotStuckAfterPatch"
	// OutcomeFailed: any other answer of the API server, or none (Err).
	OutcomeFailed OutcomeReason = "Failed"
	// OutcomeNotConfirmed: the plan could not be confirmed (no terminal); nothing was sent.
	OutcomeNotConfirmed OutcomeReason = "NotConfirmed"
)

// OutcomeReasons lists every reason.
var OutcomeReasons = []OutcomeReason{OutcomeDone, OutcomeDryRun, OutcomeDryRunAfterPatch, OutcomeServerDryRunAccepted,
	OutcomeNotProven, OutcomeNotNeeded, OutcomeChangedAgain, OutcomeGone, OutcomeReplaced, OutcomeForbidden,
	OutcomeRefusedByBudget, OutcomeMultipleBudgets, OutcomeNotPatched, OutcomeNotObserved, OutcomeNotStuckAfterPatch,
	OutcomeFailed, OutcomeNotConfirmed}

// Result is the printed result of an action with this outcome: done (made, or a dry run of it),
// failed (refused by RBAC, the API or a concurrent change) or skipped (nothing was to be sent).
func (r OutcomeReason) Result() apiv1.ActionResult {
	switch r {
	case OutcomeDone, OutcomeDryRun, OutcomeDryRunAfterPatch, OutcomeServerDryRunAccepted:
		return apiv1.ResultDone
	case OutcomeChangedAgain, OutcomeForbidden, OutcomeFailed:
		return apiv1.ResultFailed
	}
	return apiv1.ResultSkipped
}

// Outcome is what became of an applied action, with the facts its words name.
type Outcome struct {
	Reason OutcomeReason
	// Verb and Resource are what RBAC must allow (Forbidden): "delete" "pods", "create"
	// "pods/eviction", "patch" "statefulsets.apps".
	Verb, Resource string
	// Err is the first line of the API server's answer (Forbidden, Failed).
	Err string
	// Code and StatusReason are the HTTP status and the Status reason of an eviction refused by
	// a budget (RefusedByBudget): 429 TooManyRequests or 403 Forbidden.
	Code         int32
	StatusReason string
	// ObservedGeneration is the StatefulSet's status.observedGeneration last seen (-1: none) and
	// PatchedGeneration the generation the patch made (NotObserved).
	ObservedGeneration, PatchedGeneration int64
	// Eviction is what the API server would answer an eviction, predicted in a client dry run
	// (DryRun; nil when the pod could not be read or the action is no eviction).
	Eviction *EvictionPrediction
}

// Conclude sets the action's outcome and the result it means (explain.Outcome words it).
func (a *Action) Conclude(o Outcome) {
	a.Outcome = o
	a.Result = o.Reason.Result()
}

// EvictionRule is the rule of the Eviction API (EvictionREST.Create, k8s.io/kubernetes
// pkg/registry/core/pod/storage/eviction.go@v1.37.2) that decides an eviction.
type EvictionRule string

// Eviction rules, in the order EvictionREST.Create applies them.
const (
	// EvictionIgnoresBudget: a terminal, Pending or terminating pod is deleted without a budget
	// (canIgnorePDB, :392).
	EvictionIgnoresBudget EvictionRule = "IgnoresBudget"
	// EvictionMultipleBudgets: more than one budget selects the pod (500, :224).
	EvictionMultipleBudgets EvictionRule = "MultipleBudgets"
	// EvictionNoBudget: no budget selects the pod.
	EvictionNoBudget EvictionRule = "NoBudget"
	// EvictionUnhealthyAlwaysAllow: a pod not Ready under unhealthyPodEvictionPolicy AlwaysAllow
	// (:241).
	EvictionUnhealthyAlwaysAllow EvictionRule = "UnhealthyAlwaysAllow"
	// EvictionUnhealthyBudgetHealthy: a pod not Ready while its budget is healthy (:251).
	EvictionUnhealthyBudgetHealthy EvictionRule = "UnhealthyBudgetHealthy"
	// EvictionBudgetNotObserved: the budget's status is not yet observed (429, checkAndDecrement :425).
	EvictionBudgetNotObserved EvictionRule = "BudgetNotObserved"
	// EvictionBudgetNegative: the budget allows a negative number of disruptions (403).
	EvictionBudgetNegative EvictionRule = "BudgetNegative"
	// EvictionBudgetExhausted: the budget allows no disruption now (429).
	EvictionBudgetExhausted EvictionRule = "BudgetExhausted"
	// EvictionBudgetAllows: the budget allows a disruption.
	EvictionBudgetAllows EvictionRule = "BudgetAllows"
)

// EvictionPrediction is the Eviction API's answer to evicting a pod, predicted from the pod and
// its namespace's PodDisruptionBudgets.
type EvictionPrediction struct {
	// Unreadable is why the budgets could not be read: then there is no prediction.
	Unreadable string
	Allowed    bool
	Rule       EvictionRule
	// PodState is the pod's phase, or "terminating" (IgnoresBudget).
	PodState string
	// Budget is the budget that decides, with its status.
	Budget                                             string
	CurrentHealthy, DesiredHealthy, DisruptionsAllowed int32
}
