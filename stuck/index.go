package stuck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// index joins the snapshot's objects once, so diagnosis is linear in their number.
type index struct {
	now           time.Time
	settle        time.Duration
	notReadyAfter time.Duration
	// recheckAt is the earliest moment a time-based rule turns a situation into a finding.
	recheckAt time.Time
	// nodes is nil when they could not be listed.
	nodes map[string]*corev1.Node
	sets  map[string]*appsv1.StatefulSet
	// owned are the pods and revisions by controller UID.
	owned          controller.Owned
	pvcs           map[string]*corev1.PersistentVolumeClaim
	events         map[string][]*corev1.Event
	storageClasses map[string]*storagev1.StorageClass
	defaultClass   *storagev1.StorageClass
}

const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

func newIndex(s *Objects, settle time.Duration) *index {
	ix := &index{
		now:    s.Now,
		settle: settle,
		sets:   make(map[string]*appsv1.StatefulSet, len(s.StatefulSets)),
		owned:  controller.ByController(s.Pods, s.Revisions),
		pvcs:   make(map[string]*corev1.PersistentVolumeClaim, len(s.PVCs)),
		events: map[string][]*corev1.Event{},
	}
	for i := range s.StatefulSets {
		set := &s.StatefulSets[i]
		ix.sets[key(set.Namespace, set.Name)] = set
	}
	for i := range s.PVCs {
		pvc := &s.PVCs[i]
		ix.pvcs[pvc.Namespace+"/"+pvc.Name] = pvc
	}
	for i := range s.Events {
		e := &s.Events[i]
		k := eventKey(e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		ix.events[k] = append(ix.events[k], e)
	}
	for _, list := range ix.events {
		sort.SliceStable(list, func(i, j int) bool { return eventTime(list[i]).After(eventTime(list[j])) })
	}
	if s.NodesListed {
		ix.nodes = s.Indexed().Nodes
	}
	if s.StorageClassesListed {
		ix.storageClasses = map[string]*storagev1.StorageClass{}
		for i := range s.StorageClasses {
			sc := &s.StorageClasses[i]
			ix.storageClasses[sc.Name] = sc
			if sc.Annotations[defaultClassAnnotation] == "true" {
				ix.defaultClass = sc
			}
		}
	}
	return ix
}

// nodeLost reports whether the named node is gone or its Ready condition is not True (nodes
// listed; a pod never scheduled has no node).
func (ix *index) nodeLost(name string) bool {
	if ix.nodes == nil || name == "" {
		return false
	}
	node, ok := ix.nodes[name]
	if !ok {
		return true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}

// wake records that a rule matures at t: a diagnosis then may give another verdict.
func (ix *index) wake(t time.Time) {
	if t.After(ix.now) && (ix.recheckAt.IsZero() || t.Before(ix.recheckAt)) {
		ix.recheckAt = t
	}
}

func eventKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// eventsOf returns the Warning events of an object, newest first. With a uid, events about
// another object of the same name are left out: a StatefulSet's pod keeps its name when it is
// recreated, and Events outlive the pod they were about (an hour by default).
func (ix *index) eventsOf(kind, namespace, name string, uid types.UID) []*corev1.Event {
	all := ix.events[eventKey(kind, namespace, name)]
	if uid == "" {
		return all
	}
	var out []*corev1.Event
	for _, e := range all {
		if e.InvolvedObject.UID == "" || e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// recentEvents returns up to n Warning events of an object (of that uid, when given), newest
// first, as "Reason: message".
func (ix *index) recentEvents(kind, namespace, name string, uid types.UID, n int) []string {
	var out []string
	for _, e := range ix.eventsOf(kind, namespace, name, uid) {
		if len(out) == n {
			break
		}
		line := e.Reason + ": " + strings.TrimSpace(e.Message)
		if e.Count > 1 {
			line += fmt.Sprintf(" (x%d)", e.Count)
		}
		out = append(out, line)
	}
	return out
}

// lastEvent returns the newest Warning event of an object (of that uid, when given) with the
// reason, or nil.
func (ix *index) lastEvent(kind, namespace, name string, uid types.UID, reason string) *corev1.Event {
	for _, e := range ix.eventsOf(kind, namespace, name, uid) {
		if e.Reason == reason {
			return e
		}
	}
	return nil
}

func (ix *index) lastEventMessage(kind, namespace, name string) string {
	if events := ix.events[eventKey(kind, namespace, name)]; len(events) > 0 {
		return events[0].Reason + ": " + strings.TrimSpace(events[0].Message)
	}
	return ""
}

// updateRevision returns the revision new pods get. When the controller has not observed the
// latest spec yet, it is the ControllerRevision holding today's template, or "" if none does yet
// (the controller will create a new one).
func (ix *index) updateRevision(set *appsv1.StatefulSet) string {
	if set.Status.ObservedGeneration >= set.Generation {
		return set.Status.UpdateRevision
	}
	for _, rev := range ix.owned.Revisions[set.UID] {
		if _, tmpl, err := controller.RevisionTemplate(rev); err == nil && equality.Semantic.DeepEqual(*tmpl, set.Spec.Template) {
			return rev.Name
		}
	}
	return ""
}

// byOrdinal sorts pod names of one StatefulSet by ordinal (web-9 before web-10).
func byOrdinal(setName string, pods []string) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, okA := controller.ParseOrdinal(setName, pods[i])
		b, okB := controller.ParseOrdinal(setName, pods[j])
		if okA && okB {
			return a < b
		}
		return pods[i] < pods[j]
	})
}

// revisionCreated is when the StatefulSet's ControllerRevision of that name was created (zero
// when unknown).
func (ix *index) revisionCreated(set *appsv1.StatefulSet, name string) time.Time {
	for _, rev := range ix.owned.Revisions[set.UID] {
		if rev.Name == name {
			return rev.CreationTimestamp.Time
		}
	}
	return time.Time{}
}

// clockSkew is how much earlier than the pod went missing an Event may be stamped and still be
// about this absence (the controller's clock and the kubelet's may differ).
const clockSkew = time.Minute

// refusal returns the newest refusal of the pod in the StatefulSet's FailedCreate Events since
// the pod went missing, or nil.
func (ix *index) refusal(set *appsv1.StatefulSet, pod string, since time.Time) *facts.Refusal {
	for _, e := range ix.events[eventKey("StatefulSet", set.Namespace, set.Name)] {
		if e.Reason != "FailedCreate" || eventTime(e).Before(since.Add(-clockSkew)) {
			continue
		}
		if r, ok := facts.ParseEvent(e.Message); ok && r.Pod == pod {
			return &r
		}
	}
	return nil
}
