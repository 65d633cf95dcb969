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

// Reason is why a verdict was reached: one of the types below (and canary's), each saying the
// verdict it stands for, so that a new reason without one does not compile.
type Reason interface {
	// Verdict is the verdict the reason stands for.
	Verdict() apiv1.Verdict
}

// Complete: every rollout is complete and its pods settled; with Settle (a canary step's
// hold), it also stayed so with no blocking finding for Settle.
type Complete struct{ Settle time.Duration }

// Held: blocking findings held for Hold; the rollout will not finish on its own.
type Held struct {
	Findings []stuck.Finding
	Hold     time.Duration
}

// TimedOut: the deadline passed while the rollout was still progressing. After is the budget
// the caller gave (zero: not named); Reading, when set, is the read that was still unanswered
// (the caches never synced: nothing was seen of the rollout).
type TimedOut struct {
	After   time.Duration
	Reading error
}

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
type Fleet struct {
	Members []Member
	// Result is the worst of the members' verdicts (Complete when none).
	Result apiv1.Verdict
}

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

func (Complete) Verdict() apiv1.Verdict        { return apiv1.WaitComplete }
func (Held) Verdict() apiv1.Verdict            { return apiv1.WaitStuck }
func (TimedOut) Verdict() apiv1.Verdict        { return apiv1.WaitTimedOut }
func (Interrupted) Verdict() apiv1.Verdict     { return apiv1.WaitInterrupted }
func (r Failed) Verdict() apiv1.Verdict        { return r.As }
func (Deleted) Verdict() apiv1.Verdict         { return apiv1.WaitNotFound }
func (NoMatch) Verdict() apiv1.Verdict         { return apiv1.WaitNotFound }
func (r Stopped) Verdict() apiv1.Verdict       { return r.As }
func (NotObserved) Verdict() apiv1.Verdict     { return apiv1.WaitNotObserved }
func (r Fleet) Verdict() apiv1.Verdict         { return r.Result }
func (r ContextFailed) Verdict() apiv1.Verdict { return r.As }

// Verdict is RolledBack when the rollout after the rollback completed (the deploy failed), else
// what became of it.
func (r RolledBack) Verdict() apiv1.Verdict {
	if r.Then.Result == apiv1.WaitComplete {
		return apiv1.WaitRolledBack
	}
	return r.Then.Result
}
