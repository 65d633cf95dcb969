package oracle

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Names of the objects a history uses.
const (
	SetName = "web"
	// ConfigMap exists in every history's namespace, without the key MissingConfigKey reads.
	ConfigMap    = "oracle-config"
	MissingKey   = "LOG_LEVEL"
	MissingSA    = "oracle-nope"
	MissingClass = "oracle-nope"
	// MissingSecret is never created.
	MissingSecret = "oracle-missing"
	// FinalizerName holds a pod (Finalizer): cleanup removes it.
	FinalizerName = "oracle.stsdiag.e2e/hold"
	// GateCondition is the readiness gate nobody sets.
	GateCondition = "example.com/lb-ready"
	// QuotaName is the ResourceQuota of Quota.
	QuotaName = "oracle-pods"
	// PodSecurityLabel enforces the restricted profile on the namespace (PodSecurity).
	PodSecurityLabel = "pod-security.kubernetes.io/enforce"
	// SlowDelay is how long a SlowStart pod answers 503 on /ready.
	SlowDelay = "15s"
	// NoNodeLabel is the node label NodeSelector asks for; no node has it.
	NoNodeLabel = "oracle.stsdiag.e2e/pool"
)

// Images are the references of the real node's registry.
type Images struct {
	// App is the suite's app image (nodeimages/app); Missing a tag of it the registry lacks.
	App, Missing string
}

// StatefulSet is the object of a history at step i: the history's dimensions and the template
// of step i. Each step sets env STEP=i, so every step is a new revision. The healthy template
// passes PodSecurity's restricted profile (non-root user 65532, no privilege escalation, no
// capabilities, RuntimeDefault seccomp), so that only PodSecurity's own template is refused by
// a restricted namespace.
func StatefulSet(h History, i int, im Images) *appsv1.StatefulSet {
	labels := map[string]string{"app": SetName}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: SetName, Namespace: h.Namespace(), Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(h.Replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: h.Policy,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: h.Strategy},
			MinReadySeconds:     h.MinReadySeconds,
			Template:            Template(h.Steps[i], i, im),
		},
	}
	if h.Strategy == appsv1.RollingUpdateStatefulSetStrategyType {
		set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(h.Partition)}
	}
	if h.OrdinalsStart > 0 {
		set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: h.OrdinalsStart}
	}
	// Claim templates are immutable: the first step decides them for every step.
	if h.Steps[0] == UnknownStorageClass {
		set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(MissingClass),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
		c := &set.Spec.Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	}
	return set
}

// Template is the pod template of a step of fault f.
func Template(f Fault, step int, im Images) corev1.PodTemplateSpec {
	c := corev1.Container{
		Name: "app", Image: im.App, Args: []string{"serve"},
		Env: []corev1.EnvVar{{Name: "STEP", Value: fmt.Sprint(step)}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		},
		SecurityContext: restrictedContainer(),
	}
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	switch f {
	case SlowStart:
		c.Args = []string{"serve", "-delay", SlowDelay}
	case MissingTag:
		c.Image = im.Missing
	case Crash:
		c.Args = []string{"exit", "1", "oracle: crashed on purpose"}
		c.ReadinessProbe = nil
	case Unready:
		c.Args = []string{"serve", "-unready"}
	case MissingConfigKey:
		c.Env = append(c.Env, corev1.EnvVar{Name: MissingKey, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMap}, Key: MissingKey}}})
	case MissingSecretVolume:
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: MissingSecret}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "secret", MountPath: "/secret", ReadOnly: true})
	case InitFail:
		spec.InitContainers = []corev1.Container{{Name: "init", Image: im.App, Args: []string{"exit", "1", "oracle: init failed on purpose"},
			SecurityContext: restrictedContainer()}}
	case InitHang:
		spec.InitContainers = []corev1.Container{{Name: "init", Image: im.App, Args: []string{"wait"}, SecurityContext: restrictedContainer()}}
	case CPUTooLarge:
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	case NodeSelector:
		spec.NodeSelector = map[string]string{NoNodeLabel: "none"}
	case MissingServiceAccount:
		spec.ServiceAccountName = MissingSA
	case PodSecurity:
		// Runs fine anywhere else (as root): only a restricted namespace refuses it.
		spec.SecurityContext, c.SecurityContext = nil, nil
	case ReadinessGate:
		spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: GateCondition}}
	}
	spec.Containers = []corev1.Container{c}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": SetName}}, Spec: spec}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// ResourceQuota is Quota's: one pod fewer than the history's replicas, so the last pod the
// controller creates (or recreates during an update) is refused.
func ResourceQuota(h History) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: h.Namespace()},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: *resource.NewQuantity(int64(h.Replicas-1), resource.DecimalSI)}},
	}
}

// ConfigMapObject is the namespace's ConfigMap: it exists, without MissingKey.
func ConfigMapObject(h History) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMap, Namespace: h.Namespace()},
		Data: map[string]string{"OTHER": "x"}}
}
