// Package fleet runs one function per cluster of a fleet (the kubeconfig contexts of --contexts,
// the ClusterProfiles of --cluster-profiles) at once, with fail-fast cancellation, and bounds how
// many do a costly step at the same time.
package fleet

import (
	"context"
	"sync"
)

// Run calls do for every target concurrently and returns the results in the order of targets.
// Once decisive reports true for a result, the context of the calls still running is cancelled
// (fail fast); they are still waited for, so every result is set. A nil decisive never cancels.
func Run[T, R any](ctx context.Context, targets []T, do func(context.Context, T) R, decisive func(R) bool) []R {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]R, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = do(ctx, t)
			if decisive != nil && decisive(results[i]) {
				cancel()
			}
		}()
	}
	wg.Wait()
	return results
}

// Limit lets at most its capacity of callers run at once (nil or empty: no bound).
type Limit chan struct{}

// NewLimit bounds to n at once; n <= 0 is no bound.
func NewLimit(n int) Limit {
	if n <= 0 {
		return nil
	}
	return make(Limit, n)
}

// Do runs f once a place is free, or returns ctx's error if ctx ends first.
func (l Limit) Do(ctx context.Context, f func() error) error {
	if l == nil {
		return f()
	}
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l }()
	return f()
}
