package gather

import (
	"context"
	"fmt"
	"strings"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// Live keeps the objects of a scope current with one informer (one LIST and one WATCH) per kind
// of the resource table; for all namespaces, the pods informer holds the pods of StatefulSets
// only (held.go). Cached and CachedOf read its caches only; the owners of terminating
// StatefulSets, and for all namespaces the pods that may hold an ordinal's name without being
// cached, are looked up by Refresh (Snapshot does both).
type Live struct {
	scope     Scope
	openShift bool
	changed   chan struct{}
	// namespaces holds the namespace the scope names, when it could be read.
	namespaces []corev1.Namespace
	// listers holds a lister per kind read, by resource name.
	listers map[string]cache.GenericLister
	// missing are the optional kinds that could not be read.
	missing []unread
	clients Clients
	owners  ownerCache
	// held are the pods looked up by name: for all namespaces only (nil otherwise), where the
	// pods informer selects (held.go).
	held          *heldPods
	serverVersion string
	// streams is the ImageStreams' cache, when they are read.
	streams cache.Indexer
	// revisions holds the data of the revisions Refresh read: for all namespaces only (nil
	// otherwise), where the revisions are cached as metadata (revisiondata.go).
	revisions *revisionData
}

// StartLive starts informers for the scope and waits for their caches to fill. They stop with ctx.
// onChange, if set, is called with every object added, updated or deleted, initial when it is
// one of a cache's initial fill (its first LIST), but for a Node only when its Ready status
// changes.
func StartLive(ctx context.Context, c Clients, scope Scope, onChange func(obj any, initial bool)) (*Live, []string, error) {
	l, warns, _, err := startLive(ctx, c, scope, onChange, nil)
	return l, warns, err
}

// StartLiveDiagnosing is StartLive, with each namespace's snapshot handed to diagnose while the
// caches fill, as EachNamespace hands them out: for all namespaces (by selector only), when the
// informers fill by LISTs (not WATCH lists: client-go's WatchListClient), their first LISTs are
// EachNamespace's paged LISTs, read once for both. diagnosed reports whether every namespace was
// handed to diagnose: not when the scope or the informers do not allow it (none was), nor when
// the paged LISTs could not go namespace by namespace (ErrRestart), failed, or diagnose failed
// (some may have been). Then the caches filled with the kinds read to the end, and by their own
// LISTs with the others.
func StartLiveDiagnosing(ctx context.Context, c Clients, scope Scope, onChange func(obj any, initial bool), diagnose func(*stuck.Objects) error) (live *Live, warnings []string, diagnosed bool, err error) {
	// As a reflector decides to fill its cache by a WATCH list (client-go@v0.35.4
	// tools/cache/reflector.go:300-309).
	watchLists := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) &&
		!watchlist.DoesClientNotSupportWatchListSemantics(c.reader())
	if scope.Namespace != "" || len(scope.Names) > 0 || watchLists {
		diagnose = nil
	}
	return startLive(ctx, c, scope, onChange, diagnose)
}

// startLive starts the scope's informers, hands each namespace to diagnose (when set) from their
// first LISTs, and waits for their caches to fill.
func startLive(ctx context.Context, c Clients, scope Scope, onChange func(obj any, initial bool), diagnose func(*stuck.Objects) error) (*Live, []string, bool, error) {
	l, e, err := newLive(ctx, c, scope)
	if err != nil {
		return nil, nil, false, err
	}
	readable, err := l.readableKinds(ctx, e)
	if err != nil {
		return nil, nil, false, err
	}
	var first map[string]*firstList
	if diagnose != nil {
		first = firstLists(readable)
	}
	synced, err := l.startInformers(ctx, readable, onChange, first)
	if err != nil {
		return nil, nil, false, err
	}
	diagnosed := false
	if diagnose != nil {
		diagnosed = l.diagnoseFirstLists(ctx, diagnose, first)
	}
	for i, r := range readable {
		if !cache.WaitForCacheSync(ctx.Done(), synced[i]) {
			return nil, nil, false, fmt.Errorf("informer for %s did not sync: %w", r.name, context.Cause(ctx))
		}
	}
	return l, l.missingWarnings(), diagnosed, nil
}

// newLive reads the scope's namespace, whether the image API is in use and the server version
// into a Live with no informer yet, and its environment.
func newLive(ctx context.Context, c Clients, scope Scope) (*Live, env, error) {
	namespaces, err := scope.ReadNamespace(ctx, c.Kube)
	if err != nil {
		return nil, env{}, err
	}
	enabled, err := openshift.Enabled(ctx, scope.OpenShift, c.Kube.Discovery())
	if err != nil {
		return nil, env{}, err
	}
	l := &Live{scope: scope, openShift: enabled, changed: make(chan struct{}, 1), namespaces: namespaces,
		listers: map[string]cache.GenericLister{}, clients: c, owners: ownerCache{ttl: 10 * time.Second},
		serverVersion: read.ServerVersion(c.Kube)}
	e := env{allNamespaces: scope.Namespace == "", openShift: enabled, imageClient: c.Image != nil}
	if e.allNamespaces {
		l.held, l.revisions = &heldPods{}, &revisionData{}
	}
	return l, e, nil
}

// readableKinds are the kinds wanted in e that the scope can be read of (resource.check); the
// optional ones that cannot go to l.missing.
func (l *Live) readableKinds(ctx context.Context, e env) ([]*resource, error) {
	var readable []*resource
	for i := range resources {
		r := &resources[i]
		if !r.wanted(e) {
			continue
		}
		if err := r.check(ctx, l.clients, l.scope.Namespace, l.selector(r)); err != nil {
			if r.required {
				return nil, r.listError(l.scope.Namespace, err)
			}
			l.missing = append(l.missing, unread{r, err})
			continue
		}
		readable = append(readable, r)
	}
	return readable, nil
}

// firstLists are a first LIST, to be read by eachNamespace, for each kind but the unversioned.
func firstLists(readable []*resource) map[string]*firstList {
	first := map[string]*firstList{}
	for _, r := range readable {
		if !r.unversioned {
			first[r.name] = newFirstList()
		}
	}
	return first
}

// startInformers starts an informer per kind (watch), each with its first LIST if any; each
// is synced once its cache is filled and onChange was called with every object of the initial
// fill.
func (l *Live) startInformers(ctx context.Context, readable []*resource, onChange func(obj any, initial bool), first map[string]*firstList) ([]cache.InformerSynced, error) {
	synced := make([]cache.InformerSynced, len(readable))
	for i, r := range readable {
		registration, err := l.watch(ctx, r, onChange, first[r.name])
		if err != nil {
			return nil, err
		}
		synced[i] = registration.HasSynced
	}
	return synced, nil
}

// diagnoseFirstLists hands each namespace to diagnose as the informers' first LISTs are read
// (eachNamespace), and reports whether every one was. Whatever fails here (ErrRestart, a page
// that could not be read) the informers read again by themselves, with their own retries. The
// pods read are those the informer selects: each namespace's snapshot gets the pods it may hold
// by name, looked up first.
func (l *Live) diagnoseFirstLists(ctx context.Context, diagnose func(*stuck.Objects) error, first map[string]*firstList) bool {
	handOut := func(snap *stuck.Objects) error {
		l.addHeld(ctx, snap)
		return diagnose(snap)
	}
	_, err := eachNamespace(ctx, l.clients, l.scope, DefaultPageSize, handOut, first)
	return err == nil
}

// missingWarnings says what the kinds that could not be read cost the scope's diagnoses. Which
// warnings apply depends on the StatefulSets only (resource.warnIf), so only they are read from
// the caches, and only when a kind is missing: a copy of every cache at 150k pods is ~300 MB.
func (l *Live) missingWarnings() []string {
	if len(l.missing) == 0 {
		return nil
	}
	s := &stuck.Objects{StatefulSets: items[appsv1.StatefulSet](cached(l.listers["statefulsets"], false, ""))}
	return warnings(s, l.scope.Namespace, l.missing)
}

// watch starts an informer for one kind, which signals changes and feeds a lister; first, if
// set, is its first LIST.
func (l *Live) watch(ctx context.Context, r *resource, onChange func(obj any, initial bool), first *firstList) (cache.ResourceEventHandlerRegistration, error) {
	informer, err := r.newInformer(l.clients, l.scope.Namespace, l.selector(r), first, l.transform())
	if err != nil {
		return nil, err
	}
	changed := func(obj any, initial bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if onChange != nil {
			onChange(obj, initial)
		}
		signal(l.changed)
	}
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, obj any) {
			if r.matters == nil || r.matters(old, obj) {
				changed(obj, false)
			}
		},
		DeleteFunc: func(obj any) {
			changed(obj, false)
			if l.revisions != nil && r.name == "controllerrevisions" {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				l.revisions.forget(obj)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	l.listers[r.name] = cache.NewGenericLister(informer.GetIndexer(), schema.GroupResource{Resource: r.name})
	if r.whole {
		l.streams = informer.GetIndexer()
	}
	go informer.RunWithContext(ctx)
	return registration, nil
}

// selector is the label selector of the kind's informer: its liveSelector for all namespaces.
func (l *Live) selector(r *resource) string {
	if l.held == nil {
		return ""
	}
	return r.liveSelector
}

// transform slims each object before it is cached: for all namespaces, where the caches hold
// every StatefulSet and revision of the cluster, settled StatefulSets hold less
// (snapshot.SlimSettled) and revisions are metadata (revisiondata.go). Named scopes keep whole
// templates: canary compares them to tell another writer's change.
func (l *Live) transform() cache.TransformFunc {
	if l.held == nil {
		return snapshot.Slim
	}
	return func(obj any) (any, error) {
		if rev, ok := obj.(*appsv1.ControllerRevision); ok {
			obj = withoutData(rev)
		}
		return snapshot.SlimSettled(obj)
	}
}

// Changes receives a value (coalesced) whenever an object in scope changes.
func (l *Live) Changes() <-chan struct{} { return l.changed }

// OpenShift reports whether the image API is in use.
func (l *Live) OpenShift() bool { return l.openShift }

// Snapshot looks up what the caches do not hold (Refresh) and reads the caches (Cached). The
// warnings name the optional data the snapshot lacks.
func (l *Live) Snapshot(ctx context.Context) (*stuck.Objects, []string, error) {
	refreshWarnings := l.Refresh(ctx, "")
	s, err := l.Cached()
	if err != nil {
		return nil, nil, err
	}
	return s, append(warnings(s, l.scope.Namespace, l.missing), refreshWarnings...), nil
}

// Refresh asks the API, for the snapshots of namespace ("" for all) that follow, what the caches
// do not hold: with a GET per owner not asked in the last 10 s, about the controller owners of
// the terminating StatefulSets cached there; and, for all namespaces, with a GET per pod not
// asked in the last heldTTL, about the pods the StatefulSets may hold by name (held.go), and
// with a GET per revision once, the data of the revisions a diagnosis reads (revisiondata.go).
// The warnings name what it could not look up.
func (l *Live) Refresh(ctx context.Context, namespace string) []string {
	sets := items[appsv1.StatefulSet](cached(l.listers["statefulsets"], false, namespace))
	warnings := l.owners.refresh(ctx, l.clients, (&stuck.Objects{StatefulSets: sets}).OwnersToLookUp())
	if l.held != nil {
		warnings = append(warnings, l.held.refresh(ctx, l.clients, namespace, l.heldNames(namespace))...)
	}
	if l.revisions != nil {
		warnings = append(warnings, l.refreshRevisionData(ctx, namespace)...)
	}
	return warnings
}

// heldNames are the pods the cached StatefulSets of namespace ("" for all) may hold by name that
// the pods cache lacks (held.go).
func (l *Live) heldNames(namespace string) []string {
	var sets []*appsv1.StatefulSet
	for _, obj := range cached(l.listers["statefulsets"], false, namespace) {
		if set, ok := obj.(*appsv1.StatefulSet); ok {
			sets = append(sets, set)
		}
	}
	var events []*corev1.Event
	if lister, ok := l.listers["events"]; ok {
		for _, obj := range cached(lister, false, namespace) {
			if e, ok := obj.(*corev1.Event); ok {
				events = append(events, e)
			}
		}
	}
	return heldNames(sets, events, l.podCached)
}

// podCached reports whether the pods cache holds the pod namespace/name.
func (l *Live) podCached(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	_, err := l.listers["pods"].ByNamespace(ns).Get(name)
	return err == nil
}

// withHeld adds to s (read from the caches) the pods the last lookups found that its
// StatefulSets may hold by name.
func (l *Live) withHeld(s *stuck.Objects) {
	if l.held == nil {
		return
	}
	sets, events := setsAndEvents(s)
	s.Pods = append(s.Pods, l.held.known(heldNames(sets, events, l.podCached))...)
}

// addHeld looks up the pods snap's StatefulSets may hold by name that snap (a namespace of the
// paged LISTs that fill the caches) lacks, and adds those found.
func (l *Live) addHeld(ctx context.Context, snap *stuck.Objects) {
	if l.held == nil {
		return
	}
	sets, events := setsAndEvents(snap)
	read := make(map[string]bool, len(snap.Pods))
	for i := range snap.Pods {
		read[types.NamespacedName{Namespace: snap.Pods[i].Namespace, Name: snap.Pods[i].Name}.String()] = true
	}
	wanted := heldNames(sets, events, func(key string) bool { return read[key] })
	if len(wanted) == 0 {
		return
	}
	namespace, _, _ := strings.Cut(wanted[0], "/")
	_ = l.held.refresh(ctx, l.clients, namespace, wanted)
	snap.Pods = append(snap.Pods, l.held.known(wanted)...)
}

// setsAndEvents points at a snapshot's StatefulSets and Events.
func setsAndEvents(s *stuck.Objects) ([]*appsv1.StatefulSet, []*corev1.Event) {
	sets := make([]*appsv1.StatefulSet, len(s.StatefulSets))
	for i := range s.StatefulSets {
		sets[i] = &s.StatefulSets[i]
	}
	events := make([]*corev1.Event, len(s.Events))
	for i := range s.Events {
		events[i] = &s.Events[i]
	}
	return sets, events
}

// Cached builds a snapshot of the caches, without API calls. It fails with NotFoundError when a
// StatefulSet named in the scope no longer exists.
func (l *Live) Cached() (*stuck.Objects, error) {
	s := l.read("")
	if err := l.scope.Select(s); err != nil {
		return nil, err
	}
	return s, nil
}

// CachedOf builds a snapshot of one namespace from the caches, without API calls, with only the
// named StatefulSets in scope (all of the namespace's StatefulSets stay in it, for orphan
// detection).
func (l *Live) CachedOf(namespace string, names ...string) *stuck.Objects {
	s := l.read(namespace)
	s.Selected = map[types.NamespacedName]bool{}
	for _, name := range names {
		s.Selected[types.NamespacedName{Namespace: namespace, Name: name}] = true
	}
	return s
}

// NamespaceSnapshots returns a function that builds, for one namespace, the snapshot
// CachedOf(namespace) builds but with every StatefulSet of the namespace in scope (Selected nil).
// The Nodes and StorageClasses are read from the caches once, now, and shared by every snapshot
// it builds: a diagnosis only reads a snapshot. It may be called from several goroutines at once.
func (l *Live) NamespaceSnapshots() func(namespace string) *stuck.Objects {
	shared := &stuck.Objects{}
	for i := range resources {
		r := &resources[i]
		if lister, ok := l.listers[r.name]; ok && sharable(r) {
			r.put(shared, cached(lister, true, ""))
		}
	}
	return func(namespace string) *stuck.Objects {
		s := l.readWith(namespace, shared)
		s.Selected = nil
		return s
	}
}

// sharable kinds are those a snapshot of one namespace holds all of.
func sharable(r *resource) bool { return r.clusterScoped && r.name != "namespaces" }

// StatefulSet returns a copy of the cached StatefulSet (nil when it is not cached).
func (l *Live) StatefulSet(namespace, name string) *appsv1.StatefulSet {
	obj, err := l.listers["statefulsets"].ByNamespace(namespace).Get(name)
	if err != nil {
		return nil
	}
	set, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return nil
	}
	out := *set
	return &out
}

// Pod returns a copy of the cached pod (nil when it is not cached).
func (l *Live) Pod(namespace, name string) *corev1.Pod {
	obj, err := l.listers["pods"].ByNamespace(namespace).Get(name)
	if err != nil {
		return nil
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	out := *pod
	return &out
}

// ServerVersion is the API server's gitVersion, as snapshots carry it.
func (l *Live) ServerVersion() string { return l.serverVersion }

// read builds a snapshot of the caches: of one namespace, or of all ("").
func (l *Live) read(namespace string) *stuck.Objects { return l.readWith(namespace, nil) }

// readWith is read, with the Nodes and StorageClasses taken from shared when it is not nil.
func (l *Live) readWith(namespace string, shared *stuck.Objects) *stuck.Objects {
	s := &stuck.Objects{Now: time.Now(), OpenShift: l.openShift, ServerVersion: l.serverVersion, Namespaces: l.namespaces}
	for i := range resources {
		r := &resources[i]
		lister, ok := l.listers[r.name]
		switch {
		case !ok:
		case shared != nil && sharable(r):
		case r.name == "namespaces" && namespace != "":
			// The namespace itself, not a copy of every namespace.
			var objs []runtime.Object
			if obj, err := lister.Get(namespace); err == nil {
				objs = append(objs, obj)
			}
			r.put(s, objs)
		default:
			r.put(s, cached(lister, r.clusterScoped, namespace))
		}
	}
	l.withHeld(s)
	if l.revisions != nil {
		l.withRevisionData(s)
	}
	if shared != nil {
		s.Nodes, s.NodesListed = shared.Nodes, shared.NodesListed
		s.StorageClasses, s.StorageClassesListed = shared.StorageClasses, shared.StorageClassesListed
	}
	if namespace != "" && l.scope.Namespace == "" && l.streams != nil {
		// A namespace's diagnosis may read other namespaces' ImageStreams: found in the cache
		// (not copied into every snapshot).
		s.Streams = cachedStreams{l.streams}
	}
	if namespace != "" {
		var named []corev1.Namespace
		for _, ns := range s.Namespaces {
			if ns.Name == namespace {
				named = append(named, ns)
			}
		}
		s.Namespaces = named
	}
	s.Owners = l.owners.known(s.OwnersToLookUp())
	return s
}

// cached lists a cache: all of it, or one namespace of a namespaced kind.
func cached(lister cache.GenericLister, clusterScoped bool, namespace string) []runtime.Object {
	var objs []runtime.Object
	var err error
	if namespace == "" || clusterScoped {
		objs, err = lister.List(labels.Everything())
	} else {
		objs, err = lister.ByNamespace(namespace).List(labels.Everything())
	}
	if err != nil {
		return nil
	}
	return objs
}

// StatefulSetKeys lists every cached StatefulSet as namespace/name.
func (l *Live) StatefulSetKeys() []string {
	var out []string
	for _, set := range items[appsv1.StatefulSet](cached(l.listers["statefulsets"], false, "")) {
		out = append(out, types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String())
	}
	return out
}

// StatefulSetNamespaces lists the namespaces of the cached StatefulSets, each once.
func (l *Live) StatefulSetNamespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, obj := range cached(l.listers["statefulsets"], false, "") {
		if set, ok := obj.(*appsv1.StatefulSet); ok && !seen[set.Namespace] {
			seen[set.Namespace] = true
			out = append(out, set.Namespace)
		}
	}
	return out
}

// StatefulSetNames lists the StatefulSets of a namespace in the cache.
func (l *Live) StatefulSetNames(namespace string) []string {
	var out []string
	for _, set := range items[appsv1.StatefulSet](cached(l.listers["statefulsets"], false, namespace)) {
		out = append(out, set.Name)
	}
	return out
}

// PodController returns the name of the StatefulSet controlling a cached pod.
func (l *Live) PodController(namespace, name string) (string, bool) {
	obj, err := l.listers["pods"].ByNamespace(namespace).Get(name)
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

// cachedStreams finds ImageStreams in their cache.
type cachedStreams struct{ cache.Indexer }

func (c cachedStreams) Stream(namespace, name string) *imagev1.ImageStream {
	obj, found, err := c.GetByKey(types.NamespacedName{Namespace: namespace, Name: name}.String())
	if err != nil || !found {
		return nil
	}
	is, _ := obj.(*imagev1.ImageStream)
	return is
}

func (c cachedStreams) HasStreams(namespace string) bool {
	keys, err := c.IndexKeys(cache.NamespaceIndex, namespace)
	return err == nil && len(keys) > 0
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func where(namespace string) string {
	if namespace == "" {
		return "all namespaces"
	}
	return fmt.Sprintf("namespace %q", namespace)
}
