package model

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// Verdict is how a wait (wait, wait --contexts, a canary) ended, with the typed facts it was
// decided from: internal/verdict decides it once, from the final state; internal/explain words
// it (one golden file per reason in testdata/golden/verdicts/).
type Verdict struct {
	Result apiv1.Verdict
	Reason Reason
	// RolledBack lists the StatefulSets a rollback returned to an earlier revision.
	RolledBack []apiv1.RolledBack
}

// Reason is why a verdict was reached: one of the types below.
type Reason interface{ verdictReason() }

// Complete: every rollout is complete and its pods settled; with Settle (a canary step's
// hold), it also stayed so with no blocking finding for Settle.
type Complete struct{ Settle time.Duration }

// Held: blocking findings held for Hold; the rollout will not finish on its own.
type Held struct {
	Findings []stuck.Finding
	Hold     time.Duration
}

// TimedOut: the deadline passed while the rollout was still progressing. After is the budget
// the caller gave (zero: not named).
type TimedOut struct{ After time.Duration }

// Interrupted: the wait was cancelled (a signal) while the rollout was still progressing.
type Interrupted struct{}

// Failed: the wait could not go on, for the reason Err gives; As is the verdict of that error
// (NotFound, Unevaluable, Interrupted, TimedOut; Stuck for a repair that could not be
// evaluated).
type Failed struct {
	As  apiv1.Verdict
	Err error
}

// Deleted: what the wait followed was deleted while it waited (NotFound).
type Deleted struct{ What string }

// NoMatch: the selector matches no StatefulSet (NotFound).
type NoMatch struct{}

// Stopped: the caller's Stop ended the wait with its verdict As, in Words it had worded
// (canary's: explain.Verdict of a CanaryStopped).
type Stopped struct {
	As    apiv1.Verdict
	Words string
}

// NotObserved: the StatefulSet controller never observed the patches wait --fix made to these
// StatefulSets within the budget; the pods waiting for them were not deleted.
type NotObserved struct {
	StatefulSets []types.NamespacedName
	Within       time.Duration
}

// RolledBack: the StatefulSets were rolled back to an earlier revision; Then is the verdict of
// the rollout after (Complete: the earlier revision's rollout completed, the deploy failed).
type RolledBack struct {
	Rolled []apiv1.RolledBack
	Then   Verdict
}

// Fleet: the verdicts of one wait per kubeconfig context, Members those that did not complete.
type Fleet struct{ Members []Member }

// Member is one context's verdict in a fleet, in the words it was given.
type Member struct {
	Context string
	Result  apiv1.Verdict
	Message string
}

// ContextFailed: the wait in one context of a fleet failed with Err, whose verdict is As.
type ContextFailed struct {
	Context string
	As      apiv1.Verdict
	Err     error
}

func (Complete) verdictReason()      {}
func (Held) verdictReason()          {}
func (TimedOut) verdictReason()      {}
func (Interrupted) verdictReason()   {}
func (Failed) verdictReason()        {}
func (Deleted) verdictReason()       {}
func (NoMatch) verdictReason()       {}
func (Stopped) verdictReason()       {}
func (NotObserved) verdictReason()   {}
func (RolledBack) verdictReason()    {}
func (Fleet) verdictReason()         {}
func (ContextFailed) verdictReason() {}
