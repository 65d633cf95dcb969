package rollout_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

func TestComplete(t *testing.T) {
	done := appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3,
		CurrentRevision: "web-b", UpdateRevision: "web-b"}
	cases := []struct {
		name     string
		strategy appsv1.StatefulSetUpdateStrategy
		status   func(*appsv1.StatefulSetStatus)
		want     bool
	}{
		{"every replica ready and available on the update revision", appsv1.StatefulSetUpdateStrategy{}, func(*appsv1.StatefulSetStatus) {}, true},
		{"spec not observed", appsv1.StatefulSetUpdateStrategy{}, func(s *appsv1.StatefulSetStatus) { s.ObservedGeneration = 1 }, false},
		{"ready but not yet available (minReadySeconds)", appsv1.StatefulSetUpdateStrategy{}, func(s *appsv1.StatefulSetStatus) { s.AvailableReplicas = 2 }, false},
		{"an extra pod still terminating", appsv1.StatefulSetUpdateStrategy{}, func(s *appsv1.StatefulSetStatus) { s.Replicas = 4 }, false},
		// kubectl rollout status says complete here (rollingUpdate block, no partition); stsdiag does not.
		{"ready pods on the old revision", appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{}}, func(s *appsv1.StatefulSetStatus) { s.UpdatedReplicas, s.CurrentRevision = 0, "web-a" }, false},
		{"partition 2: one updated pod is enough", appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}, func(s *appsv1.StatefulSetStatus) { s.UpdatedReplicas, s.CurrentRevision = 1, "web-a" }, true},
		{"OnDelete with pods on the old revision", appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			func(s *appsv1.StatefulSetStatus) { s.UpdatedReplicas, s.CurrentRevision = 1, "web-a" }, false},
		// Up to 1.36 the controller never moves currentRevision for OnDelete.
		{"OnDelete with every pod updated", appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			func(s *appsv1.StatefulSetStatus) { s.CurrentRevision = "web-a" }, true},
	}
	for _, c := range cases {
		set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: c.strategy}, Status: done}
		c.status(&set.Status)
		if got := controller.StatusComplete(set); got != c.want {
			t.Errorf("%s: Complete = %v, want %v", c.name, got, c.want)
		}
	}
}
