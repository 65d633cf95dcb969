// Package hold tracks how long findings have held: when each was first seen, which have held
// for a duration, and when the next one will. It is pure: the caller passes the time.
//
// stsdiag has three definitions of "stuck", and this tracker serves the two that wait for a
// finding to hold:
//
//   - check: a StatefulSet's summary status is Stuck when it has any error finding, at once
//     (model.Summaries); nothing is held.
//   - wait: the rollout is Stuck when a blocking finding (apiv1.Finding.Blocking: an error, or
//     the info OnDeleteStale) has held for --hold (follow.Run).
//   - watch: a StatefulSet is Stalled=True when an error finding has held for --hold (watch's
//     stalledWanted); watch --fix repairs a set once a finding behind one of its planned actions
//     has held for --hold.
package hold

import "time"

// Tracker remembers when each key (a finding's identity) was first seen. The zero value is
// ready to use; it is not safe for concurrent use.
type Tracker struct {
	first map[string]time.Time
}

// Observe records the keys present at now: a key not seen before starts holding now, a key
// seen before keeps its first time, and every key not present is forgotten (a finding that
// disappears and comes back starts again). It returns the keys seen for the first time, in
// the order given.
func (t *Tracker) Observe(now time.Time, present []string) (added []string) {
	next := make(map[string]time.Time, len(present))
	for _, key := range present {
		if _, dup := next[key]; dup {
			continue
		}
		first, ok := t.first[key]
		if !ok {
			first = now
			added = append(added, key)
		}
		next[key] = first
	}
	t.first = next
	return added
}

// FirstSeen is when key was first seen (false if it is not tracked).
func (t *Tracker) FirstSeen(key string) (time.Time, bool) {
	first, ok := t.first[key]
	return first, ok
}

// Due splits keys into those that have held for d at now (in the order given) and returns when
// the first of the others will have (zero: none pending). Keys not tracked are ignored.
func (t *Tracker) Due(now time.Time, d time.Duration, keys []string) (due []string, next time.Time) {
	for _, key := range keys {
		first, ok := t.first[key]
		if !ok {
			continue
		}
		at := first.Add(d)
		if !now.Before(at) {
			due = append(due, key)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return due, next
}

// Reset forgets every key: what is present at the next Observe starts holding again.
func (t *Tracker) Reset() { t.first = nil }

// Len is the number of keys tracked.
func (t *Tracker) Len() int { return len(t.first) }
