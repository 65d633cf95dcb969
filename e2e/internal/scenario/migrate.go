package scenario

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ExpandableClass is a StorageClass that allows volume expansion (no resizer serves it: a claim's
// request grows, its volume does not).
const ExpandableClass = "local-expandable"

// ExpandableVolumes creates ExpandableClass (once) and n hostPath PersistentVolumes of 1Gi of it
// for a namespace, under root.
func ExpandableVolumes(ctx context.Context, cs kubernetes.Interface, namespace string, n int, root string) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: ExpandableClass},
		Provisioner:          "kubernetes.io/no-provisioner",
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := 0; i < n; i++ {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-xpv-%d", namespace, i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              ExpandableClass,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(root, namespace+"x"+fmt.Sprint(i)), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
