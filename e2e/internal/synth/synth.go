// Package synth generates a synthetic cluster of StatefulSets with a known mix of healthy,
// stuck (kubernetes#67250) and unresolved-ImageStream sets, for the benchmark.
package synth

import (
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// Digest every synthetic ImageStream tag points at.
const Digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// Cluster is the generated objects; statuses are set as the controllers would have.
type Cluster struct {
	Namespaces   []string
	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	Revisions    []appsv1.ControllerRevision
	PVCs         []corev1.PersistentVolumeClaim
	ImageStreams []imagev1.ImageStream
	// The realistic mix's other objects (Realistic); none in Generate's cluster.
	Nodes       []corev1.Node
	Deployments []appsv1.Deployment
	ReplicaSets []appsv1.ReplicaSet
	DaemonSets  []appsv1.DaemonSet
	Jobs        []batchv1.Job
	Services    []corev1.Service
	Events      []corev1.Event
	// Deep are the namespaces holding a StatefulSet of a kind that is not healthy: every such
	// kind writes a status short of its replicas (controller.StatusSettled is false), so a triaged
	// check -A reads these namespaces deep, and only these.
	Deep []string
	// Expected counts findings by code.
	Expected map[string]int
}

// Kind of a synthetic StatefulSet: i%10 == 0 stuck, == 1 unresolved, else healthy.
func Kind(i int) string {
	switch i % 10 {
	case 0:
		return "stuck"
	case 1:
		return "unresolved"
	}
	return "healthy"
}

// Generate builds sets StatefulSets of replicas pods each, spread over namespaces. uids are
// assigned so the objects can also be diagnosed in memory.
func Generate(sets, replicas, namespaces int) *Cluster {
	c := &Cluster{Expected: map[string]int{}}
	for n := 0; n < namespaces; n++ {
		c.Namespaces = append(c.Namespaces, fmt.Sprintf("bench-%03d", n))
	}
	for i := 0; i < sets; i++ {
		ns := c.Namespaces[i%namespaces]
		name := fmt.Sprintf("set-%05d", i)
		kind := Kind(i)
		uid := types.UID(fmt.Sprintf("uid-%s", name))
		labels := map[string]string{"app": name}
		image := "registry.k8s.io/app:1"
		if kind == "unresolved" {
			image = name + ":1.0"
		}
		current, update := name+"-a", name+"-a"
		if kind == "stuck" {
			current, update = name+"-a", name+"-c"
		}
		set := appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, Labels: labels, Generation: 1},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
			},
		}
		ready := int32(replicas)
		if kind != "healthy" {
			ready--
		}
		set.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: int32(replicas), ReadyReplicas: ready, AvailableReplicas: ready,
			CurrentReplicas: int32(replicas), UpdatedReplicas: int32(replicas), CurrentRevision: current, UpdateRevision: update}
		if kind == "stuck" {
			set.Status.UpdatedReplicas = 0
		}
		c.StatefulSets = append(c.StatefulSets, set)
		owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: uid, Controller: ptr.To(true)}}
		revs := []string{name + "-a"}
		if kind == "stuck" {
			revs = append(revs, name+"-b", name+"-c")
		}
		for r, rev := range revs {
			c.Revisions = append(c.Revisions, appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{Name: rev, Namespace: ns, Labels: labels, OwnerReferences: owner},
				Revision:   int64(r + 1),
				Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"` + name + `"}},"spec":{"containers":[{"name":"app","image":"` + image + `"}]}}}}`)},
			})
		}
		for o := 0; o < replicas; o++ {
			podName := fmt.Sprintf("%s-%d", name, o)
			claim := "data-" + podName
			rev := update
			pod := corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, UID: types.UID("uid-" + podName), OwnerReferences: owner,
					Labels: map[string]string{"app": name, appsv1.ControllerRevisionHashLabelKey: rev,
						// As the controller labels every pod it creates (initIdentity): watch -A
						// holds the pods that carry the pod-name label.
						appsv1.StatefulSetPodNameLabel: podName, appsv1.PodIndexLabel: fmt.Sprint(o)}},
				Spec: corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "app", Image: image}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			}
			running := corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: image, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
			pod.Status = running
			switch {
			case kind == "stuck" && o == replicas-1:
				pod.Labels[appsv1.ControllerRevisionHashLabelKey] = name + "-b"
				pod.Status = waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=app")
			case kind == "stuck":
				pod.Labels[appsv1.ControllerRevisionHashLabelKey] = name + "-a"
			case kind == "unresolved" && o == 0:
				pod.Status = waiting("ImagePullBackOff", "Back-off pulling image \""+image+"\"")
			}
			c.Pods = append(c.Pods, pod)
			c.PVCs = append(c.PVCs, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			})
		}
		if kind != "healthy" {
			c.unsettled(ns)
		}
		switch kind {
		case "stuck":
			c.Expected[string(apiv1.StaleRevisionStuck)]++
		case "unresolved":
			c.Expected[string(apiv1.UnresolvedImageReference)]++
			c.Expected[string(apiv1.CurrentRevisionFailing)]++
			c.ImageStreams = append(c.ImageStreams, imagev1.ImageStream{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
					Tags: []imagev1.TagReference{{Name: "1.0", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}}}},
				Status: imagev1.ImageStreamStatus{DockerImageRepository: "image-registry.openshift-image-registry.svc:5000/" + ns + "/" + name,
					Tags: []imagev1.NamedTagEventList{{Tag: "1.0", Items: []imagev1.TagEvent{{Image: Digest, DockerImageReference: "quay.io/example/" + name + "@" + Digest}}}}},
			})
		}
	}
	return c
}

func waiting(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}, LastTerminationState: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}
}

// Snapshot is the cluster as an in-memory snapshot (OpenShift on), as check -A reads it.
func (c *Cluster) Snapshot() *stuck.Objects {
	return &stuck.Objects{StatefulSets: c.StatefulSets, Pods: c.Pods, Revisions: c.Revisions, PVCs: c.PVCs,
		ImageStreams: c.ImageStreams, Services: c.Services, ServicesListed: true, Events: c.Events,
		Nodes: c.Nodes, NodesListed: true, OpenShift: true}
}

// Objects counts the objects the bench creates (namespaces and their ServiceAccounts aside).
func (c *Cluster) Objects() int {
	return len(c.StatefulSets) + len(c.Pods) + len(c.Revisions) + len(c.PVCs) + len(c.ImageStreams) + len(c.Nodes) +
		len(c.Deployments) + len(c.ReplicaSets) + len(c.DaemonSets) + len(c.Jobs) + len(c.Services) + len(c.Events)
}

// unsettled records namespace ns as holding an unsettled StatefulSet.
func (c *Cluster) unsettled(ns string) {
	if len(c.Deep) == 0 || c.Deep[len(c.Deep)-1] != ns {
		for _, d := range c.Deep {
			if d == ns {
				return
			}
		}
		c.Deep = append(c.Deep, ns)
	}
}

// PullBackOff is the status of a pod whose container "app" cannot pull image: waiting in
// ImagePullBackOff, not Ready. Written over a Running and Ready pod on its StatefulSet's update
// revision, it makes the new finding CurrentRevisionFailing for that pod (the watch load bench).
func PullBackOff(image string) corev1.PodStatus {
	return waiting("ImagePullBackOff", "Back-off pulling image \""+image+"\"")
}
