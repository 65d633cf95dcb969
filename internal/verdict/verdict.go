// Package verdict decides the verdicts of the commands that wait (wait, canary, fix --wait) once,
// from their final state: the loop's end, the repairs made, the budget, the fleet's members, a
// canary's last step. It says how verdicts rank, which ends a fleet's wait, and merges a fleet's.
// It is pure; package explain words what it decides.
package verdict

import (
	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// precedence orders wait's verdicts from worst to best when several clusters are waited for:
// one that could not be evaluated or whose StatefulSets do not exist, then a stuck rollout, a
// rollback, a patch its controller never observed, a timeout, an interruption.
var precedence = []apiv1.Verdict{apiv1.WaitUnevaluable, apiv1.WaitNotFound, apiv1.WaitStuck, apiv1.WaitRolledBack, apiv1.WaitNotObserved, apiv1.WaitTimedOut, apiv1.WaitInterrupted, apiv1.WaitComplete}

// Decisive reports whether a verdict ends the wait for every cluster (fail fast): a stuck
// rollout or a cluster that cannot be evaluated.
func Decisive(result apiv1.Verdict) bool {
	return result == apiv1.WaitUnevaluable || result == apiv1.WaitNotFound || result == apiv1.WaitStuck
}

// MergeFleet combines the verdicts of one wait per kubeconfig context into one: the worst verdict
// wins, StatefulSets, findings and actions carry their context, and the reason names each
// context that did not complete. Its message is explain's to write (explain.Word).
func MergeFleet(contexts []string, results []*model.WaitResult) *model.WaitResult {
	worst := len(precedence) - 1
	var fleet model.Fleet
	var rolled []apiv1.RolledBack
	var sets []apiv1.StatefulSetSummary
	var findings []stuck.Finding
	var actions []model.Action
	for i, res := range results {
		name := contexts[i]
		for rank, verdict := range precedence {
			if res.Result == verdict && rank < worst {
				worst = rank
			}
		}
		if res.Result != apiv1.WaitComplete {
			fleet.Members = append(fleet.Members, model.Member{Context: name, Result: res.Result, Message: res.Message})
		}
		for _, s := range res.StatefulSets {
			s.Context = name
			sets = append(sets, s)
		}
		for _, f := range res.Findings {
			f.Context = name
			findings = append(findings, f)
		}
		for _, a := range res.Actions {
			a.Context = name
			actions = append(actions, a)
		}
		for _, r := range res.RolledBack {
			r.Context = name
			rolled = append(rolled, r)
		}
	}
	fleet.Result = precedence[worst]
	merged := &model.WaitResult{Result: fleet.Result, Reason: fleet, RolledBack: rolled}
	merged.StatefulSets, merged.Findings, merged.Actions = sets, findings, actions
	model.SortFindings(merged.Findings)
	return merged
}
