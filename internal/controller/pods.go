package controller

import (
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubectl/pkg/util/podutils"
)

// PodName is the name of the pod of an ordinal (getPodName, stateful_set_utils.go@v1.37.2).
func PodName(set string, ordinal int) string { return set + "-" + strconv.Itoa(ordinal) }

// OrdinalOf parses a pod name of the StatefulSet into its ordinal: the name must be exactly
// set-N with N a decimal without leading zeros.
func OrdinalOf(set, pod string) (int, bool) {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// Revision is the pod's controller-revision-hash label (getPodRevision).
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

// RunningAndReady is isRunningAndReady (stateful_set_utils.go:467@v1.37.2).
func RunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podutils.IsPodReady(pod)
}

// readySince is when the pod became Ready (zero when it is not).
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// notReadySince is when a running pod last stopped being Ready, else when it was created.
func notReadySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return pod.CreationTimestamp.Time
}

func sortDescending(o []Ordinal) {
	sort.Slice(o, func(i, j int) bool { return o[i].Ordinal > o[j].Ordinal })
}
