// Package until is the one "until" loop of stsdiag: look, then wait for a change, the time the
// look asked to be woken, or the end of ctx, and look again. wait and canary follow their scope
// with it (package follow), fix --wait follows repaired StatefulSets with it, and the executor
// waits with it for a patch to be observed.
package until

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Look looks once. done ends Run; next, when not zero, is when to look again though nothing
// changed (at once when it is not in the future).
type Look func(ctx context.Context) (done bool, next time.Time, err error)

// Run looks at once, then again on every signal of changes (nil: none) and when the time the last
// look asked for comes, until a look is done (nil) or fails (its error). When ctx ends first Run
// returns ctx.Err(): context.DeadlineExceeded for a deadline, context.Canceled otherwise.
func Run(ctx context.Context, clk clock.Clock, changes <-chan struct{}, look Look) error {
	if clk == nil {
		clk = clock.RealClock{}
	}
	for {
		done, next, err := look(ctx)
		if done || err != nil {
			return err
		}
		now := clk.Now()
		if !next.IsZero() && !next.After(now) {
			continue
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = clk.After(next.Sub(now))
		}
		select {
		case <-changes:
		case <-timer:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
