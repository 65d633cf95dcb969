package model

import apiv1 "github.com/stsdiag/stsdiag/api/v1"

// CanaryResult is a canary's verdict: wait's result (verdict, findings, actions) and the steps.
type CanaryResult struct {
	WaitResult
	Namespace, StatefulSet string
	PartitionBefore        int32
	Steps                  []apiv1.CanaryStep
}

// Public is the CanaryResult document canary prints.
func (r *CanaryResult) Public() *apiv1.CanaryResult {
	w := r.WaitResult.Public()
	out := apiv1.NewCanaryResult(r.Result, r.Message)
	out.Elapsed, out.Namespace, out.StatefulSet, out.PartitionBefore = r.Elapsed, r.Namespace, r.StatefulSet, r.PartitionBefore
	out.Steps = append(out.Steps, r.Steps...)
	out.StatefulSets, out.Findings, out.Actions, out.RolledBack = w.StatefulSets, w.Findings, w.Actions, w.RolledBack
	return out
}
