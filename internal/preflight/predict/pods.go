package predict

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Planned is a pod the controller would create, or delete and create again, once it syncs the
// applied StatefulSet.
type Planned struct {
	Ordinal int
	Name    string
	Action  apiv1.PodAction
	// Revision is the revision it is created from; Pod is the pod as the controller builds it.
	Revision string
	Pod      *corev1.Pod
	// Old is the pod a Replace deletes first.
	Old *corev1.Pod
	// Claims are the PersistentVolumeClaims the controller creates for it before the pod (those
	// that do not exist yet), in template order.
	Claims []corev1.PersistentVolumeClaim
}

// Plan lists the pods the controller creates or replaces for the applied StatefulSet set, whose
// update revision is update: each missing ordinal, lowest first (the replicas loop of
// updateStatefulSet, stateful_set_control.go@v1.37.2, creates them in ordinal order, one at a
// time under OrderedReady), then under RollingUpdate each pod at or above the partition on
// another revision, highest first (the rolling update replaces from the highest ordinal down to
// the partition). A missing ordinal below the partition is created from the current revision
// (newVersionedStatefulSetPod, stateful_set_utils.go:535-548), whose template is current.
// OnDelete replaces no pod by itself; neither does Recreate, an alpha strategy whose gate is off
// by default.
//
// pods are the set's pods by ordinal; claims the names of the claims that exist in the
// namespace.
func Plan(set *appsv1.StatefulSet, current string, currentTemplate *corev1.PodTemplateSpec, update string, pods map[int]*corev1.Pod, claims map[string]bool) []Planned {
	start, replicas := 0, int(controller.Replicas(set))
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	partition := 0
	rolling := set.Spec.UpdateStrategy.Type == "" || set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType
	if rolling && set.Spec.UpdateStrategy.RollingUpdate != nil && set.Spec.UpdateStrategy.RollingUpdate.Partition != nil {
		partition = int(*set.Spec.UpdateStrategy.RollingUpdate.Partition)
	}
	if current == "" {
		current, currentTemplate = update, nil
	}
	var out []Planned
	for o := start; o < start+replicas; o++ {
		if pods[o] != nil {
			continue
		}
		revision, template := update, &set.Spec.Template
		if rolling && o < start+partition && currentTemplate != nil {
			revision, template = current, currentTemplate
		}
		p := Planned{Ordinal: o, Name: controller.PodName(set.Name, o), Action: apiv1.PodCreate, Revision: revision,
			Pod: NewPod(set, template, revision, o)}
		for _, c := range NewClaims(set, o) {
			if !claims[c.Name] {
				p.Claims = append(p.Claims, c)
			}
		}
		out = append(out, p)
	}
	if !rolling {
		return out
	}
	for o := start + replicas - 1; o >= start+partition; o-- {
		old := pods[o]
		if old == nil || controller.PodRevision(old) == update {
			continue
		}
		out = append(out, Planned{Ordinal: o, Name: old.Name, Action: apiv1.PodReplace, Revision: update, Old: old,
			Pod: NewPod(set, &set.Spec.Template, update, o)})
	}
	return out
}

// NewPod is the pod the controller creates for ordinal from template (newStatefulSetPod and
// setPodRevision, stateful_set_utils.go:506-533@v1.37.2): GetPodFromTemplate
// (pkg/controller/controller_utils.go:567-590) copies the template's labels, annotations,
// finalizers and spec and adds the controller reference; initIdentity and updateIdentity
// (:446-467) set the name, namespace, the pod-name and pod-index labels, the hostname and the
// subdomain (spec.serviceName); updateStorage (:422-444) mounts the claims of the
// volumeClaimTemplates in place of volumes of the same name.
func NewPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, revision string, ordinal int) *corev1.Pod {
	name := controller.PodName(set.Name, ordinal)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         name,
			GenerateName: set.Name + "-",
			Namespace:    set.Namespace,
			Labels:       map[string]string{},
			Annotations:  map[string]string{},
			Finalizers:   append([]string{}, template.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	for k, v := range template.Labels {
		pod.Labels[k] = v
	}
	for k, v := range template.Annotations {
		pod.Annotations[k] = v
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	claimed := map[string]bool{}
	var volumes []corev1.Volume
	for _, c := range set.Spec.VolumeClaimTemplates {
		claimed[c.Name] = true
		volumes = append(volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(set, c.Name, ordinal)}}})
	}
	for _, v := range pod.Spec.Volumes {
		if !claimed[v.Name] {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
	return pod
}

// ClaimName is getPersistentVolumeClaimName (stateful_set_utils.go:126-130@v1.37.2).
func ClaimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return template + "-" + set.Name + "-" + strconv.Itoa(ordinal)
}

// NewClaims are the claims the controller creates for ordinal (getPersistentVolumeClaims,
// stateful_set_utils.go:400-420@v1.37.2): each template with the claim's name, the namespace, and
// the selector's labels over the template's.
func NewClaims(set *appsv1.StatefulSet, ordinal int) []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, t := range set.Spec.VolumeClaimTemplates {
		c := *t.DeepCopy()
		c.Name = ClaimName(set, t.Name, ordinal)
		c.Namespace = set.Namespace
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		out = append(out, c)
	}
	return out
}

// SettledPods are the pods a settled StatefulSet runs (controller.StatusSettled: status.replicas
// pods, each on the update revision, Running and Ready, none terminating), predicted from its
// status and template, with the LimitRange defaults admission gave them (DefaultResources): what
// a judgement reads of them — their ordinals, revision and requests — without a LIST of the
// namespace's pods. Their nodes are not known.
func SettledPods(set *appsv1.StatefulSet, limitRanges []corev1.LimitRange) []corev1.Pod {
	start := 0
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	var out []corev1.Pod
	for o := start; o < start+int(set.Status.Replicas); o++ {
		pod := NewPod(set, &set.Spec.Template, set.Status.UpdateRevision, o)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: set.CreationTimestamp}}}
		DefaultResources(pod, limitRanges)
		out = append(out, *pod)
	}
	return out
}
