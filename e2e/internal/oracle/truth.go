package oracle

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The ground truth is read from the API objects only — the StatefulSet's spec and status and its
// pods — written here from the API's fields, independently of stsdiag's own model.

// Outcome is what the real system did with a history.
type Outcome string

// Outcomes. Pending: not decided yet (the Tracker goes on).
const (
	Pending   Outcome = ""
	Complete  Outcome = "complete"
	Stuck     Outcome = "stuck"
	Undecided Outcome = "undecided"
)

// Observation is one poll of the real system: the StatefulSet and the pods of its selector.
type Observation struct {
	At   time.Time
	Set  *appsv1.StatefulSet
	Pods []corev1.Pod
}

// CompleteNow says whether the rollout is complete in this observation, and if not why: the spec
// observed, every replica created, Running, Ready, available (Ready for minReadySeconds) and not
// terminating, no pod beyond the replicas, and each on the revision it must have — the update
// revision, except ordinals below a RollingUpdate partition, which keep the current revision.
// (OnDelete histories delete their old pods as a user does, so all must be updated.)
func CompleteNow(o Observation) (bool, string) {
	set := o.Set
	if set == nil {
		return false, "no StatefulSet"
	}
	if set.Status.ObservedGeneration < set.Generation {
		return false, fmt.Sprintf("generation %d not observed (%d)", set.Generation, set.Status.ObservedGeneration)
	}
	replicas := int32(1)
	if set.Spec.Replicas != nil {
		replicas = *set.Spec.Replicas
	}
	if set.Status.ReadyReplicas != replicas || set.Status.AvailableReplicas != replicas {
		return false, fmt.Sprintf("status ready %d available %d of %d", set.Status.ReadyReplicas, set.Status.AvailableReplicas, replicas)
	}
	start := int32(0)
	if set.Spec.Ordinals != nil {
		start = set.Spec.Ordinals.Start
	}
	partition := int32(0)
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && set.Spec.UpdateStrategy.RollingUpdate != nil &&
		set.Spec.UpdateStrategy.RollingUpdate.Partition != nil {
		partition = *set.Spec.UpdateStrategy.RollingUpdate.Partition
	}
	byOrdinal := map[int32]*corev1.Pod{}
	for i := range o.Pods {
		p := &o.Pods[i]
		ord, ok := ordinal(set.Name, p.Name)
		if !ok {
			continue
		}
		if ord < start || ord >= start+replicas {
			return false, "pod " + p.Name + " beyond the replicas"
		}
		byOrdinal[ord] = p
	}
	for i := int32(0); i < replicas; i++ {
		p := byOrdinal[start+i]
		name := fmt.Sprintf("%s-%d", set.Name, start+i)
		switch {
		case p == nil:
			return false, name + " missing"
		case p.DeletionTimestamp != nil:
			return false, name + " terminating"
		case p.Status.Phase != corev1.PodRunning:
			return false, name + " " + string(p.Status.Phase)
		}
		ready := readyCondition(p)
		if ready == nil || ready.Status != corev1.ConditionTrue {
			return false, name + " not Ready"
		}
		if ready.LastTransitionTime.Add(time.Duration(set.Spec.MinReadySeconds) * time.Second).After(o.At) {
			return false, name + " not yet available"
		}
		rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		if i >= partition {
			if rev != set.Status.UpdateRevision {
				return false, fmt.Sprintf("%s on %s, not the update revision %s", name, rev, set.Status.UpdateRevision)
			}
		} else if rev != set.Status.CurrentRevision && rev != set.Status.UpdateRevision {
			return false, fmt.Sprintf("%s below the partition on %s, neither current %s nor update revision", name, rev, set.Status.CurrentRevision)
		}
	}
	return true, ""
}

// ordinal reads a pod name's ordinal: set-N.
func ordinal(set, pod string) (int32, bool) {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	return int32(n), err == nil
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Signature is the state of a rollout for telling progress: the generation observed, the status
// counters and revisions, and per pod its name, UID, revision, phase and whether it terminates.
// A crash loop's Ready blips move readyReplicas between states already seen: not progress.
func Signature(o Observation) string {
	var b strings.Builder
	if s := o.Set; s != nil {
		st := s.Status
		fmt.Fprintf(&b, "gen=%d/%d replicas=%d ready=%d current=%d updated=%d available=%d revs=%s>%s",
			st.ObservedGeneration, s.Generation, st.Replicas, st.ReadyReplicas, st.CurrentReplicas, st.UpdatedReplicas,
			st.AvailableReplicas, st.CurrentRevision, st.UpdateRevision)
	}
	pods := make([]string, 0, len(o.Pods))
	for _, p := range o.Pods {
		pods = append(pods, fmt.Sprintf("%s/%s/%s/%s/deleting=%t", p.Name, p.UID, p.Labels[appsv1.ControllerRevisionHashLabelKey],
			p.Status.Phase, p.DeletionTimestamp != nil))
	}
	sort.Strings(pods)
	for _, p := range pods {
		b.WriteString(" " + p)
	}
	return b.String()
}

// stability is what must not change while a complete rollout settles: each pod's identity, its
// containers' restarts, and when it last became Ready (a Ready→not Ready→Ready blip between two
// polls moves it).
func stability(o Observation) string {
	parts := make([]string, 0, len(o.Pods))
	for _, p := range o.Pods {
		restarts := int32(0)
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, c := range list {
				restarts += c.RestartCount
			}
		}
		since := ""
		if c := readyCondition(&p); c != nil {
			since = c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		parts = append(parts, fmt.Sprintf("%s/%s/restarts=%d/ready-since=%s", p.Name, p.UID, restarts, since))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// Tracker decides a history's outcome from successive observations:
//   - Complete once CompleteNow has held for Settle with no pod replaced, no container restarted
//     and no pod's Ready condition changed (a crash loop can look complete for a second);
//   - Stuck once no observation has shown a state signature never seen before for NoProgress,
//     and the rollout is not complete;
//   - Undecided once Cap has passed since the first observation.
type Tracker struct {
	Settle, NoProgress, Cap time.Duration

	first, lastProgress time.Time
	seen                map[string]bool
	completeSince       time.Time
	completeKey         string
	// Why is the reason the rollout is not complete in the last observation.
	Why string
	// States counts the distinct signatures seen.
	States int
}

// Final is the Tracker of a history's last step: complete for 20 s, or no progress for 60 s,
// within 4 minutes.
func Final() *Tracker {
	return &Tracker{Settle: 20 * time.Second, NoProgress: 60 * time.Second, Cap: 4 * time.Minute}
}

// Intermediate is the Tracker of a step before the last, as a user waits before the next
// change: complete for 5 s, or no progress for 30 s, or a minute at most.
func Intermediate() *Tracker {
	return &Tracker{Settle: 5 * time.Second, NoProgress: 30 * time.Second, Cap: time.Minute}
}

// Observe takes one observation and returns the outcome once decided (Pending before).
func (t *Tracker) Observe(o Observation) Outcome {
	if t.seen == nil {
		t.seen, t.first, t.lastProgress = map[string]bool{}, o.At, o.At
	}
	if sig := Signature(o); !t.seen[sig] {
		t.seen[sig] = true
		t.States++
		t.lastProgress = o.At
	}
	complete, why := CompleteNow(o)
	t.Why = why
	if complete {
		key := stability(o)
		if t.completeSince.IsZero() || key != t.completeKey {
			t.completeSince, t.completeKey = o.At, key
		}
		if o.At.Sub(t.completeSince) >= t.Settle {
			return Complete
		}
	} else {
		t.completeSince, t.completeKey = time.Time{}, ""
		if o.At.Sub(t.lastProgress) >= t.NoProgress {
			return Stuck
		}
	}
	if o.At.Sub(t.first) >= t.Cap {
		return Undecided
	}
	return Pending
}

// SinceProgress is how long before at the last new state was seen.
func (t *Tracker) SinceProgress(at time.Time) time.Duration { return at.Sub(t.lastProgress) }

// Live returns the faults a stuck history can be blamed on at the end, and the pods terminating
// then. stepRevisions[i] is the update revision the controller computed for step i. A template
// fault is live while its revision is the update revision, some pod runs it, or pods below a
// partition are created from it (the current revision); a quota and a
// claim class stay in force once set; a finalizer is live while it holds a terminating pod.
func Live(h History, stepRevisions []string, o Observation) (faults []Fault, terminating []string) {
	live := map[string]bool{}
	if o.Set != nil {
		live[o.Set.Status.UpdateRevision] = true
		// Ordinals below a partition are created from the current revision.
		if h.Partition > 0 {
			live[o.Set.Status.CurrentRevision] = true
		}
	}
	held := false
	for _, p := range o.Pods {
		live[p.Labels[appsv1.ControllerRevisionHashLabelKey]] = true
		if p.DeletionTimestamp != nil {
			terminating = append(terminating, p.Name)
			held = held || slices.Contains(p.Finalizers, FinalizerName)
		}
	}
	add := func(f Fault) {
		if !slices.Contains(faults, f) {
			faults = append(faults, f)
		}
	}
	for i, f := range h.Steps {
		switch {
		case f == Quota || f == UnknownStorageClass:
			add(f)
		case f == Finalizer:
			if held {
				add(f)
			}
		case i < len(stepRevisions) && stepRevisions[i] != "" && live[stepRevisions[i]]:
			add(f)
		}
	}
	sort.Strings(terminating)
	return faults, terminating
}
