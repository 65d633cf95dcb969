// Package snapshot holds the objects one diagnosis looks at, and gathers them from the API.
package snapshot

import (
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Snapshot is every object a diagnosis needs, read at one moment. Diagnosis never calls the API.
type Snapshot struct {
	Now time.Time

	StatefulSets []appsv1.StatefulSet
	Pods         []corev1.Pod
	Revisions    []appsv1.ControllerRevision
	PVCs         []corev1.PersistentVolumeClaim
	// Events holds Warning events only.
	Events         []corev1.Event
	StorageClasses []storagev1.StorageClass
	// StorageClassesListed is false when StorageClasses could not be read (then a claim's class
	// is not judged).
	StorageClassesListed bool

	// Namespaces holds the namespaces in scope when they could be read (OpenShift run levels).
	Namespaces []corev1.Namespace

	// OpenShift is true when the image.openshift.io API is served (or forced on).
	OpenShift    bool
	ImageStreams []imagev1.ImageStream

	// Selected names the StatefulSets in scope (namespace/name). Nil means all of them.
	Selected map[string]bool
}

// Key is namespace/name.
func Key(namespace, name string) string { return namespace + "/" + name }

// InScope reports whether the StatefulSet namespace/name was selected.
func (s *Snapshot) InScope(namespace, name string) bool {
	return s.Selected == nil || s.Selected[Key(namespace, name)]
}
