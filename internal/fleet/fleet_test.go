package fleet_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stsdiag/stsdiag/internal/fleet"
)

// blockUntilCancelled returns "cancelled" once ctx is done, or "timeout" after 5s.
func blockUntilCancelled(ctx context.Context) string {
	select {
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return "cancelled"
		}
		return ctx.Err().Error()
	case <-time.After(5 * time.Second):
		return "never cancelled"
	}
}

func TestRunKeepsOrder(t *testing.T) {
	got := fleet.Run(context.Background(), []string{"a", "bb", "ccc"}, func(_ context.Context, s string) int { return len(s) }, nil)
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("results %v, want [1 2 3]", got)
	}
}

// TestDecisiveCancelsTheOthers: one decisive result ends the wait of every other target.
func TestDecisiveCancelsTheOthers(t *testing.T) {
	start := time.Now()
	got := fleet.Run(context.Background(), []string{"east", "west", "north"}, func(ctx context.Context, name string) string {
		if name == "west" {
			return "stuck"
		}
		return blockUntilCancelled(ctx)
	}, func(r string) bool { return r == "stuck" })
	if want := []string{"cancelled", "stuck", "cancelled"}; !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s: the decisive result did not end the others", took)
	}
}

func TestNotDecisiveCancelsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got := fleet.Run(ctx, []string{"east", "west"}, func(ctx context.Context, name string) string {
		if name == "west" {
			return "complete"
		}
		return blockUntilCancelled(ctx)
	}, func(r string) bool { return r == "stuck" })
	if want := []string{context.DeadlineExceeded.Error(), "complete"}; !slices.Equal(got, want) {
		t.Errorf("results %v, want %v: only the parent's deadline may end east", got, want)
	}
}

// TestLimit: with a limit of 2, ten targets never run more than two at once, and all run; a
// caller still waiting for a place when its context ends gets the context's error.
func TestLimit(t *testing.T) {
	limit := fleet.NewLimit(2)
	var mu sync.Mutex
	running, most := 0, 0
	targets := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	got := fleet.Run(context.Background(), targets, func(ctx context.Context, i int) int {
		_ = limit.Do(ctx, func() error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
		return i
	}, nil)
	if !slices.Equal(got, targets) || most != 2 {
		t.Errorf("results %v, at most %d at once: want every target, 2 at once", got, most)
	}
	full := fleet.NewLimit(1)
	release := make(chan struct{})
	go func() { _ = full.Do(context.Background(), func() error { <-release; return nil }) }()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := full.Do(ctx, func() error { t.Error("ran without a place"); return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting past the context: %v", err)
	}
	close(release)
	if err := fleet.NewLimit(0).Do(context.Background(), func() error { return errors.New("ran") }); err == nil || err.Error() != "ran" {
		t.Errorf("no limit: %v", err)
	}
}
