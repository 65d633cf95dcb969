// What the StatefulSet controller defines over plain objects: a pod's name, ordinal and
// revision, Running and Ready, the template a ControllerRevision records, and the pods and
// revisions of each controller.

package controller

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/util/podutils"
)

// PodRevision is the ControllerRevision a pod was created from (its controller-revision-hash
// label holds the revision's full name).
func PodRevision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

// PodName is the name of an ordinal's pod (getPodName, stateful_set_utils.go@v1.37.2).
func PodName(set string, ordinal int) string { return set + "-" + strconv.Itoa(ordinal) }

// ParseOrdinal parses a pod name of the StatefulSet into its ordinal: exactly <set>-<n>, n decimal
// without leading zeros (getParentNameAndOrdinal accepts no other form).
func ParseOrdinal(set, pod string) (int, bool) {
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

// RunningAndReady is the controller's own test (stateful_set_utils.go isRunningAndReady): phase
// Running and the Ready condition true (kubectl's podutils.IsPodReady).
func RunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podutils.IsPodReady(pod)
}

// ReadyCondition is the pod's Ready condition, nil when it has none (podutils keeps its own
// unexported).
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// RevisionTemplate returns the pod template a StatefulSet ControllerRevision records: its own
// JSON without the strategic-merge "$patch" directive (stateful_set_utils.go:567@v1.37.2), and
// that JSON decoded.
func RevisionTemplate(rev *appsv1.ControllerRevision) (json.RawMessage, *corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template map[string]json.RawMessage `json:"template"`
		} `json:"spec"`
	}
	if len(rev.Data.Raw) == 0 {
		return nil, nil, errors.New("no data")
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, nil, err
	}
	if len(data.Spec.Template) == 0 {
		return nil, nil, errors.New("no spec.template")
	}
	delete(data.Spec.Template, "$patch")
	raw, err := json.Marshal(data.Spec.Template)
	if err != nil {
		return nil, nil, err
	}
	var tmpl corev1.PodTemplateSpec
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, nil, err
	}
	return raw, &tmpl, nil
}

// Owned holds the pods and ControllerRevisions of a snapshot by the UID of their controller.
type Owned struct {
	Pods      map[types.UID][]*corev1.Pod
	Revisions map[types.UID][]*appsv1.ControllerRevision
}

// ByController indexes pods and ControllerRevisions by their controller's UID, in their order.
// Objects without a controller are left out.
func ByController(pods []corev1.Pod, revisions []appsv1.ControllerRevision) Owned {
	o := Owned{
		Pods:      make(map[types.UID][]*corev1.Pod, len(revisions)),
		Revisions: make(map[types.UID][]*appsv1.ControllerRevision, len(revisions)),
	}
	for i := range pods {
		if ref := metav1.GetControllerOfNoCopy(&pods[i]); ref != nil {
			o.Pods[ref.UID] = append(o.Pods[ref.UID], &pods[i])
		}
	}
	for i := range revisions {
		if ref := metav1.GetControllerOfNoCopy(&revisions[i]); ref != nil {
			o.Revisions[ref.UID] = append(o.Revisions[ref.UID], &revisions[i])
		}
	}
	return o
}
