package snapshot_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

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
