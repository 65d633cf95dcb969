package controller_test

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// kubernetes#67250 in the controller's own terms: web-0 runs the old revision and fails to pull
// its image; the template was fixed (revision web-good). Under OrderedReady the next sync waits
// for web-0 to be Running and Ready, so it neither replaces web-0 nor creates web-1 and web-2.
func ExampleSync() {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "web-bad", UpdateRevision: "web-good"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "web-bad"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	v := controller.Sync(controller.Inputs{Set: set, Pods: []*corev1.Pod{pod}, Update: "web-good", Now: now})
	for _, o := range v.Ordinals {
		fmt.Printf("%s revision=%q next=%s holds=%t\n", o.Name, o.Revision, o.Next, o.Holds)
	}
	// Output:
	// web-0 revision="web-bad" next=WaitRunning holds=true
	// web-1 revision="" next=NotReached holds=false
	// web-2 revision="" next=NotReached holds=false
}
