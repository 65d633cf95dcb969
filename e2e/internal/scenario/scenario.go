// Package scenario creates the StatefulSet situations the e2e suite and the demo run against a
// real control plane.
package scenario

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Images of the simulated registry (e2e/cluster/registry.yaml).
const (
	GoodImage = "registry.k8s.io/nginx-slim:0.27"
	// BadImage is a tag that does not exist: as unqualified name it means docker.io.
	BadImage = "nginx:1.27-typo"
	// UnreadyImage runs but never passes its readiness probe (cluster.UnreadyPattern).
	UnreadyImage = GoodImage + "-unready"
	StorageClass = "local-static"
)

// Namespace creates a namespace.
func Namespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// Volumes creates the static StorageClass (once) and n hostPath PersistentVolumes for a namespace.
func Volumes(ctx context.Context, cs kubernetes.Interface, namespace string, n int) error {
	return VolumesAt(ctx, cs, namespace, n, "/tmp")
}

// VolumesAt is Volumes with the hostPath directories under root. A real kubelet mounts them, so
// they are DirectoryOrCreate: the kubelet makes a missing one (kwok ignores the type).
func VolumesAt(ctx context.Context, cs kubernetes.Interface, namespace string, n int, root string) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := 0; i < n; i++ {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-pv-%d", namespace, i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              StorageClass,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(root, namespace+fmt.Sprint(i)), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// StatefulSet is a web StatefulSet: a headless-service-less set with a PVC template when withClaims.
// It names no governing Service (spec.serviceName is optional), so no ServiceMissing finding
// joins the ones a scenario is about (e2e/service_test.go sets one).
func StatefulSet(namespace, name, image string, replicas int32, withClaims bool) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "web", Image: image}},
				},
			},
		},
	}
	if withClaims {
		set.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To(StorageClass),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
	}
	return set
}

// WaitPodReason waits until the pod's first container waits with the given reason.
func WaitPodReason(ctx context.Context, cs kubernetes.Interface, namespace, pod, reason string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = string(p.Status.Phase)
		for _, st := range p.Status.ContainerStatuses {
			if st.State.Waiting != nil {
				last = st.State.Waiting.Reason
				if st.State.Waiting.Reason == reason {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s never reached %s (last: %s): %w", namespace, pod, reason, last, err)
	}
	return nil
}

// WaitRolloutComplete waits until every replica runs the update revision and is ready.
func WaitRolloutComplete(ctx context.Context, cs kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	var last appsv1.StatefulSetStatus
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		set, err := cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = set.Status
		want := *set.Spec.Replicas
		return set.Status.ObservedGeneration >= set.Generation && set.Status.ReadyReplicas == want &&
			set.Status.UpdatedReplicas == want && set.Status.CurrentRevision == set.Status.UpdateRevision, nil
	})
	if err != nil {
		return fmt.Errorf("statefulset %s/%s rollout incomplete (status %+v): %w", namespace, name, last, err)
	}
	return nil
}

// SetImage changes the template image of the first container (retrying on conflicts with the
// controller's status writes).
func SetImage(ctx context.Context, cs kubernetes.Interface, namespace, name, image string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		set.Spec.Template.Spec.Containers[0].Image = image
		_, err = cs.AppsV1().StatefulSets(namespace).Update(ctx, set, metav1.UpdateOptions{})
		return err
	})
}

// StuckRollout reproduces kubernetes#67250: a StatefulSet created with an image that does not
// exist, then fixed. web-0 stays in ImagePullBackOff on the old revision.
func StuckRollout(ctx context.Context, cs kubernetes.Interface, namespace, name string, replicas int32) error {
	if err := Volumes(ctx, cs, namespace, int(replicas)); err != nil {
		return err
	}
	if _, err := cs.AppsV1().StatefulSets(namespace).Create(ctx, StatefulSet(namespace, name, BadImage, replicas, true), metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := WaitPodReason(ctx, cs, namespace, name+"-0", "ImagePullBackOff", 60*time.Second); err != nil {
		return err
	}
	if err := SetImage(ctx, cs, namespace, name, GoodImage); err != nil {
		return err
	}
	return WaitObserved(ctx, cs, namespace, name)
}

// NeverReadyRollout reproduces kubernetes#67250 with a readiness failure: a StatefulSet created
// with an image that runs but never passes its readiness probe (UnreadyImage), then fixed once
// its pod 0 runs. That pod stays Running, not Ready, on the old revision.
func NeverReadyRollout(ctx context.Context, cs kubernetes.Interface, namespace, name string, replicas int32, withClaims bool) error {
	if withClaims {
		if err := Volumes(ctx, cs, namespace, int(replicas)); err != nil {
			return err
		}
	}
	if _, err := cs.AppsV1().StatefulSets(namespace).Create(ctx, StatefulSet(namespace, name, UnreadyImage, replicas, withClaims), metav1.CreateOptions{}); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err := cs.CoreV1().Pods(namespace).Get(ctx, name+"-0", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return fmt.Errorf("%s-0 never ran: %w", name, err)
	}
	if err := SetImage(ctx, cs, namespace, name, GoodImage); err != nil {
		return err
	}
	return WaitObserved(ctx, cs, namespace, name)
}

// WaitObserved waits until the controller has observed the latest spec.
func WaitObserved(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		set, err := cs.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return set.Status.ObservedGeneration >= set.Generation && set.Status.UpdateRevision != "", nil
	})
}
