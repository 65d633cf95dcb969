package fleet_test

import (
	"context"
	"errors"
	"slices"
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
