package until_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stsdiag/stsdiag/internal/until"
)

var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// TestLooksOnChangeAndWhenDue: a look at once, one per change, one when the time it asked for
// comes, and none in between.
func TestLooksOnChangeAndWhenDue(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	changes := make(chan struct{})
	looks := make(chan int, 10)
	n := 0
	done := make(chan error, 1)
	go func() {
		done <- until.Run(context.Background(), clock, changes, func(context.Context) (bool, time.Time, error) {
			n++
			looks <- n
			return n == 3, start.Add(time.Minute), nil
		})
	}()
	if got := <-looks; got != 1 {
		t.Fatalf("first look %d", got)
	}
	changes <- struct{}{}
	if got := <-looks; got != 2 {
		t.Fatalf("look after a change %d", got)
	}
	for !clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clock.Step(59 * time.Second)
	select {
	case got := <-looks:
		t.Fatalf("look %d before the time asked for", got)
	case <-time.After(50 * time.Millisecond):
	}
	clock.Step(time.Second)
	if got := <-looks; got != 3 {
		t.Fatalf("look when due %d", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("done: %v", err)
	}
}

// TestLooksAgainAtOnceWhenDueIsPast: a look that asks for a time not in the future is followed
// by another at once, with no timer and no change.
func TestLooksAgainAtOnceWhenDueIsPast(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	n := 0
	err := until.Run(context.Background(), clock, nil, func(context.Context) (bool, time.Time, error) {
		n++
		return n == 4, start, nil
	})
	if err != nil || n != 4 {
		t.Fatalf("err %v after %d looks, want nil after 4", err, n)
	}
}

// TestEnds: a look's error ends Run with it; ctx's deadline with context.DeadlineExceeded; its
// cancellation with context.Canceled; a look that asks nothing waits for ctx.
func TestEnds(t *testing.T) {
	boom := errors.New("forbidden")
	if err := until.Run(context.Background(), nil, nil, func(context.Context) (bool, time.Time, error) {
		return false, time.Time{}, boom
	}); err != boom {
		t.Errorf("look failed: %v, want %v", err, boom)
	}
	idle := func(context.Context) (bool, time.Time, error) { return false, time.Time{}, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := until.Run(ctx, nil, nil, idle); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := until.Run(ctx, nil, nil, idle); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
