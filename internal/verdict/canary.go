package verdict

import (
	"fmt"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
)

// DecideCanary is the verdict of a canary, from the state it ended in (end): every step passed
// (Complete); a step failed — a finding held, or its analysis failed — and was rolled back
// (RolledBack), or not (Stuck); its analysis could not tell (Inconclusive); someone else
// changed the StatefulSet (Stopped); the deadline passed (TimedOut); the wait of a step ended
// otherwise (its verdict); or the canary could not go on (the error's verdict).
func DecideCanary(end model.Reason) model.Verdict {
	v := model.Verdict{Result: resultFor(end), Reason: end}
	switch r := end.(type) {
	case model.CanaryRolledBack:
		v.RolledBack = []apiv1.RolledBack{r.Rolled}
	case model.CanaryRollbackUnfinished:
		v.RolledBack = []apiv1.RolledBack{r.Rolled}
	}
	return v
}

// canaryResultOf is the verdict a canary's end stands for.
func canaryResultOf(end model.Reason) apiv1.Verdict {
	switch r := end.(type) {
	case model.CanaryComplete:
		return apiv1.WaitComplete
	case model.CanaryTimedOut:
		return apiv1.WaitTimedOut
	case model.CanaryCut:
		return r.As
	case model.CanaryStepEnded:
		return r.Then.Result
	case model.CanaryStopped, model.CanaryNotStarted:
		return apiv1.CanaryStopped
	case model.CanaryDeleted:
		return apiv1.WaitNotFound
	case model.CanaryHalted, model.CanaryUnrollable, model.CanaryRollbackFailed:
		return apiv1.WaitStuck
	case model.CanaryRolledBack:
		return apiv1.WaitRolledBack
	case model.CanaryRollbackUnfinished:
		return r.Then.Result
	case model.CanaryInconclusive:
		return apiv1.CanaryInconclusive
	}
	panic(fmt.Sprintf("verdict: no verdict for the reason %T", end))
}
