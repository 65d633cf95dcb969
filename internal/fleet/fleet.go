// Package fleet runs one function per cluster of a fleet (the kubeconfig contexts of --contexts)
// at once, with fail-fast cancellation.
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
