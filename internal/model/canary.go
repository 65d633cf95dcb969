package model

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

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

// A canary's verdicts (verdict.DecideCanary decides each one's result, explain words it).

// CanaryComplete: every step passed, each held healthy for Hold.
type CanaryComplete struct{ Hold time.Duration }

// CanaryTimedOut: the deadline (After, --timeout) passed during Step.
type CanaryTimedOut struct {
	After time.Duration
	Step  string
}

// CanaryCut: the deadline or a signal (As: TimedOut or Interrupted) ended a patch or a read.
type CanaryCut struct {
	As  apiv1.Verdict
	Err error
}

// CanaryStepEnded: the wait of a step ended otherwise (Then: interrupted, the StatefulSet gone,
// someone else's change): its verdict is the canary's.
type CanaryStepEnded struct {
	Step string
	Then Verdict
}

// CanaryStopped: someone else changed the StatefulSet during a step, or during the rollback:
// the canary stops and leaves it as it is.
type CanaryStopped struct {
	Change         CanaryChange
	DuringRollback bool
}

// CanaryNotStarted: Step's guarded patch failed its test (Err), since Change.
type CanaryNotStarted struct {
	Step   string
	Change CanaryChange
	Err    error
}

// CanaryDeleted: the StatefulSet was deleted when a step failed.
type CanaryDeleted struct{ Namespace, Name string }

// FailedStep is a step whose blocking findings (among Findings) held for Hold, or, when
// Analysis is set, whose analysis failed (canary --analysis; Findings then hold none).
type FailedStep struct {
	Step     string
	Findings []stuck.Finding
	Hold     time.Duration
	Analysis *apiv1.AnalysisRun
}

// CanaryHalted: a step failed and --no-rollback stopped the canary, the partition left at
// Partition.
type CanaryHalted struct {
	FailedStep
	Partition int32
}

// CanaryUnrollable: a step failed and fix --rollback has no safe rollback (Why); the partition
// stays Partition.
type CanaryUnrollable struct {
	FailedStep
	Why       Unrollable
	Partition int32
}

// CanaryRollbackFailed: a step failed and the rollback, Action, was not made.
type CanaryRollbackFailed struct {
	FailedStep
	Action Action
}

// CanaryRolledBack: a step failed, the template was rolled back (Rolled) and the canary Pods are
// Ready on the earlier revision again; Restore says what became of the partition.
type CanaryRolledBack struct {
	FailedStep
	Rolled  apiv1.RolledBack
	Pods    []string
	Restore PartitionRestore
}

// CanaryRollbackUnfinished: a step failed and the template was rolled back (Rolled), but the
// wait for the canary pods on the earlier revision ended otherwise (Then).
type CanaryRollbackUnfinished struct {
	FailedStep
	Rolled apiv1.RolledBack
	Then   Verdict
}

// CanaryInconclusive: Step's analysis could not tell (Analysis: Inconclusive or Error); the
// canary paused with the partition at Partition, nothing rolled back and no step forward.
type CanaryInconclusive struct {
	Step      string
	Analysis  *apiv1.AnalysisRun
	Partition int32
}

func (CanaryInconclusive) Verdict() apiv1.Verdict         { return apiv1.CanaryInconclusive }
func (CanaryComplete) Verdict() apiv1.Verdict             { return apiv1.WaitComplete }
func (CanaryTimedOut) Verdict() apiv1.Verdict             { return apiv1.WaitTimedOut }
func (r CanaryCut) Verdict() apiv1.Verdict                { return r.As }
func (r CanaryStepEnded) Verdict() apiv1.Verdict          { return r.Then.Result }
func (CanaryStopped) Verdict() apiv1.Verdict              { return apiv1.CanaryStopped }
func (CanaryNotStarted) Verdict() apiv1.Verdict           { return apiv1.CanaryStopped }
func (CanaryDeleted) Verdict() apiv1.Verdict              { return apiv1.WaitNotFound }
func (CanaryHalted) Verdict() apiv1.Verdict               { return apiv1.WaitStuck }
func (CanaryUnrollable) Verdict() apiv1.Verdict           { return apiv1.WaitStuck }
func (CanaryRollbackFailed) Verdict() apiv1.Verdict       { return apiv1.WaitStuck }
func (CanaryRolledBack) Verdict() apiv1.Verdict           { return apiv1.WaitRolledBack }
func (r CanaryRollbackUnfinished) Verdict() apiv1.Verdict { return r.Then.Result }

// ChangeKind is what someone else changed in a StatefulSet canary relies on.
type ChangeKind string

// Changes, as canary compares the StatefulSet with what it read or wrote.
const (
	// ChangeRecreated: deleted and created again (another UID).
	ChangeRecreated ChangeKind = "Recreated"
	// ChangePartition: the partition moved.
	ChangePartition ChangeKind = "Partition"
	// ChangeTemplate: the pod template changed.
	ChangeTemplate ChangeKind = "Template"
	// ChangeSpec: something else in the spec changed (the generation moved).
	ChangeSpec ChangeKind = "Spec"
	// ChangeUnknown: it changed, in nothing canary compares.
	ChangeUnknown ChangeKind = "Unknown"
	// ChangeUnreadable: it could not be read again (Err).
	ChangeUnreadable ChangeKind = "Unreadable"
)

// CanaryChange is what someone else changed in the StatefulSet Namespace/Name: Was* as canary
// read or wrote it, the others as it is now.
type CanaryChange struct {
	Namespace, Name           string
	Kind                      ChangeKind
	UID, WasUID               types.UID
	Partition, WasPartition   int32
	Generation, WasGeneration int64
	Err                       error
}

// Unrollable is why fix --rollback's plan has no rollback of Namespace/Name: the planner's
// reason (a finding's details.rollback), or none given.
type Unrollable struct {
	Namespace, Name string
	Why             string
}

// PartitionRestore is what became of the partition once a canary was rolled back: nothing to
// do (!Tried), restored To the value before the canary, or left at Stays because Err.
type PartitionRestore struct {
	Tried bool
	To    int32
	Stays int32
	Err   error
}
