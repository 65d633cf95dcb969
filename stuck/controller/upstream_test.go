package controller

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 12, 12, 0, 0, 0, time.UTC)

// The table of TestStatefulSetControlRollingUpdateWithMaxUnavailableAndUnavailableStalePod,
// pkg/controller/statefulset/stateful_set_control_test.go:1270-1560@v1.37.2, ported: every pod
// runs the old revision and is available, the listed ordinals are made unavailable (not Ready,
// terminating, or Ready for less than minReadySeconds), and updateStatefulSetAfterInvariantEstablished
// runs once. Upstream asserts the pods that remain; deleted = all - remaining.
func TestUpstreamRollingUpdateWithMaxUnavailable(t *testing.T) {
	const (
		notReady       = "notReady"
		terminated     = "terminated"
		withinMinReady = "withinMinReady"
	)
	cases := []struct {
		name           string
		policy         appsv1.PodManagementPolicyType
		replicas       int32
		partition      int32
		maxUnavailable int32
		minReady       int32
		unavailable    map[int]string
		remaining      []int
	}{
		{"Parallel/single replica: unavailable pod on old revision must be updated", appsv1.ParallelPodManagement, 1, 0, 1, 0, map[int]string{0: notReady}, []int{}},
		{"Parallel/3 replicas, highest-ordinal pod unavailable on old revision", appsv1.ParallelPodManagement, 3, 0, 1, 0, map[int]string{2: notReady}, []int{0, 1}},
		{"Parallel/5 replicas, 2 pods unavailable on old revision", appsv1.ParallelPodManagement, 5, 0, 2, 0, map[int]string{3: notReady, 4: notReady}, []int{0, 1, 2}},
		{"OrderedReady/single replica: unavailable pod on old revision blocks update", appsv1.OrderedReadyPodManagement, 1, 0, 1, 0, map[int]string{0: notReady}, []int{0}},
		{"OrderedReady/3 replicas, highest-ordinal pod unavailable on old revision blocks update", appsv1.OrderedReadyPodManagement, 3, 0, 1, 0, map[int]string{2: notReady}, []int{0, 1, 2}},
		{"OrderedReady/5 replicas, 2 pods unavailable on old revision blocks update", appsv1.OrderedReadyPodManagement, 5, 0, 2, 0, map[int]string{4: notReady}, []int{0, 1, 2, 3}},
		{"Parallel/3 replicas, highest-ordinal pod terminating on old revision: budget consumed, next pod must NOT be deleted", appsv1.ParallelPodManagement, 3, 0, 1, 0, map[int]string{2: terminated}, []int{0, 1, 2}},
		{"OrderedReady/3 replicas, highest-ordinal pod terminating on old revision blocks update", appsv1.OrderedReadyPodManagement, 3, 0, 1, 0, map[int]string{2: terminated}, []int{0, 1, 2}},
		{"Parallel/5 replicas maxUnavailable=3, pod-4 terminating + pod-3 crashlooping: only 1 more pods should be deleted", appsv1.ParallelPodManagement, 5, 0, 3, 0, map[int]string{3: notReady, 4: terminated}, []int{0, 1, 4}},
		{"Parallel/3 replicas, highest-ordinal pod ready but within minReadySeconds on old revision: pod gets deleted", appsv1.ParallelPodManagement, 3, 0, 1, 30, map[int]string{2: withinMinReady}, []int{0, 1}},
		{"OrderedReady/3 replicas, highest-ordinal pod ready but within minReadySeconds on old revision blocks update", appsv1.OrderedReadyPodManagement, 3, 0, 1, 30, map[int]string{2: withinMinReady}, []int{0, 1, 2}},
		{"Parallel/5 replicas, pod-3 unavailable + pod-4 terminating on old revision, only 1 more pods should be deleted", appsv1.ParallelPodManagement, 5, 0, 3, 0, map[int]string{3: notReady, 4: terminated}, []int{0, 1, 4}},
		{"Parallel/5 replicas, pod-3 terminating + pod-4 unavailable on old revision, only 1 more pods should be deleted", appsv1.ParallelPodManagement, 5, 0, 3, 0, map[int]string{3: terminated, 4: notReady}, []int{0, 1, 3}},
		{"OrderedReady/5 replicas, 1 pod unavailable(#3) + 1 pod terminating(#4) on old revision", appsv1.OrderedReadyPodManagement, 5, 0, 3, 0, map[int]string{3: notReady, 4: terminated}, []int{0, 1, 2, 4}},
		{"OrderedReady/5 replicas, 1 pod terminating(#3) + 1 pod unavailable(#4) on old revision", appsv1.OrderedReadyPodManagement, 5, 0, 3, 0, map[int]string{3: terminated, 4: notReady}, []int{0, 1, 2, 3}},
		{"Parallel/5 replicas partition=2: unavailable pod in update range (#4) gets deleted", appsv1.ParallelPodManagement, 5, 2, 1, 0, map[int]string{4: notReady}, []int{0, 1, 2, 3}},
		{"Parallel/5 replicas partition=2: unavailable pod at partition boundary (#2) gets deleted, highest stale pod (#4) is unaffected", appsv1.ParallelPodManagement, 5, 2, 1, 0, map[int]string{2: notReady}, []int{0, 1, 3, 4}},
		{"Parallel/5 replicas partition=2: unavailable pod below partition (#1) consumes budget, no update", appsv1.ParallelPodManagement, 5, 2, 1, 0, map[int]string{1: notReady}, []int{0, 1, 2, 3, 4}},
		{"OrderedReady/5 replicas partition=2: unavailable pod in update range (#4) blocks update", appsv1.OrderedReadyPodManagement, 5, 2, 1, 0, map[int]string{4: notReady}, []int{0, 1, 2, 3, 4}},
		{"Parallel/5 replicas partition=3 maxUnavailable=2: both update-range pods unavailable, both get deleted", appsv1.ParallelPodManagement, 5, 3, 2, 0, map[int]string{3: notReady, 4: notReady}, []int{0, 1, 2}},
		{"Parallel/5 replicas partition=3 maxUnavailable=2: pod below partition (#1) + pod in range (#4) unavailable, one pod deleted", appsv1.ParallelPodManagement, 5, 3, 2, 0, map[int]string{1: notReady, 4: notReady}, []int{0, 1, 2, 3}},
		{"Parallel/4 replicas maxUnavailable=2: lower-ordinal unavailable pods get deleted, higher-ordinal good pods must stay", appsv1.ParallelPodManagement, 4, 0, 2, 0, map[int]string{0: notReady, 1: notReady}, []int{2, 3}},
		{"Parallel/5 replicas maxUnavailable=3: 2 lower-ordinal unavailable pods deleted first, 1 good pod from the top", appsv1.ParallelPodManagement, 5, 0, 3, 0, map[int]string{0: notReady, 1: notReady}, []int{2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := statefulSet("web", c.replicas, c.policy)
			set.Spec.MinReadySeconds = c.minReady
			set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{
				Partition: ptr.To(c.partition), MaxUnavailable: ptr.To(intstr.FromInt32(c.maxUnavailable))}
			var pods []*corev1.Pod
			for i := 0; i < int(c.replicas); i++ {
				pod := readyPod(set, i, "web-old", now.Add(-time.Duration(c.minReady+60)*time.Second))
				switch c.unavailable[i] {
				case notReady:
					pod.Status.Conditions[0].Status = corev1.ConditionFalse
				case terminated:
					pod.DeletionTimestamp = &metav1.Time{Time: now}
				case withinMinReady:
					pod.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now)
				}
				pods = append(pods, pod)
			}
			v := newView(Inputs{Set: set, Pods: pods, Update: "web-new", Now: now, Behaviour: v1_37})
			deleted := map[int]bool{}
			for _, i := range v.RollingDeletes() {
				deleted[i] = true
			}
			var remaining []int
			for i := 0; i < int(c.replicas); i++ {
				if !deleted[i] {
					remaining = append(remaining, i)
				}
			}
			if fmt.Sprint(remaining) != fmt.Sprint(c.remaining) && !(len(remaining) == 0 && len(c.remaining) == 0) {
				t.Errorf("remaining %v, want %v", remaining, c.remaining)
			}
		})
	}
}

// v1_37 is the controller of Kubernetes 1.37 (MaxUnavailableStatefulSet on by default).
var v1_37 = Behaviour{MaxUnavailable: true, ParallelTwoPhase: true, AvailabilityHonoursMinReady: true, SucceededRecreated: true}

func statefulSet(name string, replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "set-uid", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), PodManagementPolicy: policy,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{CurrentRevision: name + "-old", UpdateRevision: name + "-new"},
	}
}

func readyPod(set *appsv1.StatefulSet, ordinal int, revision string, readySince time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(set.Name, ordinal), Namespace: set.Namespace,
			Labels:            map[string]string{appsv1.ControllerRevisionHashLabelKey: revision},
			CreationTimestamp: metav1.NewTime(readySince.Add(-10 * time.Second))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}},
	}
}
