package gather

import (
	"context"
	"fmt"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imageinformers "github.com/openshift/client-go/image/informers/externalversions"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/stsdiag/stsdiag/internal/openshift"
	"github.com/stsdiag/stsdiag/internal/snapshot"
)

// Live keeps the objects of a scope current with informers (one LIST and one WATCH per resource
// type) and builds snapshots from their caches without further API calls.
type Live struct {
	scope     Scope
	openShift bool
	// Changed receives a value (coalesced) whenever an object in scope changes.
	Changed <-chan struct{}

	namespaces []corev1.Namespace
	// allNamespaces (-A on OpenShift) and classes are nil when they cannot be listed.
	allNamespaces cache.GenericLister
	classes       cache.GenericLister
	sets          cache.GenericLister
	pods          cache.GenericLister
	revisions     cache.GenericLister
	pvcs          cache.GenericLister
	events        cache.GenericLister
	imageStreams  cache.GenericLister
	// nodes is nil when nodes cannot be listed.
	nodes cache.GenericLister
	// services is nil when Services cannot be listed (then the governing Service is not judged).
	services cache.GenericLister

	ctx           context.Context
	clients       Clients
	owners        ownerCache
	serverVersion string
}

// StartLive starts informers for the scope and waits for their caches to fill. They stop with ctx.
// onChange, if set, is called with every object added, updated or deleted (also during the
// initial fill).
func StartLive(ctx context.Context, c Clients, scope Scope, onChange func(obj any)) (*Live, []string, error) {
	namespaces, err := checkNamespace(ctx, c, scope.Namespace)
	if err != nil {
		return nil, nil, err
	}
	enabled, err := openshift.Enabled(ctx, scope.OpenShift, c.Kube.Discovery())
	if err != nil {
		return nil, nil, err
	}
	changed := make(chan struct{}, 1)
	l := &Live{scope: scope, openShift: enabled, Changed: changed, namespaces: namespaces, ctx: ctx, clients: c,
		owners: ownerCache{ttl: 10 * time.Second}, serverVersion: serverVersion(c)}
	changedObj := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if onChange != nil {
			onChange(obj)
		}
		signal(changed)
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    changedObj,
		UpdateFunc: func(_, obj any) { changedObj(obj) },
		DeleteFunc: changedObj,
	}
	strip := informers.WithTransform(slim)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(scope.Namespace), strip)
	warnings := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(scope.Namespace), strip,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "type=" + corev1.EventTypeWarning }))
	// Probe each permission with a one-item LIST first, as Gather's LISTs would fail: an informer
	// that is forbidden retries forever and never syncs. The same kinds are required (an error)
	// or optional (a warning, once) as in Gather.
	ns := scope.Namespace
	for _, p := range []struct {
		resource string
		list     func(context.Context, metav1.ListOptions) error
	}{
		{"statefulsets", func(ctx context.Context, o metav1.ListOptions) error {
			_, err := c.Kube.AppsV1().StatefulSets(ns).List(ctx, o)
			return err
		}},
		{"pods", func(ctx context.Context, o metav1.ListOptions) error {
			_, err := c.Kube.CoreV1().Pods(ns).List(ctx, o)
			return err
		}},
		{"controllerrevisions", func(ctx context.Context, o metav1.ListOptions) error {
			_, err := c.Kube.AppsV1().ControllerRevisions(ns).List(ctx, o)
			return err
		}},
		{"persistentvolumeclaims", func(ctx context.Context, o metav1.ListOptions) error {
			_, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
			return err
		}},
	} {
		if err := p.list(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return nil, nil, fmt.Errorf("listing %s in %s: %w", p.resource, where(ns), err)
		}
	}
	var warns []string
	informersOf := []struct {
		informer cache.SharedIndexInformer
		lister   *cache.GenericLister
		resource string
	}{
		{factory.Apps().V1().StatefulSets().Informer(), &l.sets, "statefulsets"},
		{factory.Core().V1().Pods().Informer(), &l.pods, "pods"},
		{factory.Apps().V1().ControllerRevisions().Informer(), &l.revisions, "controllerrevisions"},
		{factory.Core().V1().PersistentVolumeClaims().Informer(), &l.pvcs, "persistentvolumeclaims"},
	}
	if _, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: "type=" + corev1.EventTypeWarning}); err != nil {
		warns = append(warns, fmt.Sprintf("findings carry no pod events: listing events in %s: %v", where(ns), firstLine(err)))
	} else {
		informersOf = append(informersOf, struct {
			informer cache.SharedIndexInformer
			lister   *cache.GenericLister
			resource string
		}{warnings.Core().V1().Events().Informer(), &l.events, "events"})
	}
	for _, inf := range informersOf {
		if _, err := inf.informer.AddEventHandler(notify); err != nil {
			return nil, nil, err
		}
		*inf.lister = cache.NewGenericLister(inf.informer.GetIndexer(), appsv1.Resource(inf.resource))
	}
	// Cluster-scoped kinds read as in Gather: StorageClasses (claims' reasons) and, with -A on
	// OpenShift, Namespaces (run levels of image lookup).
	clusterWide := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, strip)
	if _, err := c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		informer := clusterWide.Storage().V1().StorageClasses().Informer()
		if _, err := informer.AddEventHandler(notify); err != nil {
			return nil, nil, err
		}
		l.classes = cache.NewGenericLister(informer.GetIndexer(), storagev1.Resource("storageclasses"))
	}
	if ns == "" && enabled {
		if _, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			informer := clusterWide.Core().V1().Namespaces().Informer()
			if _, err := informer.AddEventHandler(notify); err != nil {
				return nil, nil, err
			}
			l.allNamespaces = cache.NewGenericLister(informer.GetIndexer(), corev1.Resource("namespaces"))
		}
	}
	factory.Start(ctx.Done())
	warnings.Start(ctx.Done())
	clusterWide.Start(ctx.Done())
	clusterWide.WaitForCacheSync(ctx.Done())
	if enabled && c.Image != nil {
		// A forbidden informer would retry forever: probe the permission with one item first.
		if _, err := c.Image.ImageV1().ImageStreams(scope.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			warns = append(warns, fmt.Sprintf("ImageStream checks skipped: cannot list imagestreams.image.openshift.io: %v", firstLine(err)))
		} else {
			images := imageinformers.NewSharedInformerFactoryWithOptions(c.Image, 0, imageinformers.WithNamespace(scope.Namespace),
				imageinformers.WithTransform(slim))
			informer := images.Image().V1().ImageStreams().Informer()
			if _, err := informer.AddEventHandler(notify); err != nil {
				return nil, nil, err
			}
			l.imageStreams = cache.NewGenericLister(informer.GetIndexer(), imagev1.Resource("imagestreams"))
			images.Start(ctx.Done())
			images.WaitForCacheSync(ctx.Done())
		}
	}
	// Nodes are optional, without a warning (as in Gather): a pod stuck terminating is then
	// reported without its node's state.
	if _, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		nodeInformers := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithTransform(func(obj any) (any, error) {
			if n, ok := obj.(*corev1.Node); ok {
				slimNode(n)
			}
			return obj, nil
		}))
		informer := nodeInformers.Core().V1().Nodes().Informer()
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { signal(changed) },
			UpdateFunc: func(old, obj any) {
				// Heartbeats change nothing diagnosis reads; a Ready transition does.
				if !sameReady(old, obj) {
					signal(changed)
				}
			},
			DeleteFunc: func(obj any) { signal(changed) },
		}); err != nil {
			return nil, nil, err
		}
		l.nodes = cache.NewGenericLister(informer.GetIndexer(), corev1.Resource("nodes"))
		nodeInformers.Start(ctx.Done())
		nodeInformers.WaitForCacheSync(ctx.Done())
	}
	// Services are optional too: probe the permission with one item (a forbidden informer would
	// retry forever); the governing-Service check is skipped without them.
	_, serviceErr := c.Kube.CoreV1().Services(scope.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if serviceErr == nil {
		serviceInformers := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(scope.Namespace), strip)
		informer := serviceInformers.Core().V1().Services().Informer()
		if _, err := informer.AddEventHandler(notify); err != nil {
			return nil, nil, err
		}
		l.services = cache.NewGenericLister(informer.GetIndexer(), corev1.Resource("services"))
		serviceInformers.Start(ctx.Done())
		serviceInformers.WaitForCacheSync(ctx.Done())
	}
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("informer for %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range warnings.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("informer for %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	if serviceErr != nil && namesService(fromLister[appsv1.StatefulSet](l.sets)) {
		warns = append(warns, fmt.Sprintf("governing Service checks skipped: cannot list services: %v", firstLine(serviceErr)))
	}
	return l, warns, nil
}

// Changes receives a value (coalesced) whenever an object in scope changes.
func (l *Live) Changes() <-chan struct{} { return l.Changed }

// OpenShift reports whether the image API is in use.
func (l *Live) OpenShift() bool { return l.openShift }

// Snapshot builds a snapshot of the caches. It fails with NotFoundError when a StatefulSet
// named in the scope no longer exists.
func (l *Live) Snapshot() (*snapshot.Snapshot, error) {
	s := &snapshot.Snapshot{Now: time.Now(), OpenShift: l.openShift, Namespaces: l.namespaces}
	if l.allNamespaces != nil {
		s.Namespaces = fromLister[corev1.Namespace](l.allNamespaces)
	}
	s.StatefulSets = fromLister[appsv1.StatefulSet](l.sets)
	s.Pods = fromLister[corev1.Pod](l.pods)
	s.Revisions = fromLister[appsv1.ControllerRevision](l.revisions)
	s.PVCs = fromLister[corev1.PersistentVolumeClaim](l.pvcs)
	s.Events = fromLister[corev1.Event](l.events)
	if l.imageStreams != nil {
		s.ImageStreams = fromLister[imagev1.ImageStream](l.imageStreams)
	}
	if l.services != nil {
		s.Services, s.ServicesListed = fromLister[corev1.Service](l.services), true
	}
	l.fillNodesAndOwners(s)
	if err := selectStatefulSets(s, l.scope); err != nil {
		return nil, err
	}
	return s, nil
}

// SnapshotOf builds a snapshot of one namespace from the caches, with only the named
// StatefulSets in scope (all of the namespace's StatefulSets stay in it, for orphan detection).
func (l *Live) SnapshotOf(namespace string, names ...string) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Now: time.Now(), OpenShift: l.openShift, Selected: map[string]bool{}}
	if l.allNamespaces != nil {
		if obj, err := l.allNamespaces.Get(namespace); err == nil {
			if n, ok := obj.(*corev1.Namespace); ok {
				s.Namespaces = []corev1.Namespace{*n}
			}
		}
	}
	for _, ns := range l.namespaces {
		if ns.Name == namespace {
			s.Namespaces = []corev1.Namespace{ns}
		}
	}
	s.StatefulSets = fromNamespace[appsv1.StatefulSet](l.sets, namespace)
	s.Pods = fromNamespace[corev1.Pod](l.pods, namespace)
	s.Revisions = fromNamespace[appsv1.ControllerRevision](l.revisions, namespace)
	s.PVCs = fromNamespace[corev1.PersistentVolumeClaim](l.pvcs, namespace)
	s.Events = fromNamespace[corev1.Event](l.events, namespace)
	if l.imageStreams != nil {
		s.ImageStreams = fromNamespace[imagev1.ImageStream](l.imageStreams, namespace)
	}
	if l.services != nil {
		s.Services, s.ServicesListed = fromNamespace[corev1.Service](l.services, namespace), true
	}
	for _, name := range names {
		s.Selected[snapshot.Key(namespace, name)] = true
	}
	l.fillNodesAndOwners(s)
	return s
}

// StatefulSetKeys lists every cached StatefulSet as namespace/name.
func (l *Live) StatefulSetKeys() []string {
	var out []string
	for _, set := range fromLister[appsv1.StatefulSet](l.sets) {
		out = append(out, snapshot.Key(set.Namespace, set.Name))
	}
	return out
}

// StatefulSetNames lists the StatefulSets of a namespace in the cache.
func (l *Live) StatefulSetNames(namespace string) []string {
	var out []string
	for _, set := range fromNamespace[appsv1.StatefulSet](l.sets, namespace) {
		out = append(out, set.Name)
	}
	return out
}

// PodController returns the name of the StatefulSet controlling a cached pod.
func (l *Live) PodController(namespace, name string) (string, bool) {
	obj, err := l.pods.ByNamespace(namespace).Get(name)
	if err != nil {
		return "", false
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return "", false
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == "StatefulSet" {
		return ref.Name, true
	}
	return "", false
}

func fromNamespace[T any](lister cache.GenericLister, namespace string) []T {
	if lister == nil {
		return nil
	}
	objs, err := lister.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return items[T](objs)
}

func fromLister[T any](lister cache.GenericLister) []T {
	if lister == nil {
		return nil
	}
	objs, err := lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return items[T](objs)
}

func items[T any](objs []runtime.Object) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if item, ok := any(o).(*T); ok {
			out = append(out, *item)
		}
	}
	return out
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// fillNodesAndOwners adds the nodes from their cache and the owners of terminating StatefulSets
// (looked up at most every 10 s each).
func (l *Live) fillNodesAndOwners(s *snapshot.Snapshot) {
	if l.classes != nil {
		s.StorageClasses, s.StorageClassesListed = fromLister[storagev1.StorageClass](l.classes), true
	}
	s.ServerVersion = l.serverVersion
	if l.nodes != nil {
		s.Nodes, s.NodesListed = fromLister[corev1.Node](l.nodes), true
	}
	if wanted := snapshot.TerminatingOwners(s.StatefulSets); len(wanted) > 0 {
		s.Owners = l.owners.lookUp(l.ctx, l.clients, wanted)
	}
}

// sameReady reports whether two versions of a Node have the same Ready status.
func sameReady(old, obj any) bool {
	a, okA := old.(*corev1.Node)
	b, okB := obj.(*corev1.Node)
	if !okA || !okB {
		return false
	}
	return readyStatus(a) == readyStatus(b)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func where(namespace string) string {
	if namespace == "" {
		return "all namespaces"
	}
	return fmt.Sprintf("namespace %q", namespace)
}
