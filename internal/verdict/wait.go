package verdict

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// Facts are the final state of one wait (package follow's loop, wait's use case).
type Facts struct {
	// End is how the loop ended: Complete, Held, TimedOut, Interrupted, Failed, Deleted, NoMatch
	// or Stopped; or ContextFailed, a fleet's wait in one context that failed.
	End model.Reason
	// Timeout is the budget the caller gave the wait (wait --timeout), named when a patch was
	// never observed within it.
	Timeout time.Duration
	// Actions are the repairs made on the way (wait --fix): what they rolled back, and the
	// patches the StatefulSet controller never observed, decide the verdict too.
	Actions []model.Action
}

// Decide is the verdict of a wait, from its final state:
//   - the loop's end: Complete, Stuck (findings held), TimedOut, Interrupted, NotFound, or the
//     verdict of the error or of the caller's Stop;
//   - a wait --fix that timed out because the StatefulSet controller never observed its patch
//     is NotObserved, naming the StatefulSets: the cause is the controller, not a slow rollout;
//   - a rollback (wait --fix --rollback) means the rollout that completed is the earlier
//     revision's: the deploy failed all the same (RolledBack, exit 1); any other end stays, the
//     StatefulSets rolled back listed first.
func Decide(f Facts) model.Verdict {
	v := model.Verdict{Result: resultFor(f.End), Reason: f.End}
	if v.Result == apiv1.WaitTimedOut {
		if sets := notObserved(f.Actions); len(sets) > 0 {
			v = model.Verdict{Result: apiv1.WaitNotObserved, Reason: model.NotObserved{StatefulSets: sets, Within: f.Timeout}}
		}
	}
	rolled := RollbacksDone(f.Actions)
	if len(rolled) == 0 {
		return v
	}
	result := v.Result
	if result == apiv1.WaitComplete {
		result = apiv1.WaitRolledBack
	}
	return model.Verdict{Result: result, Reason: model.RolledBack{Rolled: rolled, Then: v}, RolledBack: rolled}
}

// resultFor is the verdict a loop's end (or a canary's) stands for.
func resultFor(end model.Reason) apiv1.Verdict { return end.Verdict() }

// notObserved names the StatefulSets whose patch the controller never observed: the deletes
// that waited for it were skipped (model.Action.NotObserved).
func notObserved(actions []model.Action) []types.NamespacedName {
	var sets []types.NamespacedName
	seen := map[types.NamespacedName]bool{}
	for _, a := range actions {
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.StatefulSet}
		if a.NotObserved && !seen[key] {
			seen[key] = true
			sets = append(sets, key)
		}
	}
	return sets
}

// RollbacksDone lists the StatefulSets the actions rolled back (a Rollback done, not a dry run).
func RollbacksDone(actions []model.Action) []apiv1.RolledBack {
	var out []apiv1.RolledBack
	for _, a := range actions {
		if a.Kind() == apiv1.Rollback && a.Rollback != nil && a.Result == apiv1.ResultDone && !a.DryRun {
			out = append(out, apiv1.RolledBack{Namespace: a.Namespace, StatefulSet: a.StatefulSet, Revision: a.Rollback.Revision, FromRevision: a.Rollback.FromRevision, Images: a.Rollback.Images})
		}
	}
	return out
}
