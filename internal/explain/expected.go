package explain

import (
	"fmt"
	"time"
)

// Expected says what an ordinal is expected to do by itself (a prediction's Expectation, e.g.
// ReplacedWhenReady), and by when: once the deadline passes without it, check reports the pod.
func Expected(expectation string, by, now time.Time) string {
	what := expectation
	switch expectation {
	case "ReplacedWhenReady":
		what = "expected to be replaced by the controller at its next Ready moment"
	}
	return fmt.Sprintf("%s by %s (in %s); a finding if not", what, by.UTC().Format(time.RFC3339), by.Sub(now).Round(time.Second))
}
