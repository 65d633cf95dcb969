package verdict

import apiv1 "github.com/stsdiag/stsdiag/api/v1"

// Followed is how following one repaired StatefulSet's rollout ended (fix --wait).
type Followed string

// How a followed rollout ended.
const (
	// FollowedComplete: the rollout completed and its pods settled.
	FollowedComplete Followed = "Complete"
	// FollowedTimedOut: the --wait deadline passed first.
	FollowedTimedOut Followed = "TimedOut"
	// FollowedFailed: it was interrupted, or could not be followed.
	FollowedFailed Followed = "Failed"
)

// RolloutFacts are the final state of fix --wait.
type RolloutFacts struct {
	// NotObserved: the StatefulSet controller never observed a patch fix made, so the pods
	// waiting for it were left and no rollout was followed.
	NotObserved bool
	// Followed are the StatefulSets repaired and followed, in order, up to the first that did
	// not complete.
	Followed []Followed
	// Unrepaired: a planned action was not done.
	Unrepaired bool
}

// DecideRollout is the outcome fix --wait reports: NotObserved when the controller never observed a
// patch; TimedOut only when the --wait deadline passed, never when fix was interrupted;
// Complete only when every StatefulSet with a planned action was repaired and completed, never
// of a set whose action was skipped or failed (likely still stuck); else none.
func DecideRollout(f RolloutFacts) apiv1.RolloutOutcome {
	if f.NotObserved {
		return apiv1.RolloutNotObserved
	}
	for _, o := range f.Followed {
		switch o {
		case FollowedTimedOut:
			return apiv1.RolloutTimedOut
		case FollowedFailed:
			return ""
		}
	}
	if len(f.Followed) > 0 && !f.Unrepaired {
		return apiv1.RolloutComplete
	}
	return ""
}
