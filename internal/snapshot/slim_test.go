package snapshot_test

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// A pod slimmed once (as slimpb decodes it) keeps its containers, volumes and container statuses as they are when
// slimmed again (the informers' transform), without a copy; a pod that is not slim yet is
// slimmed.
func TestSlimKeepsSlimSlices(t *testing.T) {
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}
	rich := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
		Volumes:    []corev1.Volume{claim, {Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha", RestartCount: 2,
		ContainerID: "containerd://c1", Started: ptr.To(true)}}}}
	if _, err := snapshot.Slim(rich); err != nil {
		t.Fatal(err)
	}
	if want := []corev1.Container{{Name: "app", Image: "app:1"}}; !reflect.DeepEqual(rich.Spec.Containers, want) {
		t.Errorf("containers %+v; want %+v", rich.Spec.Containers, want)
	}
	if want := []corev1.Volume{claim}; !reflect.DeepEqual(rich.Spec.Volumes, want) {
		t.Errorf("volumes %+v; want %+v", rich.Spec.Volumes, want)
	}
	if want := []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha", RestartCount: 2}}; !reflect.DeepEqual(rich.Status.ContainerStatuses, want) {
		t.Errorf("container statuses %+v; want %+v", rich.Status.ContainerStatuses, want)
	}
	containers, volumes, statuses := &rich.Spec.Containers[0], &rich.Spec.Volumes[0], &rich.Status.ContainerStatuses[0]
	if _, err := snapshot.Slim(rich); err != nil {
		t.Fatal(err)
	}
	if &rich.Spec.Containers[0] != containers || &rich.Spec.Volumes[0] != volumes || &rich.Status.ContainerStatuses[0] != statuses {
		t.Error("slimming a slim pod again copied its containers, volumes or container statuses")
	}
}

// A StatefulSet whose status says settled is held as a copy with its template's containers'
// names, images, restart policies and liveness probes, its template's metadata and the rest of
// its spec and status; the object given is not changed. One whose status does not say so (a pod
// not Ready, a spec not observed) is held whole. A settled set keeps rollout.Settled's verdict:
// a pod Ready for 20 s under a 30 s liveness window (10 s × 3 failures) has not settled.
func TestSlimSettled(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	probe := &corev1.Probe{PeriodSeconds: 10, FailureThreshold: 3, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}
	sidecar := corev1.ContainerRestartPolicyAlways
	set := func() *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid", Generation: 2, Annotations: map[string]string{"a": "b"}},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"t": "u"}},
					Spec: corev1.PodSpec{
						InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &sidecar, Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
						Containers:     []corev1.Container{{Name: "app", Image: "app:2", LivenessProbe: probe, ReadinessProbe: probe, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
						Volumes:        []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
						NodeSelector:   map[string]string{"disk": "ssd"}}},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1, CurrentReplicas: 1,
				CurrentRevision: "web-2", UpdateRevision: "web-2"}}
	}
	settled := set()
	out, err := snapshot.SlimSettled(settled)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(settled, set()) {
		t.Error("SlimSettled changed the StatefulSet it was given")
	}
	want := set()
	want.Spec.Template.Spec = corev1.PodSpec{InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &sidecar}},
		Containers: []corev1.Container{{Name: "app", Image: "app:2", LivenessProbe: probe}}}
	want.Spec.VolumeClaimTemplates = nil
	if !reflect.DeepEqual(out, want) {
		t.Errorf("settled: got %+v\nwant %+v", out, want)
	}
	inPlace := set()
	snapshot.SlimSettledInPlace(inPlace)
	if !reflect.DeepEqual(inPlace, want) {
		t.Errorf("in place: got %+v\nwant %+v", inPlace, want)
	}
	if again, _ := snapshot.SlimSettled(inPlace); again != any(inPlace) {
		t.Error("SlimSettled copied a StatefulSet slimmed before")
	}
	ready := metav1.NewTime(now.Add(-20 * time.Second))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ready}}}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "proxy", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ready}}}}}}
	for name, s := range map[string]*appsv1.StatefulSet{"whole": set(), "slimmed": out.(*appsv1.StatefulSet)} {
		if ok, u := rollout.Settled(s, []*corev1.Pod{pod}, now, time.Second); ok || u.Need != 30*time.Second {
			t.Errorf("%s: rollout.Settled %v, needs %v; want false, 30s (the liveness window)", name, ok, u.Need)
		}
	}
	for name, change := range map[string]func(*appsv1.StatefulSet){
		"a pod not Ready":       func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 0 },
		"a spec not observed":   func(s *appsv1.StatefulSet) { s.Generation = 3 },
		"an update in progress": func(s *appsv1.StatefulSet) { s.Status.UpdateRevision = "web-3" },
	} {
		s := set()
		change(s)
		kept := s.DeepCopy()
		out, err := snapshot.SlimSettled(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, kept) {
			t.Errorf("%s: slimmed to %+v; want it whole", name, out)
		}
	}
}
