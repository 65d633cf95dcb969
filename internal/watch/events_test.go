package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// recordingSink is a record.EventSink that keeps what it was sent; delay slows each call down.
type recordingSink struct {
	delay time.Duration

	mu       sync.Mutex
	creates  []corev1.Event
	patches  []corev1.Event
	inFlight int
	maxIn    int
}

func (s *recordingSink) enter() {
	s.mu.Lock()
	s.inFlight++
	if s.inFlight > s.maxIn {
		s.maxIn = s.inFlight
	}
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}

func (s *recordingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.enter()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates = append(s.creates, *e)
	out := *e
	out.ResourceVersion = fmt.Sprint(len(s.creates))
	return &out, nil
}

func (s *recordingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.Create(e) }

func (s *recordingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.enter()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches = append(s.patches, *e)
	out := *e
	return &out, nil
}

func (s *recordingSink) counts() (creates, patches, maxIn int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.creates), len(s.patches), s.maxIn
}

// settle waits until the sink has received want calls, then a little longer to see no more come.
func (s *recordingSink) settle(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, p, _ := s.counts()
		if c+p >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
}

func set(ns, name string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name + "-uid")}}
}

// upstream is one client-go broadcaster as watch used before, to show the literals below are
// client-go's own behaviour.
type upstream struct {
	record.EventRecorder
	b record.EventBroadcaster
}

func newUpstream(ctx context.Context, sink record.EventSink) upstream {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(sink)
	return upstream{b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "stsdiag"}), b}
}

// The same object's Events are spam-filtered and aggregated as by one broadcaster: 30 Events of
// one reason with 30 messages on one StatefulSet. client-go (events_cache.go@v0.35.4): the
// first 9 messages are created as they are; from the 10th distinct message on
// (defaultAggregateMaxEvents :40, EventAggregate :269-271) they become one "(combined from
// similar events)" Event, created once and then patched with a growing count; the spam filter's
// token bucket (burst 25, refilled one per 300 s, :47-48) lets 25 Events through. So 10 creates
// and 15 patches, the last with count 16. Events of other objects, meanwhile, are not held back.
func TestShardedRecorderKeepsSpamFilterAndAggregation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
	}{{"client-go, one broadcaster", 0}, {"sharded 1", 1}, {"sharded 16", 16}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sink := &recordingSink{}
			var rec record.EventRecorder
			if tc.shards == 0 {
				u := newUpstream(ctx, sink)
				defer u.b.Shutdown()
				rec = u
			} else {
				r := newShardedRecorder(ctx, tc.shards, sink, scheme.Scheme, "stsdiag")
				defer r.Shutdown()
				rec = r
			}
			noisy := set("ns-a", "web")
			for i := 0; i < 30; i++ {
				rec.Event(noisy, corev1.EventTypeWarning, "CurrentRevisionFailing", fmt.Sprintf("web-%d: failing", i))
				// Others, interleaved: one Event each, never filtered.
				rec.Event(set("ns-b", fmt.Sprintf("db-%d", i)), corev1.EventTypeWarning, "CurrentRevisionFailing", "db: failing")
			}
			sink.settle(t, 10+15+30)

			sink.mu.Lock()
			defer sink.mu.Unlock()
			var noisyCreates, otherCreates int
			for _, e := range sink.creates {
				if e.InvolvedObject.Name == "web" {
					noisyCreates++
				} else {
					otherCreates++
				}
			}
			if noisyCreates != 10 || len(sink.patches) != 15 || otherCreates != 30 {
				t.Fatalf("web: %d creates, %d patches; others: %d creates; want 10, 15, 30", noisyCreates, len(sink.patches), otherCreates)
			}
			last := sink.patches[len(sink.patches)-1]
			if last.InvolvedObject.Name != "web" || last.Count != 16 || !strings.HasPrefix(last.Message, "(combined from similar events): ") {
				t.Fatalf("last patch: %s count %d %q; want web, count 16, combined", last.InvolvedObject.Name, last.Count, last.Message)
			}
			var web []string
			for _, e := range sink.creates {
				if e.InvolvedObject.Name == "web" {
					web = append(web, e.Message)
				}
			}
			for i := 0; i < 9; i++ {
				if want := fmt.Sprintf("web-%d: failing", i); web[i] != want {
					t.Fatalf("web's create %d: %q; want %q", i, web[i], want)
				}
			}
			if want := "(combined from similar events): web-9: failing"; web[9] != want {
				t.Fatalf("web's create 9: %q; want %q", web[9], want)
			}
		})
	}
}

// An object's Events always go to one shard; many objects spread over the shards.
func TestShardedRecorderRoutesByObject(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newShardedRecorder(ctx, 16, &recordingSink{}, scheme.Scheme, "stsdiag")
	defer r.Shutdown()
	used := map[int]bool{}
	for i := 0; i < 64; i++ {
		s := set("ns", fmt.Sprintf("set-%d", i))
		first := r.shard(s)
		for j := 0; j < 3; j++ {
			if got := r.shard(set("ns", fmt.Sprintf("set-%d", i))); got != first {
				t.Fatalf("set-%d: shard %d then %d", i, first, got)
			}
		}
		used[first] = true
	}
	if len(used) < 12 {
		t.Fatalf("64 sets used %d of 16 shards; want at least 12", len(used))
	}
}

// Different objects' Events post in parallel: with a sink taking 20 ms a call, one client-go
// broadcaster posts one at a time (64 Events ≥ 1.28 s), 16 shards post many at once.
func TestShardedRecorderPostsInParallel(t *testing.T) {
	const n, delay = 64, 20 * time.Millisecond
	run := func(shards int) (time.Duration, int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sink := &recordingSink{delay: delay}
		var rec record.EventRecorder
		if shards == 0 {
			u := newUpstream(ctx, sink)
			defer u.b.Shutdown()
			rec = u
		} else {
			r := newShardedRecorder(ctx, shards, sink, scheme.Scheme, "stsdiag")
			defer r.Shutdown()
			rec = r
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			rec.Event(set("ns", fmt.Sprintf("set-%d", i)), corev1.EventTypeWarning, "CurrentRevisionFailing", "failing")
		}
		for {
			c, _, _ := sink.counts()
			if c == n {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("%d shards: %d of %d Events posted in 20 s", shards, c, n)
			}
			time.Sleep(time.Millisecond)
		}
		_, _, maxIn := sink.counts()
		return time.Since(start), maxIn
	}
	one, oneIn := run(0)
	sharded, shardedIn := run(16)
	t.Logf("64 Events, 20 ms each: one broadcaster %v (at most %d at once), 16 shards %v (at most %d at once)", one, oneIn, sharded, shardedIn)
	if oneIn != 1 || one < n*delay {
		t.Fatalf("one broadcaster: %v, %d at once; want ≥ 1.28s, 1", one, oneIn)
	}
	if shardedIn < 8 || sharded > one/3 {
		t.Fatalf("16 shards: %v, %d at once; want ≤ a third of %v, ≥ 8 at once", sharded, shardedIn, one)
	}
}

// Shutdown returns while a sink call is blocked, and Events recorded afterwards are dropped
// (no panic, nothing posted); ending the context stops the broadcasters the same way.
func TestShardedRecorderShutdown(t *testing.T) {
	for _, byContext := range []bool{false, true} {
		t.Run(fmt.Sprintf("context %v", byContext), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sink := &recordingSink{delay: 2 * time.Second}
			r := newShardedRecorder(ctx, 4, sink, scheme.Scheme, "stsdiag")
			r.Event(set("ns", "a"), corev1.EventTypeWarning, "R", "blocked in the sink")
			for {
				if _, _, maxIn := sink.counts(); maxIn == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			start := time.Now()
			if byContext {
				cancel()
			}
			r.Shutdown()
			if took := time.Since(start); took > time.Second {
				t.Fatalf("Shutdown took %v with a blocked sink; want < 1s", took)
			}
			for i := 0; i < 10; i++ {
				r.Event(set("ns", fmt.Sprintf("after-%d", i)), corev1.EventTypeWarning, "R", "after shutdown")
			}
			time.Sleep(2500 * time.Millisecond)
			sink.mu.Lock()
			defer sink.mu.Unlock()
			for _, e := range sink.creates {
				if e.Message == "after shutdown" {
					t.Fatalf("an Event recorded after Shutdown was posted: %s", e.InvolvedObject.Name)
				}
			}
		})
	}
}
