package gather

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TriageRead is what Triage read besides the namespaces' snapshots.
type TriageRead struct {
	Streamed
	// Deep are the namespaces read whole (pods, claims, revisions, Events), in key order; the
	// others were diagnosed from their StatefulSets and Services alone.
	Deep []string
	// Settled counts the namespaces whose every StatefulSet the status calls settled.
	Settled int
}

// deepKinds are the kinds Triage reads only in the namespaces whose StatefulSets are not all
// settled: the bulk of a cluster.
var deepKinds = map[string]bool{"pods": true, "controllerrevisions": true, "persistentvolumeclaims": true, "events": true}

// rereadKinds are read again, whole, in a deep namespace: the cluster-wide LIST kept of each
// StatefulSet only what the triage decides on (triageOnly).
var rereadKinds = map[string]bool{"statefulsets": true}

// deepAhead bounds the deep namespaces read ahead of their diagnosis (memory: that many
// namespaces' objects).
const deepAhead = 4

// ControllerManagerLease reads kube-controller-manager's leader Lease (one GET).
func ControllerManagerLease(ctx context.Context, c Clients) stuck.ControllerManagerLease {
	l, err := c.Kube.CoordinationV1().Leases(stuck.ControllerManagerLeaseNamespace).Get(ctx, stuck.ControllerManagerLeaseName, metav1.GetOptions{})
	switch {
	case err == nil:
		return stuck.ControllerManagerLease{Lease: l}
	case apierrors.IsNotFound(err):
		return stuck.ControllerManagerLease{NotFound: true}
	}
	return stuck.ControllerManagerLease{Err: text.FirstLine(err)}
}

// Triage reads an all-namespaces scope (by selector only) by what the StatefulSets' own statuses
// say, instead of reading every pod of the cluster. First, cluster-wide, what is small and every
// diagnosis needs: StatefulSets, Services, ControllerRevisions (as metadata, through c.Metadata
// when set), the cluster-scoped kinds and ImageStreams; of the StatefulSets only what the triage
// decides on is kept. A namespace is read deep — its StatefulSets again, whole, and its pods,
// claims, revisions and Warning Events, unfiltered, so an orphan pod holding a name is still seen
// — when it holds a StatefulSet whose status is not settled (controller.StatusSettled), a revision
// whose StatefulSet is gone, replaced or terminating or that has no controller, or, where the
// image API is in use, a
// StatefulSet whose images the image lookup concerns (a local ImageStream name, an image trigger).
// Each deep namespace's snapshot goes to fn with settled false; every other namespace holding a
// StatefulSet goes to fn with settled true, its snapshot holding its StatefulSets and Services
// (diagnose it with stuck.DiagnoseSettled).
//
// The statuses are only as fresh as the controller that writes them: callers check its leader
// Lease first (ControllerManagerLease) and read everything when it is not renewed.
//
// fn is called in the API server's key order of namespaces, never concurrently; up to deepAhead
// deep namespaces are read ahead of it.
func Triage(ctx context.Context, c Clients, scope Scope, fn func(snap *stuck.Objects, settled bool) error) (*TriageRead, error) {
	if scope.Namespace != "" || len(scope.Names) > 0 {
		return nil, errors.New("gather: Triage reads all namespaces, by selector only")
	}
	t := &triage{c: c, scope: scope, out: &TriageRead{}, shared: &stuck.Objects{Now: time.Now()},
		unreadErr: make([]error, len(resources))}
	if err := t.readClusterWide(ctx); err != nil {
		return nil, err
	}
	if t.servicesListed && t.headlessOnly {
		t.addGoverningServices(ctx)
	}
	t.shared.Shared = stuck.NewShared(t.shared)
	t.pickDeepNamespaces()
	namespaces := t.splitByNamespace()
	missing := unreadKinds(t.unreadErr)
	if err := t.handOut(ctx, namespaces, missing, fn); err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		t.out.Warnings = warnings(&stuck.Objects{}, "", missing)
	}
	return t.out, nil
}

// triage is one Triage read. sets, services and revisions are set to nil once used: garbage
// before the namespaces are read deep.
type triage struct {
	c     Clients
	scope Scope
	out   *TriageRead
	// shared holds the cluster-scoped kinds and ImageStreams, shared by every snapshot.
	shared *stuck.Objects
	// sets are every StatefulSet, of which only what the triage decides on (triageOnly).
	sets                         []appsv1.StatefulSet
	services                     []corev1.Service
	servicesListed, headlessOnly bool
	revisions                    []revisionOwner
	mu                           sync.Mutex
	// unreadErr[i] is why optional kind resources[i] could not be read.
	unreadErr []error
	// deep are the namespaces read deep.
	deep map[string]bool
	// byNamespace holds the snapshot of every namespace not yet handed out.
	byNamespace map[string]*stuck.Objects
}

// readClusterWide reads, cluster-wide and in parallel, the environment, the server version, the
// revisions' owners (revisionMetadata) and every kind but the deep ones.
func (t *triage) readClusterWide(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	environment := readEnvAndVersion(gctx, g, t.c, t.scope, &t.out.Streamed)
	g.Go(func() error {
		var err error
		t.revisions, err = revisionMetadata(gctx, t.c)
		return err
	})
	for i := range resources {
		if deepKinds[resources[i].name] {
			continue
		}
		g.Go(func() error { return t.readKind(gctx, i, environment) })
	}
	return g.Wait()
}

// readKind LISTs kind resources[i] cluster-wide, when wanted: the StatefulSets (triageOnly) and
// the Services (headlessServices) into t, any other kind into the shared snapshot.
func (t *triage) readKind(ctx context.Context, i int, environment func() (env, error)) error {
	r := &resources[i]
	if e, err := environment(); err != nil || !r.wanted(e) {
		return err
	}
	var l runtime.Object
	var err error
	if r.name == "services" {
		l, t.headlessOnly, err = headlessServices(ctx, t.c, r)
	} else {
		l, err = r.listAll(ctx, t.c, "")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil && r.required:
		return r.listError("", err)
	case err != nil:
		t.unreadErr[i] = err
		return nil
	}
	switch l := l.(type) {
	case *appsv1.StatefulSetList:
		// Only the triage's facts are kept (triageOnly): the deep namespaces LIST their
		// StatefulSets again, whole, with their pods.
		for i := range l.Items {
			triageOnly(&l.Items[i])
		}
		t.sets = l.Items
	case *corev1.ServiceList:
		t.services, t.servicesListed = l.Items, true
	default:
		r.put(t.shared, nil)
		if !setItems(t.shared, l) {
			return fmt.Errorf("gather: no snapshot field for %s", r.name)
		}
	}
	return nil
}

// addGoverningServices adds to the headless Services the other governing ones
// (governingServices); when they cannot be read, the Services are unread.
func (t *triage) addGoverningServices(ctx context.Context) {
	var err error
	if t.services, err = governingServices(ctx, t.c, t.sets, t.services); err != nil {
		t.servicesListed, t.services = false, nil
		for i := range resources {
			if resources[i].name == "services" {
				t.unreadErr[i] = err
			}
		}
	}
}

// pickDeepNamespaces picks the namespaces to read deep: those holding a revision whose
// StatefulSet is gone, replaced or terminating or that has no controller, a StatefulSet whose
// status is not settled, or, where the image API is in use, one whose images the image lookup
// concerns.
func (t *triage) pickDeepNamespaces() {
	t.deep = map[string]bool{}
	live := map[string]*appsv1.StatefulSet{}
	for i := range t.sets {
		live[types.NamespacedName{Namespace: t.sets[i].Namespace, Name: t.sets[i].Name}.String()] = &t.sets[i]
	}
	for _, rev := range t.revisions {
		if set := live[types.NamespacedName{Namespace: rev.namespace, Name: rev.name}.String()]; set == nil || set.UID != rev.uid || set.DeletionTimestamp != nil {
			t.deep[rev.namespace] = true // an orphaned revision: its pods may be orphans too
		}
	}
	t.revisions = nil
	images := &resolver.Admission{Stream: t.shared.Shared.Streams.Stream}
	for i := range t.sets {
		if !controller.StatusSettled(&t.sets[i]) || (t.out.OpenShift && imageLookupConcerns(images, &t.sets[i])) {
			t.deep[t.sets[i].Namespace] = true
		}
	}
}

// splitByNamespace gives every namespace holding a StatefulSet, or read deep, its snapshot (in
// t.byNamespace) with its StatefulSets and Services, and returns them in the API server's key
// order.
func (t *triage) splitByNamespace() []string {
	t.byNamespace = map[string]*stuck.Objects{}
	// A namespace's StatefulSets are a slice of the LIST's items, not copies: the API server
	// answers in key order, so a namespace's items are contiguous (else they are copied). Those of
	// a namespace read from statuses alone keep only what stuck.DiagnoseSettled reads
	// (settledOnly): with their pod templates, the StatefulSets were most of the heap at 150k pods
	// of the bench's realistic mix.
	runs, contiguous := namespaceRuns(t.sets)
	for _, r := range runs {
		ns := t.sets[r[0]].Namespace
		s := t.at(ns)
		if contiguous {
			s.StatefulSets = t.sets[r[0]:r[1]:r[1]]
		} else {
			s.StatefulSets = append(s.StatefulSets, t.sets[r[0]:r[1]]...)
		}
		if !t.deep[ns] {
			for i := range s.StatefulSets {
				settledOnly(&s.StatefulSets[i])
			}
		}
	}
	for ns := range t.deep {
		t.at(ns)
	}
	for _, svc := range t.services {
		if s := t.byNamespace[svc.Namespace]; s != nil {
			s.Services = append(s.Services, svc)
		}
	}
	t.sets, t.services = nil, nil
	namespaces := make([]string, 0, len(t.byNamespace))
	for ns := range t.byNamespace {
		namespaces = append(namespaces, ns)
	}
	sort.Slice(namespaces, func(i, j int) bool { return namespaceBefore(namespaces[i], namespaces[j]) })
	return namespaces
}

// namespaceRuns are the runs [lo, hi) of sets of one namespace each, and whether each namespace
// has one run only.
func namespaceRuns(sets []appsv1.StatefulSet) (runs [][2]int, contiguous bool) {
	contiguous, seen := true, map[string]bool{}
	for lo := 0; lo < len(sets); {
		hi := lo + 1
		for hi < len(sets) && sets[hi].Namespace == sets[lo].Namespace {
			hi++
		}
		contiguous = contiguous && !seen[sets[lo].Namespace]
		seen[sets[lo].Namespace] = true
		runs = append(runs, [2]int{lo, hi})
		lo = hi
	}
	return runs, contiguous
}

// at is namespace ns's snapshot, made from the shared one on first use.
func (t *triage) at(ns string) *stuck.Objects {
	if s := t.byNamespace[ns]; s != nil {
		return s
	}
	s := new(stuck.Objects)
	*s = *t.shared
	s.ServerVersion, s.OpenShift, s.ServicesListed = t.out.ServerVersion, t.out.OpenShift, t.servicesListed
	t.byNamespace[ns] = s
	return s
}

// handOut hands each namespace's snapshot to fn in turn, the deep ones once read (up to
// deepAhead ahead), and drops it after.
func (t *triage) handOut(ctx context.Context, namespaces []string, missing []unread, fn func(snap *stuck.Objects, settled bool) error) error {
	reads := readDeep(ctx, t.c, namespaces, t.deep, t.byNamespace)
	defer reads.stop()
	warned := map[string]bool{}
	owners := read.NewOwners(t.c.Clients)
	for _, ns := range namespaces {
		snap := t.byNamespace[ns]
		var words []string
		if t.deep[ns] {
			t.out.Deep = append(t.out.Deep, ns)
			var err error
			if words, err = takeDeep(ctx, reads, owners, ns, snap, missing); err != nil {
				return err
			}
		} else {
			t.out.Settled++
			words = warnings(snap, "", missing)
		}
		t.out.warnOnce(warned, snap, words)
		if err := t.scope.Select(snap); err != nil {
			return err
		}
		err := fn(snap, !t.deep[ns])
		delete(t.byNamespace, ns)
		reads.done(ns)
		if err != nil {
			return err
		}
	}
	return nil
}

// takeDeep waits for deep namespace ns's read into snap, looks up its owners, and returns its
// warnings.
func takeDeep(ctx context.Context, reads *deepReads, owners *read.Owners, ns string, snap *stuck.Objects, missing []unread) ([]string, error) {
	unreadHere, err := reads.take(ns)
	if err != nil {
		return nil, err
	}
	var ownerWarnings []string
	snap.Owners, ownerWarnings = owners.LookUp(ctx, snap.OwnersToLookUp())
	return append(warnings(snap, "", append(append([]unread(nil), missing...), unreadHere...)), ownerWarnings...), nil
}

// headlessSelector selects the headless Services (spec.clusterIP None): a field selector of
// Services that kube-apiserver v1.33.13 and v1.37.2 serve (checked on both); a server that cannot
// select by it answers 400 and Triage LISTs every Service.
const headlessSelector = "spec.clusterIP=" + corev1.ClusterIPNone

// maxServiceGets bounds the governing Services Triage GETs one by one (those named by a
// StatefulSet and not headless, or missing); past it, it LISTs every Service instead.
const maxServiceGets = 20

// headlessServices LISTs the cluster's headless Services only, when the server can select them
// (headlessOnly), else every Service. Diagnosis reads a Service only as the governing Service a
// StatefulSet names (stuck's governingService), which should be headless: on a real cluster a
// small part of the Services, and of their bytes (issue 36's realistic mix: 1 in 7).
func headlessServices(ctx context.Context, c Clients, r *resource) (l runtime.Object, headlessOnly bool, err error) {
	l, err = r.list(ctx, c, "", metav1.ListOptions{FieldSelector: headlessSelector})
	if apierrors.IsBadRequest(err) {
		l, err = r.listAll(ctx, c, "")
		return l, false, err
	}
	if err != nil {
		return nil, false, err
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, false, err
	}
	for _, o := range objs {
		snapshot.SlimInPlace(o)
	}
	return l, true, nil
}

// governingServices completes the headless Services with every other Service a StatefulSet not
// being deleted names as its governing Service (not headless: a finding; or missing): one GET
// each, or, past maxServiceGets, one LIST of every Service. So every snapshot holds each
// governing Service the full read would find, and only those besides headless ones.
func governingServices(ctx context.Context, c Clients, sets []appsv1.StatefulSet, headless []corev1.Service) ([]corev1.Service, error) {
	have := make(map[string]bool, len(headless))
	for i := range headless {
		have[types.NamespacedName{Namespace: headless[i].Namespace, Name: headless[i].Name}.String()] = true
	}
	var wanted [][2]string
	for i := range sets {
		set := &sets[i]
		if name := set.Spec.ServiceName; name != "" && set.DeletionTimestamp == nil && !have[types.NamespacedName{Namespace: set.Namespace, Name: name}.String()] {
			have[types.NamespacedName{Namespace: set.Namespace, Name: name}.String()] = true
			wanted = append(wanted, [2]string{set.Namespace, name})
		}
	}
	if len(wanted) > maxServiceGets {
		return allServices(ctx, c)
	}
	out := headless
	for _, w := range wanted {
		svc, err := c.Kube.CoreV1().Services(w[0]).Get(ctx, w[1], metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return allServices(ctx, c)
		}
		snapshot.SlimInPlace(svc)
		out = append(out, *svc)
	}
	return out, nil
}

// allServices LISTs every Service of the cluster.
func allServices(ctx context.Context, c Clients) ([]corev1.Service, error) {
	for i := range resources {
		if r := &resources[i]; r.name == "services" {
			l, err := r.listAll(ctx, c, "")
			if err != nil {
				return nil, err
			}
			return l.(*corev1.ServiceList).Items, nil
		}
	}
	return nil, errors.New("gather: no services in the resource table")
}

// triageOnly drops from a StatefulSet of the cluster-wide LIST what neither the triage
// (controller.StatusSettled, imageLookupConcerns) nor stuck.DiagnoseSettled reads: of its pod
// template's spec it keeps the containers' names and images, and no claim template. At 150k pods
// of the bench's realistic mix the StatefulSets' templates were most of the heap while the other
// cluster-wide LISTs were decoded.
func triageOnly(set *appsv1.StatefulSet) {
	spec := &set.Spec.Template.Spec
	*spec = corev1.PodSpec{InitContainers: imagesOnly(spec.InitContainers), Containers: imagesOnly(spec.Containers)}
	set.Spec.VolumeClaimTemplates = nil
}

func imagesOnly(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

// settledOnly drops from a StatefulSet of a settled namespace what stuck.DiagnoseSettled does
// not read — its pod template's spec and its claim templates — once the triage decided (it reads
// the metadata, spec.replicas, the selector, serviceName, the update strategy, the template's
// labels and the status). TestTriagedIsFull holds the reports equal.
func settledOnly(set *appsv1.StatefulSet) {
	set.Spec.Template.Spec = corev1.PodSpec{}
	set.Spec.VolumeClaimTemplates = nil
}

// imageLookupConcerns reports whether OpenShift's image lookup has a say in the StatefulSet's
// images: an image trigger, or an image of its template that names an ImageStream admission
// would look up (anything but a reference by digest, one not local, or a name no stream has) or
// a stream's own repository by tag (resolver.InternalTagStream: not local, yet reported when the
// tag got its image after the revision that set it). The image findings of such a set are not
// implied by its status, so its namespace is read deep.
func imageLookupConcerns(images *resolver.Admission, set *appsv1.StatefulSet) bool {
	if _, ok := set.Annotations[resolver.TriggerAnnotation]; ok {
		return true
	}
	forced := resolver.Forced(set.Annotations, set.Spec.Template.Annotations)
	spec := &set.Spec.Template.Spec
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			switch res := images.Resolve(c.Image, set.Namespace, forced); res.Outcome {
			case resolver.NotLocal:
				if resolver.InternalTagStream(images, res.Ref) != nil {
					return true
				}
			case resolver.ByDigest, resolver.NoStream:
			default:
				return true
			}
		}
	}
	return false
}

// revisionOwner is what Triage keeps of a ControllerRevision: its namespace and the StatefulSet
// that controls it (no name when no controller does).
type revisionOwner struct {
	namespace, name string
	uid             types.UID
}

// revisionMetadata LISTs every ControllerRevision's metadata — as PartialObjectMetadata through
// c.Metadata (the server sends no revision data), else whole — and keeps of each only the
// StatefulSet controlling it, if one does, or that none does: the rest (labels, annotations, managedFields) is
// garbage before the other LISTs end.
func revisionMetadata(ctx context.Context, c Clients) ([]revisionOwner, error) {
	var metas []*metav1.ObjectMeta
	if c.Metadata != nil {
		l, err := c.Metadata.Resource(appsv1.SchemeGroupVersion.WithResource("controllerrevisions")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing controllerrevisions in all namespaces: %w", err)
		}
		for i := range l.Items {
			metas = append(metas, &l.Items[i].ObjectMeta)
		}
	} else {
		l, err := c.reader().AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing controllerrevisions in all namespaces: %w", err)
		}
		for i := range l.Items {
			metas = append(metas, &l.Items[i].ObjectMeta)
		}
	}
	var out []revisionOwner
	for _, m := range metas {
		switch ref := metav1.GetControllerOfNoCopy(m); {
		case ref == nil:
			// No controller at all: its StatefulSet (or DaemonSet) was deleted with
			// --cascade=orphan, and its pods may run without one (PodsWithoutStatefulSet).
			out = append(out, revisionOwner{namespace: m.Namespace})
		case ref.Kind == "StatefulSet":
			out = append(out, revisionOwner{namespace: m.Namespace, name: ref.Name, uid: ref.UID})
		}
	}
	return out, nil
}

// deepReads reads deep namespaces ahead of their diagnosis, at most deepAhead at a time.
type deepReads struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}
	result map[string]chan deepResult
}

type deepResult struct {
	unread []unread
	err    error
}

// readDeep starts reading the deep namespaces, in order, into their snapshots.
func readDeep(ctx context.Context, c Clients, namespaces []string, deep map[string]bool, snaps map[string]*stuck.Objects) *deepReads {
	ctx, cancel := context.WithCancel(ctx)
	d := &deepReads{cancel: cancel, slots: make(chan struct{}, deepAhead), result: map[string]chan deepResult{}}
	type job struct {
		ns   string
		snap *stuck.Objects
	}
	var order []job // taken from snaps now: the caller drops each entry once diagnosed
	for _, ns := range namespaces {
		if deep[ns] {
			order = append(order, job{ns, snaps[ns]})
			d.result[ns] = make(chan deepResult, 1)
		}
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for _, j := range order {
			select {
			case d.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			result := d.result[j.ns]
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				unread, err := readNamespace(ctx, c, j.ns, j.snap)
				result <- deepResult{unread, err}
			}()
		}
	}()
	return d
}

// take waits for namespace ns's deep read.
func (d *deepReads) take(ns string) ([]unread, error) {
	r := <-d.result[ns]
	return r.unread, r.err
}

// done frees the slot of a deep namespace once diagnosed; a settled one holds none.
func (d *deepReads) done(ns string) {
	if _, ok := d.result[ns]; ok {
		<-d.slots
	}
}

// stop ends the reads still going and waits for them.
func (d *deepReads) stop() {
	d.cancel()
	d.wg.Wait()
}

// readNamespace LISTs the deep kinds of namespace ns, and its StatefulSets again whole, into
// snap, in parallel.
func readNamespace(ctx context.Context, c Clients, ns string, snap *stuck.Objects) ([]unread, error) {
	lists := make([]runtime.Object, len(resources))
	errs := make([]error, len(resources))
	var wg sync.WaitGroup
	for i := range resources {
		if r := &resources[i]; deepKinds[r.name] || rereadKinds[r.name] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lists[i], errs[i] = r.listAll(ctx, c, ns)
			}()
		}
	}
	wg.Wait()
	var missing []unread
	for i := range resources {
		r := &resources[i]
		switch {
		case !deepKinds[r.name] && !rereadKinds[r.name]:
		case errs[i] != nil && r.required:
			return nil, r.listError(ns, errs[i])
		case errs[i] != nil:
			missing = append(missing, unread{r, errs[i]})
		default:
			r.put(snap, nil)
			if !setItems(snap, lists[i]) {
				objs, err := meta.ExtractList(lists[i])
				if err != nil {
					return nil, err
				}
				r.put(snap, objs)
			}
		}
	}
	return missing, nil
}
