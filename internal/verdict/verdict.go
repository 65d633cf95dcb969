// Package verdict decides the verdicts of the commands that wait (wait, canary, fix --wait) from
// their final state: how verdicts rank, which ends a fleet's wait, and the fleet's merge. It is
// pure.
package verdict

import (
	"fmt"
	"strings"

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
// wins, StatefulSets, findings and actions carry their context, and the message names each
// context that did not complete.
func MergeFleet(contexts []string, results []*model.WaitResult) *model.WaitResult {
	worst := len(precedence) - 1
	merged := model.NewWaitResult(apiv1.WaitComplete, "")
	var messages []string
	for i, res := range results {
		name := contexts[i]
		for rank, verdict := range precedence {
			if res.Result == verdict && rank < worst {
				worst = rank
			}
		}
		if res.Result != apiv1.WaitComplete {
			messages = append(messages, fmt.Sprintf("%s: %s: %s", name, res.Result, res.Message))
		}
		for _, s := range res.StatefulSets {
			s.Context = name
			merged.StatefulSets = append(merged.StatefulSets, s)
		}
		for _, f := range res.Findings {
			f.Context = name
			merged.Findings = append(merged.Findings, f)
		}
		for _, a := range res.Actions {
			a.Context = name
			merged.Actions = append(merged.Actions, a)
		}
		merged.RolledBack = append(merged.RolledBack, res.RolledBack...)
	}
	merged.Result = precedence[worst]
	merged.Message = "every rollout complete"
	if len(messages) > 0 {
		merged.Message = strings.Join(messages, "; ")
	}
	stuck.SortFindings(merged.Findings)
	return merged
}
