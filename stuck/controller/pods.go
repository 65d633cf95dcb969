package controller

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// readySince is when the pod became Ready (zero when it is not).
func readySince(pod *corev1.Pod) time.Time {
	if c := ReadyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// notReadySince is when a running pod last stopped being Ready, else when it was created.
func notReadySince(pod *corev1.Pod) time.Time {
	if c := ReadyCondition(pod); c != nil && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return pod.CreationTimestamp.Time
}

func sortDescending(o []Ordinal) {
	sort.Slice(o, func(i, j int) bool { return o[i].Ordinal > o[j].Ordinal })
}
