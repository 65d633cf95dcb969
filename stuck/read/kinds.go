package read

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
)

// kind is one kind a snapshot holds: how List reads it, and what its absence means.
type kind struct {
	// resource is the plural resource, as in RBAC and in errors; order is its place in the table
	// (warnings come in that order).
	resource string
	order    int
	// clusterScoped kinds are read whole whatever the scope's namespace.
	clusterScoped bool
	// required kinds fail the read when they cannot be read; the others are left out.
	required bool
	// when says whether the kind is read at all; nil: always.
	when func(environment) bool
	// warn, for an optional kind, is the warning its absence costs a diagnosis of s, given
	// where it was read and the error; "" for none.
	warn func(s *stuck.Objects, where string, err error) string
	// read LISTs the kind in namespace ns ("" for all) and puts its items in s (under mu).
	read func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error
}

// environment decides which optional kinds are read.
type environment struct {
	allNamespaces bool
	openShift     bool
	imageClient   bool
}

// kinds is what a diagnosis reads.
var kinds = []kind{
	{resource: "statefulsets", order: 0, required: true,
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.StatefulSets = slim(l.Items) })
		}},
	{resource: "pods", order: 1, required: true,
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.Pods = slim(l.Items) })
		}},
	{resource: "controllerrevisions", order: 2, required: true,
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.Revisions = slim(l.Items) })
		}},
	{resource: "persistentvolumeclaims", order: 3, required: true,
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.PVCs = slim(l.Items) })
		}},
	// Warning Events only: they say why a pod or claim is stuck.
	{resource: "events", order: 4,
		warn: func(_ *stuck.Objects, where string, err error) string {
			return fmt.Sprintf("findings carry no pod events: listing events in %s: %v", where, firstLine(err))
		},
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
			return put(err, mu, func() { s.Events = slim(l.Items) })
		}},
	// StorageClasses explain claims; without them a claim's class is not judged.
	{resource: "storageclasses", order: 5, clusterScoped: true,
		read: func(ctx context.Context, c Clients, _ string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.StorageClasses, s.StorageClassesListed = slim(l.Items), true })
		}},
	// The governing Services (spec.serviceName): worth a warning only when a StatefulSet names one.
	{resource: "services", order: 6,
		warn: func(s *stuck.Objects, where string, err error) string {
			for i := range s.StatefulSets {
				if s.StatefulSets[i].Spec.ServiceName != "" {
					return fmt.Sprintf("governing Service checks skipped: listing services in %s: %v", where, firstLine(err))
				}
			}
			return ""
		},
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.Services, s.ServicesListed = slim(l.Items), true })
		}},
	// Nodes (most namespace-scoped users cannot list them) need no warning: only a pod stuck
	// terminating needs them, and its finding says its node's state is unknown.
	{resource: "nodes", order: 7, clusterScoped: true,
		read: func(ctx context.Context, c Clients, _ string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.Nodes, s.NodesListed = slim(l.Items), true })
		}},
	// Run levels of namespaces matter to OpenShift's image lookup; without permission they stay
	// unknown. (A namespace the scope names is read by a GET instead.)
	{resource: "namespaces", order: 8, clusterScoped: true,
		when: func(e environment) bool { return e.openShift && e.allNamespaces },
		read: func(ctx context.Context, c Clients, _ string, s *stuck.Objects, mu *sync.Mutex) error {
			l, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			return put(err, mu, func() { s.Namespaces = slim(l.Items) })
		}},
	{resource: "imagestreams", order: 9,
		when: func(e environment) bool { return e.openShift && e.imageClient },
		warn: func(_ *stuck.Objects, _ string, err error) string {
			return fmt.Sprintf("ImageStream checks skipped: cannot list imagestreams.image.openshift.io: %v", firstLine(err))
		},
		read: func(ctx context.Context, c Clients, ns string, s *stuck.Objects, mu *sync.Mutex) error {
			streams, err := openshift.ListImageStreams(ctx, c.Image, ns)
			return put(err, mu, func() { s.ImageStreams = streams })
		}},
}

// put stores what a LIST read, unless it failed.
func put(err error, mu *sync.Mutex, store func()) error {
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	store()
	return nil
}

// slim drops what no rule reads and costs the most memory: managed fields.
func slim[T any, PT interface {
	*T
	SetManagedFields([]metav1.ManagedFieldsEntry)
}](items []T) []T {
	for i := range items {
		PT(&items[i]).SetManagedFields(nil)
	}
	return items
}

// unreadKind is an optional kind that could not be read, and why.
type unreadKind struct {
	kind *kind
	err  error
}

// warning says what the unread kind costs a diagnosis of s, read in scope namespace ns.
func (u unreadKind) warning(s *stuck.Objects, ns string) string {
	if u.kind.warn == nil {
		return ""
	}
	if u.kind.clusterScoped {
		ns = ""
	}
	return u.kind.warn(s, where(ns), u.err)
}
