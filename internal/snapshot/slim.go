package snapshot

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// lastApplied is kubectl's copy of the whole object, often the largest annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Slim keeps what diagnosis reads of an object, in place: managedFields and kubectl's
// last-applied copy go from every object; a pod keeps only its containers' names, images and restart policies (sidecars), its
// claim volumes, node, grace period and status; a claim its class and phase (its sizes and access
// modes are maps and slices no rule reads); a node only its conditions (its status lists every
// image it holds). Gathering applies it to every object it reads (a cache.TransformFunc), so
// informer caches of large clusters hold a fraction of the objects (watch's memory target). The
// scenario tests (snapshottest.Run) apply it too: a rule reading a field it drops fails there.
func Slim(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		slimPod(o)
	case *corev1.Node:
		o.Status = corev1.NodeStatus{Conditions: o.Status.Conditions}
	case *corev1.PersistentVolumeClaim:
		o.Spec = corev1.PersistentVolumeClaimSpec{StorageClassName: o.Spec.StorageClassName}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}
	}
	return obj, nil
}

func slimPod(pod *corev1.Pod) {
	spec := corev1.PodSpec{
		NodeName:                      pod.Spec.NodeName,
		TerminationGracePeriodSeconds: pod.Spec.TerminationGracePeriodSeconds,
		InitContainers:                nameAndImage(pod.Spec.InitContainers),
		Containers:                    nameAndImage(pod.Spec.Containers),
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		}
	}
	pod.Spec = spec
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions,
		InitContainerStatuses: pod.Status.InitContainerStatuses, ContainerStatuses: pod.Status.ContainerStatuses}
}

func nameAndImage(containers []corev1.Container) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy}
	}
	return out
}
