package watch

import (
	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/internal/gather"
)

// changed is told every object the informers add, update or delete. The objects of the caches'
// initial fill are no change: the first pass diagnoses every StatefulSet with them. A change
// before the caches are filled waits for them, to be looked up.
func (c *Controller) changed(obj any, initial bool) {
	if initial {
		return
	}
	c.mu.Lock()
	if c.live.Load() == nil {
		c.early = append(c.early, obj)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.enqueueFor(obj)
}

// enqueueFor maps a changed object to the StatefulSets it concerns.
func (c *Controller) enqueueFor(obj any) {
	live := c.live.Load()
	if live == nil {
		return // initial fill: Run enqueues everything once the caches synced
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: o.Name}.String())
	case *corev1.Pod:
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "StatefulSet" {
			c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: ref.Name}.String())
		}
	case *appsv1.ControllerRevision:
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "StatefulSet" {
			c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: ref.Name}.String())
		}
	case *corev1.Event:
		if o.Source.Component == "stsdiag" || o.ReportingController == "stsdiag" {
			return
		}
		switch o.InvolvedObject.Kind {
		case "Pod":
			if name, ok := live.PodController(o.InvolvedObject.Namespace, o.InvolvedObject.Name); ok {
				c.enqueue(types.NamespacedName{Namespace: o.InvolvedObject.Namespace, Name: name}.String())
			}
		case "PersistentVolumeClaim":
			c.enqueueNamespace(live, o.InvolvedObject.Namespace)
		}
	case *corev1.PersistentVolumeClaim:
		c.enqueueNamespace(live, o.Namespace)
	case *imagev1.ImageStream:
		c.enqueueNamespace(live, o.Namespace)
	case *corev1.Namespace:
		c.enqueueNamespace(live, o.Name)
	case *corev1.Service:
		c.enqueueNamespace(live, o.Namespace)
	case *storagev1.StorageClass:
		for _, key := range live.StatefulSetKeys() {
			c.enqueue(key)
		}
	}
}

func (c *Controller) enqueueNamespace(live *gather.Live, ns string) {
	for _, name := range live.StatefulSetNames(ns) {
		c.enqueue(types.NamespacedName{Namespace: ns, Name: name}.String())
	}
}

// enqueue queues a StatefulSet whose objects changed: a first-pass verdict of it no longer
// stands.
func (c *Controller) enqueue(key string) {
	c.mu.Lock()
	if c.touched != nil {
		c.touched[key] = true
	}
	c.mu.Unlock()
	c.queue.Add(key)
}
