package snapshot

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// lastApplied is kubectl's copy of the whole object, often the largest annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Slim keeps what diagnosis reads of an object, in place: managedFields and kubectl's
// last-applied copy go from every object; a pod keeps only its containers' names, images and restart policies (sidecars), its
// claim volumes, node, grace period and status (phase, conditions, and of each container status
// its name, state, last state, readiness, restart count, image and image ID); a claim its class and phase (its sizes and access
// modes are maps and slices no rule reads); a node only its conditions (its status lists every
// image it holds); a Service its selector, cluster IP and type (the governing Service check: its
// ports, cluster IPs, families and policies are not read). Gathering applies it to every object it reads (a cache.TransformFunc), so
// informer caches of large clusters hold a fraction of the objects (watch's memory target). The
// scenario tests (snapshottest.Run) apply it too: a rule reading a field it drops fails there.
func Slim(obj any) (any, error) {
	SlimInPlace(obj)
	return obj, nil
}

// SlimInPlace is Slim for a reader's own objects: it slims obj where it is (Slim, with the
// signature of a cache.TransformFunc, never fails either).
func SlimInPlace(obj any) {
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
	case *corev1.Service:
		o.Spec = corev1.ServiceSpec{Selector: o.Spec.Selector, ClusterIP: o.Spec.ClusterIP, Type: o.Spec.Type}
		o.Status = corev1.ServiceStatus{}
	case *corev1.PersistentVolumeClaim:
		o.Spec = corev1.PersistentVolumeClaimSpec{StorageClassName: o.Spec.StorageClassName}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase}
	}
}

// SlimSettled is Slim for caches of every StatefulSet of the cluster (watch -A): a StatefulSet
// whose own status says its rollout is over (controller.StatusSettled) also loses what diagnosis does
// not read of a settled set — of its pod template's spec all but each container's name, image,
// restart policy and liveness probe (the image lookup, openshift's verbs, rollout.Settled's
// liveness window), and its claim templates. Its metadata, the template's metadata, the rest of
// its spec and its status stay. A watch event carries the whole object, so a set whose status
// stops saying so (a pod fails, its template changes) is held whole again from that event on.
// The StatefulSet slimmed is a copy (the object given may be shared with a diagnosis under way).
// The scenario runner diagnoses every testdata scenario through it (snapshottest.Run).
func SlimSettled(obj any) (any, error) {
	set, ok := obj.(*appsv1.StatefulSet)
	if !ok || !controller.StatusSettled(set) {
		return Slim(obj)
	}
	spec := settledSpec(&set.Spec.Template.Spec)
	if set.Spec.VolumeClaimTemplates == nil && reflect.DeepEqual(spec, set.Spec.Template.Spec) {
		return Slim(set) // slimmed before (SlimSettledInPlace): kept as it is, not copied
	}
	c := *set
	c.Spec.Template.Spec, c.Spec.VolumeClaimTemplates = spec, nil
	return Slim(&c)
}

// SlimSettledInPlace is SlimSettled on an object no one else holds yet (a page just decoded, the
// first LISTs of watch -A's caches): a settled StatefulSet is slimmed itself, so its template is
// never held while the caches fill.
func SlimSettledInPlace(obj any) {
	if set, ok := obj.(*appsv1.StatefulSet); ok && controller.StatusSettled(set) {
		set.Spec.Template.Spec, set.Spec.VolumeClaimTemplates = settledSpec(&set.Spec.Template.Spec), nil
	}
	_, _ = Slim(obj)
}

// settledSpec is what SlimSettled keeps of a settled StatefulSet's pod template spec.
func settledSpec(spec *corev1.PodSpec) corev1.PodSpec {
	return corev1.PodSpec{InitContainers: settledContainers(spec.InitContainers), Containers: settledContainers(spec.Containers)}
}

// settledContainers keeps what diagnosis reads of a settled StatefulSet's containers.
func settledContainers(containers []corev1.Container) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy, LivenessProbe: c.LivenessProbe}
	}
	return out
}

func slimPod(pod *corev1.Pod) {
	spec := corev1.PodSpec{
		NodeName:                      pod.Spec.NodeName,
		TerminationGracePeriodSeconds: pod.Spec.TerminationGracePeriodSeconds,
		InitContainers:                nameAndImage(pod.Spec.InitContainers),
		Containers:                    nameAndImage(pod.Spec.Containers),
		Volumes:                       pod.Spec.Volumes,
	}
	if len(pod.Spec.Volumes) == 0 || !claimsOnly(pod.Spec.Volumes) {
		spec.Volumes = nil
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: v.Name,
					VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
			}
		}
	}
	pod.Spec = spec
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions,
		InitContainerStatuses: keptStatuses(pod.Status.InitContainerStatuses), ContainerStatuses: keptStatuses(pod.Status.ContainerStatuses)}
}

// keptStatus is what diagnosis reads of a container status: not its container ID, started flag,
// resources, volume mounts, user or stop signal.
func keptStatus(c corev1.ContainerStatus) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, State: c.State, LastTerminationState: c.LastTerminationState, Ready: c.Ready,
		RestartCount: c.RestartCount, Image: c.Image, ImageID: c.ImageID}
}

// keptStatuses keeps what keptStatus keeps of each status; a slice that holds nothing else is
// kept as it is, not copied (as nameAndImage).
func keptStatuses(statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	slim := true
	for _, c := range statuses {
		if !reflect.DeepEqual(c, keptStatus(c)) {
			slim = false
			break
		}
	}
	if statuses == nil || slim {
		return statuses
	}
	out := make([]corev1.ContainerStatus, len(statuses))
	for i, c := range statuses {
		out[i] = keptStatus(c)
	}
	return out
}

// nameAndImage keeps a container's name, image and restart policy. A slice that holds nothing
// else (slimpb decoded it so, or Slim ran before) is kept as it is, not copied: the informers
// apply Slim to objects slimpb already slimmed, and a copy per pod was 100 MB of garbage at 150k
// pods while the caches fill.
func nameAndImage(containers []corev1.Container) []corev1.Container {
	if containers == nil || slimContainers(containers) {
		return containers
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy}
	}
	return out
}

// slimContainers reports whether the containers hold nothing but what nameAndImage keeps.
func slimContainers(containers []corev1.Container) bool {
	for _, c := range containers {
		c.Name, c.Image, c.RestartPolicy = "", "", nil
		if !reflect.ValueOf(c).IsZero() {
			return false
		}
	}
	return true
}

// claimsOnly reports whether every volume is a claim with nothing but its name and source.
func claimsOnly(volumes []corev1.Volume) bool {
	for _, v := range volumes {
		if v.PersistentVolumeClaim == nil {
			return false
		}
		v.Name, v.PersistentVolumeClaim = "", nil
		if !reflect.ValueOf(v).IsZero() {
			return false
		}
	}
	return true
}
