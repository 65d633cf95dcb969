package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// steps renders a view as "web-0:Nothing web-1:Create*" (* marks the ordinals that hold).
func steps(v *View) string {
	var out []string
	for _, o := range append(append([]Ordinal{}, v.Ordinals...), v.Condemned...) {
		s := o.Name + ":" + string(o.Next)
		if o.Holds {
			s += "*"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestSync asserts the controller's next step per ordinal for each state processReplica,
// processCondemned and the rolling update distinguish (stateful_set_control.go@v1.37.2).
func TestSync(t *testing.T) {
	old := now.Add(-time.Hour)
	ready := func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod { return readyPod(set, i, rev, old) }
	notReady := func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
		p := readyPod(set, i, rev, old)
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		return p
	}
	pending := func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
		p := readyPod(set, i, rev, old)
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		return p
	}
	phase := func(ph corev1.PodPhase) func(*appsv1.StatefulSet, int, string) *corev1.Pod {
		return func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
			p := readyPod(set, i, rev, old)
			p.Status = corev1.PodStatus{Phase: ph}
			return p
		}
	}
	terminating := func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
		p := readyPod(set, i, rev, old)
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
		return p
	}
	justReady := func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
		return readyPod(set, i, rev, now.Add(-5*time.Second))
	}
	type podAt struct {
		ordinal int
		rev     string
		make    func(*appsv1.StatefulSet, int, string) *corev1.Pod
	}
	cases := []struct {
		name      string
		replicas  int32
		policy    appsv1.PodManagementPolicyType
		strategy  appsv1.StatefulSetUpdateStrategyType
		partition int32
		minReady  int32
		behaviour Behaviour
		pods      []podAt
		want      string
	}{
		{name: "complete", replicas: 3, pods: []podAt{{0, "new", ready}, {1, "new", ready}, {2, "new", ready}},
			want: "web-0:Nothing web-1:Nothing web-2:Nothing"},
		{name: "OrderedReady creates the first missing pod and stops", replicas: 3, pods: []podAt{{0, "new", ready}},
			want: "web-0:Nothing web-1:Create* web-2:NotReached"},
		{name: "Parallel creates every missing pod", replicas: 3, policy: appsv1.ParallelPodManagement, pods: []podAt{{0, "new", ready}},
			want: "web-0:Nothing web-1:Create* web-2:Create*"},
		{name: "OrderedReady waits for a Pending pod", replicas: 3, pods: []podAt{{0, "new", ready}, {1, "new", pending}},
			want: "web-0:Nothing web-1:WaitRunning* web-2:NotReached"},
		{name: "OrderedReady waits for a pod that runs but is not Ready", replicas: 2, pods: []podAt{{0, "new", notReady}, {1, "new", ready}},
			want: "web-0:WaitReady* web-1:NotReached"},
		{name: "minReadySeconds from 1.34", replicas: 2, minReady: 30, behaviour: v1_37, pods: []podAt{{0, "new", justReady}, {1, "new", ready}},
			want: "web-0:WaitAvailable* web-1:NotReached"},
		// The monotonic wait for availability predates 1.34 (stateful_set_control.go:436@v1.33.13).
		{name: "minReadySeconds waits before 1.34 too", replicas: 2, minReady: 30, behaviour: Behaviour{}, pods: []podAt{{0, "new", justReady}, {1, "new", ready}},
			want: "web-0:WaitAvailable* web-1:NotReached"},
		{name: "Recreate deletes every old pod first and creates nothing meanwhile", replicas: 3, strategy: RecreateStrategy, behaviour: v1_37,
			pods: []podAt{{1, "old", ready}, {2, "old", terminating}},
			want: "web-0:NotReached web-1:DeleteToUpdate web-2:WaitTerminated*"},
		{name: "a terminal pod already being deleted is waited for", replicas: 1, behaviour: v1_37,
			pods: []podAt{{0, "new", func(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
				p := phase(corev1.PodFailed)(set, i, rev)
				p.DeletionTimestamp = &metav1.Time{Time: now}
				return p
			}}},
			want: "web-0:WaitTerminated*"},
		{name: "scale down waits for a condemned pod that is not the first unhealthy", replicas: 1,
			pods: []podAt{{0, "new", ready}, {1, "new", notReady}, {2, "new", notReady}},
			want: "web-0:Nothing web-2:WaitReady* web-1:NotReached"},
		{name: "a terminating pod is waited for", replicas: 2, pods: []podAt{{0, "new", terminating}, {1, "new", ready}},
			want: "web-0:WaitTerminated* web-1:NotReached"},
		{name: "a Failed pod is recreated", replicas: 2, pods: []podAt{{0, "new", phase(corev1.PodFailed)}, {1, "new", ready}},
			want: "web-0:RecreateTerminal* web-1:NotReached"},
		{name: "a Succeeded pod is recreated from 1.27", replicas: 1, behaviour: v1_37, pods: []podAt{{0, "new", phase(corev1.PodSucceeded)}},
			want: "web-0:RecreateTerminal*"},
		{name: "a Succeeded pod is waited for forever before 1.27", replicas: 1, behaviour: Behaviour{}, pods: []podAt{{0, "new", phase(corev1.PodSucceeded)}},
			want: "web-0:WaitRunning*"},
		{name: "rolling update deletes the highest old pod", replicas: 3, pods: []podAt{{0, "old", ready}, {1, "old", ready}, {2, "old", ready}},
			want: "web-0:Nothing web-1:Nothing web-2:DeleteToUpdate"},
		{name: "kubernetes#67250: an old pod stuck at startup stops the rollout", replicas: 3, pods: []podAt{{0, "new", ready}, {1, "new", ready}, {2, "old", pending}},
			want: "web-0:Nothing web-1:Nothing web-2:WaitRunning*"},
		{name: "the partition keeps old pods", replicas: 3, partition: 2, pods: []podAt{{0, "old", ready}, {1, "old", ready}, {2, "new", ready}},
			want: "web-0:Nothing web-1:Nothing web-2:Nothing"},
		{name: "an old pod below the partition that should be current", replicas: 2, partition: 1, pods: []podAt{{0, "other", ready}, {1, "new", ready}},
			want: "web-0:WaitManualDelete web-1:Nothing"},
		{name: "OnDelete never replaces", replicas: 2, strategy: appsv1.OnDeleteStatefulSetStrategyType, pods: []podAt{{0, "old", ready}, {1, "old", ready}},
			want: "web-0:WaitManualDelete web-1:WaitManualDelete"},
		{name: "scale down deletes the highest condemned pod first", replicas: 1, pods: []podAt{{0, "new", ready}, {1, "new", ready}, {2, "new", ready}},
			want: "web-0:Nothing web-2:DeleteToScaleDown* web-1:NotReached"},
		{name: "scale down waits for a terminating condemned pod", replicas: 1, pods: []podAt{{0, "new", ready}, {1, "new", terminating}},
			want: "web-0:Nothing web-1:WaitTerminated*"},
		{name: "Parallel deletes an old pod stuck at startup (classic path)", replicas: 2, policy: appsv1.ParallelPodManagement,
			pods: []podAt{{0, "new", ready}, {1, "old", pending}},
			want: "web-0:Nothing web-1:DeleteToUpdate*"},
		{name: "Parallel on 1.35.3: the budget used up, nothing deleted (kubernetes#137409)", replicas: 2, policy: appsv1.ParallelPodManagement,
			behaviour: Behaviour{MaxUnavailable: true, AvailabilityHonoursMinReady: true, SucceededRecreated: true},
			pods:      []podAt{{0, "old", ready}, {1, "old", pending}},
			want:      "web-0:Nothing web-1:WaitRunning*"},
		{name: "Recreate with its gate off changes nothing", replicas: 1, strategy: RecreateStrategy, behaviour: Behaviour{RecreateOff: true},
			pods: []podAt{{0, "old", ready}},
			want: "web-0:NotReached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := statefulSet("web", c.replicas, c.policy)
			set.Spec.MinReadySeconds = c.minReady
			if c.strategy != "" {
				set.Spec.UpdateStrategy.Type = c.strategy
			}
			if c.partition > 0 {
				set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(c.partition)}
			}
			var pods []*corev1.Pod
			for _, p := range c.pods {
				pods = append(pods, p.make(set, p.ordinal, "web-"+p.rev))
			}
			v := Sync(Inputs{Set: set, Pods: pods, Update: "web-new", Now: now, Behaviour: c.behaviour})
			if got := steps(v); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestMissingSince: a missing pod is due from its predecessor's availability under OrderedReady,
// and never before the update revision was created.
func TestMissingSince(t *testing.T) {
	set := statefulSet("web", 3, "")
	readyAt := now.Add(-10 * time.Minute)
	pods := []*corev1.Pod{readyPod(set, 0, "web-new", readyAt.Add(-time.Minute)), readyPod(set, 1, "web-new", readyAt)}
	cases := []struct {
		updateCreated time.Time
		want          time.Time
	}{
		{time.Time{}, readyAt},
		{now.Add(-time.Minute), now.Add(-time.Minute)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.updateCreated), func(t *testing.T) {
			v := Sync(Inputs{Set: set, Pods: pods, Update: "web-new", UpdateCreated: c.updateCreated, Now: now})
			if o := v.Ordinals[2]; o.Next != Create || !o.Since.Equal(c.want) {
				t.Errorf("web-2: %s since %s, want Create since %s", o.Next, o.Since, c.want)
			}
		})
	}
}
