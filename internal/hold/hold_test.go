package hold_test

import (
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stsdiag/stsdiag/internal/hold"
)

var start = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// TestHeldForADuration follows two findings on a fake clock: each is due once it has held for
// the duration, and the next wake is when the first pending one will be.
func TestHeldForADuration(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	var tr hold.Tracker
	if added := tr.Observe(clock.Now(), []string{"a"}); !reflect.DeepEqual(added, []string{"a"}) {
		t.Fatalf("added %v, want [a]", added)
	}
	clock.Step(10 * time.Second)
	if added := tr.Observe(clock.Now(), []string{"a", "b", "a"}); !reflect.DeepEqual(added, []string{"b"}) {
		t.Fatalf("added %v, want [b]", added)
	}
	due, next := tr.Due(clock.Now(), 30*time.Second, []string{"a", "b"})
	if len(due) != 0 || !next.Equal(start.Add(30*time.Second)) {
		t.Fatalf("at 10s: due %v next %v, want none due and a at 30s", due, next)
	}
	clock.Step(20 * time.Second)
	due, next = tr.Due(clock.Now(), 30*time.Second, []string{"a", "b"})
	if !reflect.DeepEqual(due, []string{"a"}) || !next.Equal(start.Add(40*time.Second)) {
		t.Fatalf("at 30s: due %v next %v, want [a] and b at 40s", due, next)
	}
	clock.Step(10 * time.Second)
	due, next = tr.Due(clock.Now(), 30*time.Second, []string{"a", "b"})
	if !reflect.DeepEqual(due, []string{"a", "b"}) || !next.IsZero() {
		t.Fatalf("at 40s: due %v next %v, want [a b] and nothing pending", due, next)
	}
}

// TestForgetsWhatIsGone: a finding that disappears and comes back starts holding again; a
// duration of zero is due at once; Reset forgets everything.
func TestForgetsWhatIsGone(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	var tr hold.Tracker
	tr.Observe(clock.Now(), []string{"a", "b"})
	clock.Step(time.Minute)
	tr.Observe(clock.Now(), []string{"b"})
	if _, ok := tr.FirstSeen("a"); ok || tr.Len() != 1 {
		t.Fatalf("a is gone and must be forgotten (tracking %d)", tr.Len())
	}
	clock.Step(time.Second)
	if added := tr.Observe(clock.Now(), []string{"a", "b"}); !reflect.DeepEqual(added, []string{"a"}) {
		t.Fatalf("added %v, want [a] again", added)
	}
	if first, _ := tr.FirstSeen("a"); !first.Equal(start.Add(61 * time.Second)) {
		t.Errorf("a first seen %v, want at 61s", first)
	}
	if first, _ := tr.FirstSeen("b"); !first.Equal(start) {
		t.Errorf("b first seen %v, want at 0s", first)
	}
	if due, _ := tr.Due(clock.Now(), 0, []string{"a", "untracked"}); !reflect.DeepEqual(due, []string{"a"}) {
		t.Errorf("zero duration: due %v, want [a] (untracked keys ignored)", due)
	}
	tr.Reset()
	if added := tr.Observe(clock.Now(), []string{"b"}); !reflect.DeepEqual(added, []string{"b"}) || tr.Len() != 1 {
		t.Errorf("after Reset: added %v, want [b]", added)
	}
}
