package gather

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	imageclient "github.com/openshift/client-go/image/clientset/versioned"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/stsdiag/stsdiag/internal/openshift"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// Clients are the API clients gathering uses. Image may be nil on plain Kubernetes; Dynamic
// (for owners of any kind) may be nil, then recreated owners are not detected.
type Clients struct {
	Kube    kubernetes.Interface
	Image   imageclient.Interface
	Dynamic dynamic.Interface
}

// Scope selects what to gather.
type Scope struct {
	// Namespace to look in; empty means all namespaces.
	Namespace string
	// Names of StatefulSets; empty means all.
	Names []string
	// Selector filters StatefulSets by label.
	Selector  labels.Selector
	OpenShift openshift.Mode
}

// NotFoundError means a namespace or StatefulSet the user named does not exist.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Gather reads everything a diagnosis needs with a fixed number of LIST calls (one per resource
// type, run in parallel), plus discovery. It never reads per object.
// Warnings lists optional data that could not be read.
func Gather(ctx context.Context, c Clients, scope Scope) (s *snapshot.Snapshot, warnings []string, err error) {
	ns := scope.Namespace
	namespaces, err := checkNamespace(ctx, c, ns)
	if err != nil {
		return nil, nil, err
	}
	s = &snapshot.Snapshot{Now: time.Now(), Namespaces: namespaces}
	var (
		storageClasses []storagev1.StorageClass
		scErr          error
		nodes          []corev1.Node
		nodeErr        error
		services       []corev1.Service
		serviceErr     error
		imageErr       error
		eventErr       error
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		s.StatefulSets, err = list(gctx, "statefulsets", ns, metav1.ListOptions{}, c.Kube.AppsV1().StatefulSets(ns).List,
			func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items })
		return err
	})
	g.Go(func() (err error) {
		s.Pods, err = list(gctx, "pods", ns, metav1.ListOptions{}, c.Kube.CoreV1().Pods(ns).List,
			func(l *corev1.PodList) []corev1.Pod { return l.Items })
		return err
	})
	g.Go(func() (err error) {
		s.Revisions, err = list(gctx, "controllerrevisions", ns, metav1.ListOptions{}, c.Kube.AppsV1().ControllerRevisions(ns).List,
			func(l *appsv1.ControllerRevisionList) []appsv1.ControllerRevision { return l.Items })
		return err
	})
	g.Go(func() (err error) {
		s.PVCs, err = list(gctx, "persistentvolumeclaims", ns, metav1.ListOptions{}, c.Kube.CoreV1().PersistentVolumeClaims(ns).List,
			func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items })
		return err
	})
	g.Go(func() error {
		s.Events, eventErr = list(gctx, "events", ns, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}, c.Kube.CoreV1().Events(ns).List,
			func(l *corev1.EventList) []corev1.Event { return l.Items })
		return nil
	})
	g.Go(func() error {
		storageClasses, scErr = list(gctx, "storageclasses", "", metav1.ListOptions{}, c.Kube.StorageV1().StorageClasses().List,
			func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items })
		return nil
	})
	g.Go(func() error {
		s.ServerVersion = serverVersion(c)
		return nil
	})
	g.Go(func() error {
		// The governing Services (spec.serviceName): optional, like StorageClasses.
		services, serviceErr = list(gctx, "services", ns, metav1.ListOptions{}, c.Kube.CoreV1().Services(ns).List,
			func(l *corev1.ServiceList) []corev1.Service { return l.Items })
		return nil
	})
	g.Go(func() error {
		nodes, nodeErr = list(gctx, "nodes", "", metav1.ListOptions{}, c.Kube.CoreV1().Nodes().List,
			func(l *corev1.NodeList) []corev1.Node { return l.Items })
		return nil
	})
	g.Go(func() error {
		enabled, err := openshift.Enabled(gctx, scope.OpenShift, c.Kube.Discovery())
		if err != nil {
			return err
		}
		s.OpenShift = enabled
		if !enabled || c.Image == nil {
			return nil
		}
		s.ImageStreams, imageErr = openshift.ListImageStreams(gctx, c.Image, ns)
		if ns == "" {
			// Run levels of namespaces matter for image lookup; without permission they stay unknown.
			if all, err := list(gctx, "namespaces", "", metav1.ListOptions{}, c.Kube.CoreV1().Namespaces().List,
				func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }); err == nil {
				s.Namespaces = all
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	if scErr == nil {
		s.StorageClasses, s.StorageClassesListed = storageClasses, true
	}
	if serviceErr == nil {
		s.Services, s.ServicesListed = services, true
	} else if namesService(s.StatefulSets) {
		warnings = append(warnings, fmt.Sprintf("governing Service checks skipped: %v", firstLine(serviceErr)))
	}
	if nodeErr == nil {
		for i := range nodes {
			slimNode(&nodes[i])
		}
		s.Nodes, s.NodesListed = nodes, true
	}
	// Without nodes (most namespace-scoped users cannot list them) no warning: only a pod stuck
	// terminating needs them, and its finding says its node's state is unknown.
	owners, ownerWarnings := lookUpOwners(ctx, c, newMapper(c), snapshot.TerminatingOwners(s.StatefulSets))
	s.Owners = owners
	warnings = append(warnings, ownerWarnings...)
	if eventErr != nil {
		warnings = append(warnings, fmt.Sprintf("findings carry no pod events: %v", firstLine(eventErr)))
	}
	if imageErr != nil {
		warnings = append(warnings, fmt.Sprintf("ImageStream checks skipped: cannot list imagestreams.image.openshift.io: %v", firstLine(imageErr)))
	}
	if err := selectStatefulSets(s, scope); err != nil {
		return nil, nil, err
	}
	return s, warnings, nil
}

// selectStatefulSets marks the StatefulSets in scope. All StatefulSets of the namespace stay in the
// snapshot: orphan detection needs to know which names exist today.
func selectStatefulSets(s *snapshot.Snapshot, scope Scope) error {
	if len(scope.Names) == 0 && (scope.Selector == nil || scope.Selector.Empty()) {
		return nil
	}
	s.Selected = map[string]bool{}
	byName := map[string]bool{}
	for _, set := range s.StatefulSets {
		if scope.Selector != nil && !scope.Selector.Matches(labels.Set(set.Labels)) {
			continue
		}
		byName[set.Name] = true
		if len(scope.Names) == 0 {
			s.Selected[snapshot.Key(set.Namespace, set.Name)] = true
		}
	}
	var missing []string
	for _, name := range scope.Names {
		found := false
		for _, set := range s.StatefulSets {
			if set.Name == name && byName[name] {
				s.Selected[snapshot.Key(set.Namespace, set.Name)] = true
				found = true
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		where := "any namespace"
		if scope.Namespace != "" {
			where = fmt.Sprintf("namespace %q", scope.Namespace)
		}
		return &NotFoundError{What: fmt.Sprintf("statefulset %q in %s", strings.Join(missing, `", "`), where)}
	}
	return nil
}

// checkNamespace fails when a namespace the user named does not exist or the API cannot be
// reached, and returns the namespace when it could be read.
func checkNamespace(ctx context.Context, c Clients, ns string) ([]corev1.Namespace, error) {
	if ns == "" {
		return nil, nil
	}
	namespace, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return []corev1.Namespace{*namespace}, nil
	case apierrors.IsNotFound(err):
		return nil, &NotFoundError{What: fmt.Sprintf("namespace %q", ns)}
	case !apierrors.IsForbidden(err) && apierrors.ReasonForError(err) == metav1.StatusReasonUnknown:
		return nil, fmt.Errorf("cannot reach the API server: %w", err)
	}
	return nil, nil
}

// list reads one resource type with a single unpaged LIST: one request per type whatever the
// cluster's size, served from the apiserver's watch cache. client-go's pager is not used here on
// purpose: on most releases a LIST with a limit is read from etcd instead of the watch cache,
// which at 10k pods is slower and costs the server more than one response. Items are used in place, managedFields dropped.
func list[L any, T any](ctx context.Context, resource, namespace string, opts metav1.ListOptions,
	fn func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) ([]T, error) {
	l, err := fn(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", resource, where(namespace), err)
	}
	out := items(l)
	for i := range out {
		_, _ = slim(any(&out[i]))
	}
	return out, nil
}

func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// namesService reports whether a StatefulSet names a governing Service (whose check needs the
// Services).
func namesService(sets []appsv1.StatefulSet) bool {
	for i := range sets {
		if sets[i].Spec.ServiceName != "" {
			return true
		}
	}
	return false
}

// slimNode keeps what diagnosis reads of a Node (its name and conditions): a node's status lists
// every image it holds, which would dominate memory on large clusters.
func slimNode(n *corev1.Node) {
	n.ManagedFields = nil
	n.Status = corev1.NodeStatus{Conditions: n.Status.Conditions}
}

// serverVersion is the API server's gitVersion, "" when it cannot be read (a fake, or no
// permission: then the newest controller rules apply).
func serverVersion(c Clients) string {
	info, err := c.Kube.Discovery().ServerVersion()
	if err != nil || info == nil || info.Major == "0" {
		return ""
	}
	return info.GitVersion
}
