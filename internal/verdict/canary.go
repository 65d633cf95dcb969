package verdict

import (
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
