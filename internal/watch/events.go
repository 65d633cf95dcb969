package watch

import (
	"context"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// defaultEventShards is how many Event broadcasters watch posts through. One client-go
// broadcaster posts one Event at a time from a single goroutine (k8s.io/client-go@v0.35.4
// tools/record/event.go:275-281 StartRecordingToSink, :288-324 recordToSink, :395-424
// StartEventWatcher): ~126 Events/s against a local API server here. 16 posting at once
// leave room above 500/s.
const defaultEventShards = 16

// shardedRecorder records Events through several client-go broadcasters, each with its own
// EventCorrelator and sink, and sends every Event about one object to the same broadcaster.
// Upstream's spam filter, aggregation and counting are per object: their keys all begin with
// the source and the involved object's kind, namespace, name and UID (events_cache.go:52-66
// getEventKey, :70-82 getSpamKey, :161-176 EventAggregatorByReasonFunc), so routing by the
// object's namespace and name keeps each key's whole history in one correlator, exactly as
// with one broadcaster. What differs: Events of different objects post in parallel and may
// reach the server out of order; each correlator's LRU caches (4096 keys, :36) and each
// broadcaster's queue (1000 Events, event.go:43) are per shard, so N times as many in all.
type shardedRecorder struct {
	broadcasters []record.EventBroadcaster
	recorders    []record.EventRecorder
}

var _ record.EventRecorder = (*shardedRecorder)(nil)

// newShardedRecorder starts n broadcasters (n < 1: one) posting to sink with the source
// Component; they stop when ctx ends or at Shutdown.
func newShardedRecorder(ctx context.Context, n int, sink record.EventSink, scheme *runtime.Scheme, component string) *shardedRecorder {
	if n < 1 {
		n = 1
	}
	r := &shardedRecorder{}
	for i := 0; i < n; i++ {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(sink)
		r.broadcasters = append(r.broadcasters, b)
		r.recorders = append(r.recorders, b.NewRecorder(scheme, corev1.EventSource{Component: component}))
	}
	return r
}

// shard is the index of the broadcaster of the object's Events: a hash of its namespace and
// name (0 for an object without metadata, which the recorder refuses anyway).
func (r *shardedRecorder) shard(object runtime.Object) int {
	m, err := meta.Accessor(object)
	if err != nil {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(m.GetNamespace()))
	h.Write([]byte{'/'})
	h.Write([]byte(m.GetName()))
	return int(h.Sum32() % uint32(len(r.recorders)))
}

// Event implements record.EventRecorder.
func (r *shardedRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.recorders[r.shard(object)].Event(object, eventtype, reason, message)
}

// Eventf implements record.EventRecorder.
func (r *shardedRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.recorders[r.shard(object)].Eventf(object, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf implements record.EventRecorder.
func (r *shardedRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.recorders[r.shard(object)].AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

// Shutdown stops every broadcaster, as client-go's Shutdown does one (event.go:283-286): Events
// recorded afterwards are dropped, an Event being posted may be cut short.
func (r *shardedRecorder) Shutdown() {
	for _, b := range r.broadcasters {
		b.Shutdown()
	}
}

// report counts, logs and records an Event for each new finding.
func (c *Controller) report(key string, set *appsv1.StatefulSet, fresh []stuck.Finding) {
	for _, f := range fresh {
		c.metrics.FindingsTotal.WithLabelValues(string(f.Code), f.Namespace).Inc()
		c.logf("%s: new finding %s %s %s: %s", key, f.Severity, f.Code, f.Pod, f.Message)
		if set != nil {
			eventType := corev1.EventTypeWarning
			if f.Severity == apiv1.SeverityInfo {
				eventType = corev1.EventTypeNormal
			}
			c.event(set, eventType, string(f.Code), truncate(fmt.Sprintf("%s: %s Remedy: %s", f.Pod, f.Message, f.Remedy)))
		}
	}
}

// heldEvent is a finding's Event held while the caches fill.
type heldEvent struct {
	about                      *appsv1.StatefulSet // its identity only
	eventType, reason, message string
}

// event records an Event about set, or holds it while the caches fill (Controller.held).
func (c *Controller) event(set *appsv1.StatefulSet, eventType, reason, message string) {
	c.mu.Lock()
	if c.holding {
		about := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace, UID: set.UID, ResourceVersion: set.ResourceVersion}}
		c.held = append(c.held, heldEvent{about, eventType, reason, message})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.recorder.Event(set, eventType, reason, message)
}

// releaseEvents records the Events held while the caches filled, and those to come.
func (c *Controller) releaseEvents() {
	c.mu.Lock()
	held := c.held
	c.held, c.holding = nil, false
	c.mu.Unlock()
	for _, e := range held {
		c.recorder.Event(e.about, e.eventType, e.reason, e.message)
	}
}
