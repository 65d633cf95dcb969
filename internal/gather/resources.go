package gather

import (
	"context"
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
)

// resource is one kind a snapshot holds: how Gather LISTs it, how Live watches it, and what its
// absence means. Both read every object through snapshot.Slim.
type resource struct {
	// name is the plural resource, as in RBAC and in errors.
	name          string
	clusterScoped bool
	// whole kinds are read whole even by EachNamespace: the diagnosis of a namespace reads
	// other namespaces' objects of the kind.
	whole bool
	// required kinds fail gathering when they cannot be read; the others are left out.
	required bool
	// fieldSelector filters the LIST and the WATCH.
	fieldSelector string
	// liveSelector, if set, is the label selector of the kind's informer in an all-namespaces
	// Live (and of the paged LISTs that fill it, StartLiveDiagnosing): what diagnosis reads of
	// the kind carries it, and the rest of the cluster's objects of the kind are not held. What
	// diagnosis may read without it is looked up by name (held.go).
	liveSelector string
	// when says whether the kind is read at all in this environment; nil: always.
	when func(env) bool
	// warning, for an optional kind, is what its absence costs: a format of the namespaces read
	// and the error's first line; "" for none. warnIf, if set, limits it to snapshots it concerns
	// (by their StatefulSets only: Live.missingWarnings).
	warning string
	warnIf  func(*stuck.Objects) bool
	// list reads every object with one LIST; probe (nil: list with a limit of one) tells
	// whether the kind may be read at all.
	list  func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error)
	probe func(ctx context.Context, c Clients, ns string) error
	// unversioned lists (read by client-go's pager) carry no resourceVersion to WATCH from.
	unversioned bool
	// newList, for a namespaced kind read in pages, is an empty list of the kind (for
	// slimpb.Pager).
	newList func() runtime.Object
	// informer is how the kind's informer LISTs and WATCHes it in ns; matters, if set, tells
	// an update that diagnosis reads from one it does not (a node's heartbeat).
	informer func(c Clients, ns string) kindClient
	matters  func(old, obj any) bool
	// put stores the objects in the snapshot (and marks the kind read).
	put func(s *stuck.Objects, objs []runtime.Object)
}

// env decides which optional kinds are read.
type env struct {
	allNamespaces bool // -A
	openShift     bool // the image API is in use
	imageClient   bool
}

// byNamespace is the index informer factories give every informer.
var byNamespace = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

// resources is what a diagnosis reads, for Gather and Live alike.
var resources = []resource{
	{name: "statefulsets", required: true,
		newList: func() runtime.Object { return &appsv1.StatefulSetList{} },
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*appsv1.StatefulSetList, error) { return c.reader().AppsV1().StatefulSets(ns).List(ctx, o) })
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().AppsV1().StatefulSets(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &appsv1.StatefulSet{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.StatefulSets = items[appsv1.StatefulSet](objs) }},
	// watch -A holds the pods of StatefulSets only (held.go).
	{name: "pods", required: true, liveSelector: appsv1.StatefulSetPodNameLabel,
		newList: func() runtime.Object { return &corev1.PodList{} },
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*corev1.PodList, error) { return c.reader().CoreV1().Pods(ns).List(ctx, o) })
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().CoreV1().Pods(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.Pod{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.Pods = items[corev1.Pod](objs) }},
	{name: "controllerrevisions", required: true,
		newList: func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*appsv1.ControllerRevisionList, error) {
				return c.reader().AppsV1().ControllerRevisions(ns).List(ctx, o)
			})
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().AppsV1().ControllerRevisions(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &appsv1.ControllerRevision{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) {
			s.Revisions = items[appsv1.ControllerRevision](objs)
		}},
	{name: "persistentvolumeclaims", required: true,
		newList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*corev1.PersistentVolumeClaimList, error) {
				return c.reader().CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
			})
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().CoreV1().PersistentVolumeClaims(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.PersistentVolumeClaim{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.PVCs = items[corev1.PersistentVolumeClaim](objs) }},
	{name: "events", fieldSelector: "type=" + corev1.EventTypeWarning,
		newList: func() runtime.Object { return &corev1.EventList{} },
		warning: "findings carry no pod events: listing events in %s: %v",
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*corev1.EventList, error) { return c.reader().CoreV1().Events(ns).List(ctx, o) })
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().CoreV1().Events(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.Event{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.Events = items[corev1.Event](objs) }},
	// StorageClasses explain claims; without them a claim's class is not judged.
	{name: "storageclasses", clusterScoped: true,
		list: func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, "", o, func() (*storagev1.StorageClassList, error) {
				return c.reader().StorageV1().StorageClasses().List(ctx, o)
			})
		},
		informer: func(c Clients, _ string) kindClient {
			kind := c.reader().StorageV1().StorageClasses()
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &storagev1.StorageClass{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) {
			s.StorageClasses, s.StorageClassesListed = items[storagev1.StorageClass](objs), true
		}},
	// The governing Services (spec.serviceName): worth a warning only when a StatefulSet names one.
	{name: "services", warning: "governing Service checks skipped: listing services in %s: %v", warnIf: namesService,
		newList: func() runtime.Object { return &corev1.ServiceList{} },
		list: func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, ns, o, func() (*corev1.ServiceList, error) { return c.reader().CoreV1().Services(ns).List(ctx, o) })
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.reader().CoreV1().Services(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.Service{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) {
			s.Services, s.ServicesListed = items[corev1.Service](objs), true
		}},
	// Nodes (most namespace-scoped users cannot list them) need no warning: only a pod stuck
	// terminating needs them, and its finding says its node's state is unknown.
	{name: "nodes", clusterScoped: true, matters: readyChanged,
		list: func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, "", o, func() (*corev1.NodeList, error) { return c.reader().CoreV1().Nodes().List(ctx, o) })
		},
		informer: func(c Clients, _ string) kindClient {
			kind := c.reader().CoreV1().Nodes()
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.Node{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) {
			s.Nodes, s.NodesListed = items[corev1.Node](objs), true
		}},
	// Run levels of namespaces matter for image lookup; without permission they stay unknown.
	// (With a namespace named, Gather and Live GET it instead.)
	{name: "namespaces", clusterScoped: true,
		when: func(e env) bool { return e.openShift && e.allNamespaces },
		list: func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return listSlim(ctx, c, "", o, func() (*corev1.NamespaceList, error) { return c.reader().CoreV1().Namespaces().List(ctx, o) })
		},
		informer: func(c Clients, _ string) kindClient {
			kind := c.reader().CoreV1().Namespaces()
			return kindClient{listFunc(kind.List), kind.Watch, c.reader(), &corev1.Namespace{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.Namespaces = items[corev1.Namespace](objs) }},
	// An image may name another namespace's ImageStream (resolver: "ns/stream:tag" under the
	// resolve-names annotation, the internal registry's ns/name), and a tag may follow another
	// namespace's ImageStreamTag.
	{name: "imagestreams", whole: true, unversioned: true, warning: "ImageStream checks skipped: cannot list imagestreams.image.openshift.io: %[2]v",
		when: func(e env) bool { return e.openShift && e.imageClient },
		list: func(ctx context.Context, c Clients, ns string, _ metav1.ListOptions) (runtime.Object, error) {
			streams, err := openshift.ListImageStreams(ctx, c.Image, ns)
			return &imagev1.ImageStreamList{Items: streams}, err
		},
		probe: func(ctx context.Context, c Clients, ns string) error {
			_, err := c.Image.ImageV1().ImageStreams(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		},
		informer: func(c Clients, ns string) kindClient {
			kind := c.Image.ImageV1().ImageStreams(ns)
			return kindClient{listFunc(kind.List), kind.Watch, c.Image, &imagev1.ImageStream{}}
		},
		put: func(s *stuck.Objects, objs []runtime.Object) { s.ImageStreams = items[imagev1.ImageStream](objs) }},
}

// listSlim LISTs through c.Read's streaming slim decoder when it has one (slimpb.Lister), else
// with list.
func listSlim[L any, PL interface {
	*L
	runtime.Object
}](ctx context.Context, c Clients, ns string, o metav1.ListOptions, list func() (PL, error)) (runtime.Object, error) {
	if l, ok := c.Read.(slimpb.Lister); ok {
		into := PL(new(L))
		if err := l.ListInto(ctx, ns, o, into); err != nil {
			return nil, err
		}
		return into, nil
	}
	return list()
}

// wanted reports whether the kind is read in this environment.
func (r *resource) wanted(e env) bool { return r.when == nil || r.when(e) }

// namespace is where the kind is read: nowhere in particular when it is cluster-scoped.
func (r *resource) namespace(scope string) string {
	if r.clusterScoped {
		return ""
	}
	return scope
}

// listAll reads every object of the kind, slimmed (through c.Read, slimpb: streamed and decoded
// slim as it arrives), with a single unpaged LIST: one request
// whatever the cluster's size, served from the apiserver's watch cache. client-go's pager is not
// used on purpose (but for ImageStreams, see openshift.ListImageStreams): on most releases a
// LIST with a limit is read from etcd instead of the watch cache, which at 10k pods is slower and
// costs the server more than one response.
func (r *resource) listAll(ctx context.Context, c Clients, ns string) (runtime.Object, error) {
	l, err := r.list(ctx, c, r.namespace(ns), listOptions(r))
	if err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		snapshot.SlimInPlace(o)
	}
	return l, nil
}

// listOptions are those of the kind's LIST.
func listOptions(r *resource) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: r.fieldSelector}
}

// check reads one object of the kind, as its informer would (with labelSelector): an informer
// that may not LIST retries forever and never syncs.
func (r *resource) check(ctx context.Context, c Clients, ns, labelSelector string) error {
	if r.probe != nil {
		return r.probe(ctx, c, r.namespace(ns))
	}
	_, err := r.list(ctx, c, r.namespace(ns), metav1.ListOptions{Limit: 1, FieldSelector: r.fieldSelector, LabelSelector: labelSelector})
	return err
}

// listError is why a required kind could not be read.
func (r *resource) listError(ns string, err error) error {
	return fmt.Errorf("listing %s in %s: %w", r.name, where(r.namespace(ns)), err)
}

// kindClient is a typed client's List and Watch of one kind.
type kindClient struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// clientset tells client-go whether it supports WATCH lists (fakes do not).
	clientset any
	example   runtime.Object
}

func listFunc[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }
}

// newInformer watches the kind in ns, slimming every object by transform before it is cached,
// as client-go's generated informers do (client-go@v0.35.4 informers/core/v1/pod.go) but with
// the kind's field selector and the label selector given, and with first, once delivered, as
// its first LIST (nil: LIST).
func (r *resource) newInformer(c Clients, ns, labelSelector string, first *firstList, transform cache.TransformFunc) (cache.SharedIndexInformer, error) {
	k := r.informer(c, r.namespace(ns))
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if l := first.take(ctx); l != nil {
				return l, nil
			}
			o.FieldSelector, o.LabelSelector = r.fieldSelector, labelSelector
			return k.list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.LabelSelector = r.fieldSelector, labelSelector
			return k.watch(ctx, o)
		},
	}
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, k.clientset), k.example, 0, byNamespace)
	return informer, informer.SetTransform(transform)
}

// unread is an optional kind that could not be read, and why.
type unread struct {
	resource *resource
	err      error
}

// warnings says what the unread kinds cost a diagnosis of s (whose namespace is ns).
func warnings(s *stuck.Objects, ns string, missing []unread) []string {
	var out []string
	for _, m := range missing {
		r := m.resource
		if r.warning == "" || (r.warnIf != nil && !r.warnIf(s)) {
			continue
		}
		out = append(out, fmt.Sprintf(r.warning, where(r.namespace(ns)), text.FirstLine(m.err)))
	}
	return out
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

// namesService reports whether a StatefulSet names a governing Service (whose check needs the
// Services).
func namesService(s *stuck.Objects) bool {
	for i := range s.StatefulSets {
		if s.StatefulSets[i].Spec.ServiceName != "" {
			return true
		}
	}
	return false
}

// readyChanged reports whether an update of a Node changed its Ready status (a heartbeat does not).
func readyChanged(old, obj any) bool {
	a, okA := old.(*corev1.Node)
	b, okB := obj.(*corev1.Node)
	return !okA || !okB || readyStatus(a) != readyStatus(b)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
