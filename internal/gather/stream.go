package gather

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// DefaultPageSize is the limit of each page of EachNamespace's LISTs.
const DefaultPageSize int64 = 5000

// ErrRestart means EachNamespace could not finish namespace by namespace (a LIST did not come in
// key order, or a page's continue token expired): the namespaces already handed out may have
// been incomplete. Discard them and Gather instead.
var ErrRestart = errors.New("the paged LISTs could not be read namespace by namespace")

// Streamed is what EachNamespace read besides the namespaces' snapshots.
type Streamed struct {
	// OpenShift and ServerVersion are as in every snapshot.
	OpenShift     bool
	ServerVersion string
	// Warnings name optional data that could not be read (as Gather's).
	Warnings []string
}

// EachNamespace reads what Gather reads for all namespaces (scope.Namespace and scope.Names
// must be empty), but hands out one snapshot per namespace, in turn, as soon as every kind of
// that namespace is read, and drops it after fn returns: memory holds one namespace and a page
// per kind, not the cluster. The namespaced kinds are read in pages of DefaultPageSize, in parallel, up
// to two pages ahead; the API server answers every LIST in key order (/<resource>/<namespace>/<name>),
// namespace by namespace, which the pages are merged by. Cluster-scoped kinds, and the kinds a
// namespace's diagnosis reads in other namespaces (ImageStreams), are read whole first and shared
// by every snapshot. fn is called for every namespace holding any object read
// (a namespace of orphaned pods alone counts), never concurrently. A LIST out of key order or an
// expired continue token gives ErrRestart.
//
// Paged LISTs are served by the watch cache, as the unpaged ones: the first page is a consistent
// read from the cache, every next page one from the cache's snapshot at the first page's
// resourceVersion (k8s.io/apiserver@v0.37.2 pkg/storage/cacher/delegator/interface.go:38-62,
// cacher.go:1437-1472; ListFromCacheSnapshot, on by default since 1.34,
// pkg/features/kube_features.go:410-413), and the items come in key order from the cache's
// ordered store (watch_cache.go waitAndListExactRV, OrderedListPrefix); older releases read the
// pages from etcd, also in key order.
func EachNamespace(ctx context.Context, c Clients, scope Scope, fn func(*stuck.Objects) error) (*Streamed, error) {
	return eachNamespace(ctx, c, scope, DefaultPageSize, fn, nil)
}

// eachNamespace is EachNamespace, also delivering every kind it reads to first[kind] when
// there is one (by resource name): the kind's items, once all are read, or nothing. A kind
// delivered to first is read as an all-namespaces Live's informer reads it (with its
// liveSelector), and so handed to fn.
func eachNamespace(ctx context.Context, c Clients, scope Scope, pageSize int64, fn func(*stuck.Objects) error, first map[string]*firstList) (*Streamed, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	if scope.Namespace != "" || len(scope.Names) > 0 {
		return nil, errors.New("gather: EachNamespace reads all namespaces, by selector only")
	}
	s := &streamRead{c: c, scope: scope, out: &Streamed{}, shared: &stuck.Objects{Now: time.Now()},
		first: first, streams: make([]*pageStream, len(resources)), unreadErr: make([]error, len(resources))}
	defer s.deliverFirst()
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.readers.Wait() // no LIST of this read outlives it
	}()
	if err := s.start(ctx, pageSize); err != nil {
		return nil, err
	}
	active, err := s.open()
	if err != nil {
		return nil, err
	}
	s.shared.Shared = stuck.NewShared(s.shared)
	missing := unreadKinds(s.unreadErr)
	warned := map[string]bool{}
	if err := s.handOut(ctx, active, missing, warned, fn); err != nil {
		return nil, err
	}
	if len(warned) == 0 {
		// No namespace: the warnings of an empty cluster.
		s.out.Warnings = warnings(&stuck.Objects{}, "", missing)
	}
	return s.out, nil
}

// streamRead is one eachNamespace read.
type streamRead struct {
	c     Clients
	scope Scope
	out   *Streamed
	// shared holds the kinds read whole, shared by every snapshot.
	shared *stuck.Objects
	first  map[string]*firstList
	// streams[i] reads namespaced kind resources[i] page by page.
	streams []*pageStream
	readers sync.WaitGroup
	mu      sync.Mutex
	// unreadErr[i] is why optional kind resources[i] could not be read.
	unreadErr []error
}

// deliverFirst delivers the paged kinds read to the end to first, once every namespace was
// handed out (or the read failed; the readers have ended): not while their objects are still
// copied into the namespaces' snapshots (the informers slim what they are given, in place).
func (s *streamRead) deliverFirst() {
	for _, st := range s.streams {
		if st != nil {
			st.first.deliver(st.complete)
		}
	}
	for _, f := range s.first {
		f.deliver(false) // not read to the end (a no-op for the lists delivered)
	}
}

// start reads the environment, the server version and the cluster-scoped and whole kinds (and
// waits for them), and starts a page stream of every other kind, under ctx.
func (s *streamRead) start(ctx context.Context, pageSize int64) error {
	g, gctx := errgroup.WithContext(ctx)
	environment := readEnvAndVersion(gctx, g, s.c, s.scope, s.out)
	for i := range resources {
		r := &resources[i]
		if r.clusterScoped || r.whole {
			g.Go(func() error { return s.readWhole(gctx, i, environment) })
			continue
		}
		st := &pageStream{r: r, pages: make(chan runtime.Object, 1), first: s.first[r.name], pageSize: pageSize}
		s.streams[i] = st
		s.readers.Add(1)
		go func() {
			defer s.readers.Done()
			st.read(ctx, s.c, environment)
		}()
	}
	return g.Wait()
}

// readWhole LISTs kind resources[i] at once, when wanted, into the shared snapshot and first.
func (s *streamRead) readWhole(ctx context.Context, i int, environment func() (env, error)) error {
	r := &resources[i]
	if e, err := environment(); err != nil || !r.wanted(e) {
		return err
	}
	l, err := r.listAll(ctx, s.c, "")
	if err == nil {
		if err := s.first[r.name].add(l); err != nil {
			return err
		}
		s.first[r.name].deliver(true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		r.put(s.shared, nil)
		if !setItems(s.shared, l) {
			return fmt.Errorf("gather: no snapshot field for %s", r.name)
		}
	case r.required:
		return r.listError("", err)
	default:
		s.unreadErr[i] = err
	}
	return nil
}

// open waits for each stream's first page: the streams of the kinds listed are active; an
// optional kind that could not be read is unread.
func (s *streamRead) open() ([]*pageStream, error) {
	var active []*pageStream
	for i, st := range s.streams {
		if st == nil {
			continue
		}
		if err := st.next(); err != nil {
			return nil, err
		}
		if st.unread != nil {
			s.unreadErr[i] = st.unread
		}
		if st.listed {
			active = append(active, st)
		}
	}
	return active, nil
}

// handOut hands each namespace's snapshot to fn, in the API server's key order, warning of
// each warning once (in warned).
func (s *streamRead) handOut(ctx context.Context, active []*pageStream, missing []unread, warned map[string]bool, fn func(*stuck.Objects) error) error {
	owners := read.NewOwners(s.c.Clients)
	for {
		ns, ok := nextNamespace(active)
		if !ok {
			return nil
		}
		snap, err := s.snapshotOf(ns, active)
		if err != nil {
			return err
		}
		var ownerWarnings []string
		snap.Owners, ownerWarnings = owners.LookUp(ctx, snap.OwnersToLookUp())
		s.out.warnOnce(warned, snap, append(warnings(snap, "", missing), ownerWarnings...))
		if err := s.scope.Select(snap); err != nil {
			return err
		}
		if err := fn(snap); err != nil {
			return err
		}
	}
}

// nextNamespace is the first namespace, in key order, at the head of the streams; false when
// they are all read.
func nextNamespace(active []*pageStream) (ns string, ok bool) {
	for _, s := range active {
		if head, more := s.head(); more && (!ok || namespaceBefore(head, ns)) {
			ns, ok = head, true
		}
	}
	return ns, ok
}

// snapshotOf is namespace ns's snapshot: the shared kinds, and its items of every stream.
func (s *streamRead) snapshotOf(ns string, active []*pageStream) (*stuck.Objects, error) {
	snap := new(stuck.Objects)
	*snap = *s.shared
	snap.ServerVersion, snap.OpenShift = s.out.ServerVersion, s.out.OpenShift
	for _, st := range active {
		items, err := st.take(ns)
		if err != nil {
			return nil, err
		}
		st.r.put(snap, nil)
		if !setSlice(snap, items) {
			return nil, fmt.Errorf("gather: no snapshot field for %s", st.r.name)
		}
	}
	return snap, nil
}

// readEnvAndVersion reads the server version into out, in g, and returns the environment of an
// all-namespaces read, read once on first use (its image API into out).
func readEnvAndVersion(ctx context.Context, g *errgroup.Group, c Clients, scope Scope, out *Streamed) func() (env, error) {
	environment := sync.OnceValues(func() (env, error) {
		e, err := readEnv(ctx, c, scope)
		out.OpenShift = e.openShift
		return e, err
	})
	g.Go(func() error {
		out.ServerVersion = read.ServerVersion(c.Kube)
		return nil
	})
	return environment
}

// unreadKinds are the optional kinds that could not be read (unreadErr[i] of resources[i]), in
// the table's order, as Gather's.
func unreadKinds(unreadErr []error) []unread {
	var missing []unread
	for i, err := range unreadErr {
		if err != nil {
			missing = append(missing, unread{&resources[i], err})
		}
	}
	return missing
}

// warnOnce adds each of words not in warned yet to out's and snap's warnings, and to warned.
func (out *Streamed) warnOnce(warned map[string]bool, snap *stuck.Objects, words []string) {
	for _, w := range words {
		if !warned[w] {
			warned[w] = true
			out.Warnings = append(out.Warnings, w)
			snap.Warnings = append(snap.Warnings, w)
		}
	}
}

// readEnv is the environment of an all-namespaces read: whether the image API is in use.
func readEnv(ctx context.Context, c Clients, scope Scope) (env, error) {
	on, err := openshift.Enabled(ctx, scope.OpenShift, c.Kube.Discovery())
	return env{allNamespaces: true, openShift: on, imageClient: c.Image != nil}, err
}

// pageStream reads one namespaced kind page by page, ahead of its reader, and hands its items out
// namespace by namespace.
type pageStream struct {
	r     *resource
	pages chan runtime.Object
	err   error // set before pages is closed
	// listed is false when the kind is not read here (not wanted, or unread).
	listed bool
	unread error
	// items of the current page from at on; last is the namespace of the item before at.
	items reflect.Value
	at    int
	// itemsType is the type of the kind's Items (of the first page).
	itemsType reflect.Type
	// each: the pages are slimpb.Each (items is a []runtime.Object), whose items take copies
	// into the namespaces' slices.
	each bool
	// first, if set, is given every page read, and then (by eachNamespace, once every
	// namespace was handed out) the list if complete.
	first *firstList
	// complete is set, when the pages end, to whether the kind was read to the end.
	complete bool
	// pageSize is the limit of each LIST.
	pageSize int64
}

// read LISTs the kind page by page into s.pages; it closes s.pages at the end, with s.err set
// when a page could not be read. The first page decides whether an optional kind is read at all.
// Through a slimpb.Pager the next page is asked for as soon as this one's continue token
// arrives, while this one is still read (at most pagesAhead pages asked for and not yet taken
// here); else one page after the other.
func (s *pageStream) read(ctx context.Context, c Clients, environment func() (env, error)) {
	defer close(s.pages)
	if s.r.when != nil {
		if e, err := environment(); err != nil || !s.r.wanted(e) {
			s.err = err
			return
		}
	}
	o := metav1.ListOptions{FieldSelector: s.r.fieldSelector, Limit: s.pageSize}
	if s.first != nil {
		// The LIST of an all-namespaces Live's informer: as the informer reads the kind.
		o.LabelSelector = s.r.liveSelector
	}
	pages := sequentialPages(ctx, c, s.r, o)
	if p, ok := c.Read.(slimpb.Pager); ok && s.r.newList != nil {
		// For an informer, each item in an allocation of its own: cached as it is, not copied.
		s.each = s.first != nil
		pages = pipelinedPages(ctx, p, s.r, o, s.each)
	}
	for first := true; ; first = false {
		l, err, more := pages()
		if !more {
			s.complete = ctx.Err() == nil // a canceled read ends its pages early
			return
		}
		if err != nil {
			switch {
			case first && !s.r.required:
				s.unread = err
			case first:
				s.err = s.r.listError("", err)
			case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
				s.err = fmt.Errorf("%w: listing %s: %v", ErrRestart, s.r.name, err)
			default:
				s.err = s.r.listError("", err)
			}
			return
		}
		objs, err := meta.ExtractList(l)
		if err != nil {
			s.err = err
			return
		}
		for _, obj := range objs {
			if s.first != nil {
				// Filling watch -A's caches: slimmed as they will be cached (Live.transform),
				// the settled StatefulSets' templates dropped here, before the first pass (its
				// diagnosis is the same: TestSettledSlimIsFull).
				snapshot.SlimSettledInPlace(obj)
			} else {
				snapshot.SlimInPlace(obj)
			}
		}
		if err := s.first.add(l); err != nil {
			s.err = err
			return
		}
		select {
		case s.pages <- l:
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		}
	}
}

// pagesAhead bounds the pages of a kind asked for and not yet handed on (at least 2: a page
// asks for the next while it is itself not handed on).
const pagesAhead = 2

// sequentialPages returns the pages of the kind one after the other: each call the next page,
// or more false after the last (or after an error).
func sequentialPages(ctx context.Context, c Clients, r *resource, o metav1.ListOptions) func() (runtime.Object, error, bool) {
	done := false
	return func() (runtime.Object, error, bool) {
		if done {
			return nil, nil, false
		}
		l, err := r.list(ctx, c, "", o)
		if err != nil {
			done = true
			return nil, err, true
		}
		lm, err := meta.ListAccessor(l)
		if err != nil {
			done = true
			return nil, err, true
		}
		o.Continue = lm.GetContinue()
		done = o.Continue == ""
		return l, nil, true
	}
}

// fetched is one page, or why it could not be read.
type fetched struct {
	list runtime.Object
	err  error
}

// pipelinedPages returns the pages of the kind in order, each asked for as soon as the page
// before it told its continue token; each page a slimpb.Each of the kind when each is set.
func pipelinedPages(ctx context.Context, p slimpb.Pager, r *resource, o metav1.ListOptions, each bool) func() (runtime.Object, error, bool) {
	pl := &pipeline{ctx: ctx, p: p, r: r, o: o, each: each,
		slots: make(chan struct{}, pagesAhead), order: make(chan chan fetched, pagesAhead+1)}
	pl.slots <- struct{}{}
	pl.fetch(o.Continue)
	return pl.next
}

// pipeline is one pipelinedPages read.
type pipeline struct {
	ctx  context.Context
	p    slimpb.Pager
	r    *resource
	o    metav1.ListOptions
	each bool
	// slots bounds the pages asked for and not yet handed on (pagesAhead).
	slots chan struct{}
	// order holds each page's result channel, in page order; it is closed after the last page
	// or a failed one.
	order chan chan fetched
}

// fetch asks for the page at continue token cont, its result next in order.
func (pl *pipeline) fetch(cont string) {
	res := make(chan fetched, 1)
	pl.order <- res
	go pl.readPage(cont, res)
}

// readPage reads the page at cont into res, asking for the next page as soon as this one's
// continue token arrives; after the last page, or a failed one, it closes order.
func (pl *pipeline) readPage(cont string, res chan<- fetched) {
	page := pl.o
	page.Continue = cont
	into := pl.r.newList()
	if pl.each {
		into = &slimpb.Each{List: into}
	}
	asked := false
	next := func(token string) {
		if asked || token == "" {
			return
		}
		asked = true
		select {
		case pl.slots <- struct{}{}:
			pl.fetch(token)
		case <-pl.ctx.Done():
			close(pl.order)
		}
	}
	err := pl.p.ListPage(pl.ctx, "", page, into, func(m metav1.ListMeta) { next(m.Continue) })
	if err == nil && !asked {
		// No metadata before the items (or none at all): ask now.
		if lm, lerr := meta.ListAccessor(into); lerr == nil {
			next(lm.GetContinue())
		}
	}
	if err != nil || !asked {
		if asked {
			// The next page is on its way and will close order; this one's error comes first.
			res <- fetched{nil, err}
			return
		}
		res <- fetched{into, err}
		close(pl.order)
		return
	}
	res <- fetched{into, nil}
}

// next is the next page, in order, or more false after the last.
func (pl *pipeline) next() (runtime.Object, error, bool) {
	res, ok := <-pl.order
	if !ok {
		return nil, nil, false
	}
	var f fetched
	select {
	case f = <-res:
	case <-pl.ctx.Done():
		return nil, pl.ctx.Err(), true
	}
	<-pl.slots
	if f.err != nil {
		return nil, f.err, true
	}
	return f.list, nil, true
}

// next moves to the next page with items; at the end s.items is empty. The first call decides
// s.listed.
func (s *pageStream) next() error {
	for {
		l, ok := <-s.pages
		if !ok {
			s.items = reflect.Value{}
			return s.err
		}
		list := l
		if e, ok := l.(*slimpb.Each); ok {
			list = e.List
			s.items = reflect.ValueOf(e.Items)
		} else {
			s.items = reflect.ValueOf(l).Elem().FieldByName("Items")
		}
		s.at, s.listed, s.itemsType = 0, true, reflect.ValueOf(list).Elem().FieldByName("Items").Type()
		if s.items.Len() > 0 {
			return nil
		}
	}
}

// head is the namespace of the next item, if any.
func (s *pageStream) head() (string, bool) {
	if !s.items.IsValid() || s.at >= s.items.Len() {
		return "", false
	}
	return s.namespaceAt(s.at), true
}

// namespaceAt is the namespace of the current page's item i.
func (s *pageStream) namespaceAt(i int) string {
	item := s.items.Index(i)
	if s.each {
		return item.Interface().(metav1.Object).GetNamespace()
	}
	return item.Addr().Interface().(metav1.Object).GetNamespace()
}

// slice is the current page's items from i to j, of the kind's Items type: a slice of the page,
// or for slimpb.Each pages a copy of each item.
func (s *pageStream) slice(i, j int) reflect.Value {
	if !s.each {
		// Capped: an append to the snapshot's slice must not write over the page's next items.
		return s.items.Slice3(i, j, j)
	}
	out := reflect.MakeSlice(s.itemsType, j-i, j-i)
	for k := i; k < j; k++ {
		out.Index(k - i).Set(s.items.Index(k).Elem().Elem())
	}
	return out
}

// take returns the items of namespace ns at the head of the stream (none when it is at another
// namespace), reading pages as needed: a slice of the page when they are all in one, else a copy.
func (s *pageStream) take(ns string) (reflect.Value, error) {
	var out reflect.Value
	for {
		if !s.items.IsValid() {
			break
		}
		from := s.at
		for s.at < s.items.Len() {
			// Each item's namespace is checked against the one before it: a stream's namespaces
			// never go back (ns is the smallest head of all streams).
			if item := s.namespaceAt(s.at); item != ns {
				if namespaceBefore(item, ns) {
					return out, fmt.Errorf("%w: %s: namespace %q after %q", ErrRestart, s.r.name, item, ns)
				}
				break
			}
			s.at++
		}
		part := s.slice(from, s.at)
		switch {
		case !out.IsValid():
			out = part
		case part.Len() > 0:
			out = reflect.AppendSlice(reflect.MakeSlice(out.Type(), 0, out.Len()+part.Len()), out)
			out = reflect.AppendSlice(out, part)
		}
		if s.at < s.items.Len() {
			break
		}
		if err := s.next(); err != nil {
			return out, err
		}
	}
	if !out.IsValid() {
		out = reflect.MakeSlice(s.itemsType, 0, 0)
	}
	return out, nil
}

// namespaceBefore reports whether namespace a's objects come before b's in the API server's key
// order: keys are <prefix>/<namespace>/<name>, so "a-b" (then '-') comes before "a" (then '/').
func namespaceBefore(a, b string) bool {
	n := min(len(a), len(b))
	if a[:n] != b[:n] {
		return a[:n] < b[:n]
	}
	switch {
	case len(a) == len(b):
		return false
	case len(a) < len(b):
		return '/' < b[n]
	default:
		return a[n] < '/'
	}
}

// setSlice stores items in the snapshot's field of their type; false when it has none.
func setSlice(s *stuck.Objects, items reflect.Value) bool {
	fields := reflect.ValueOf(s).Elem()
	for i := 0; i < fields.NumField(); i++ {
		if f := fields.Field(i); f.Type() == items.Type() {
			f.Set(items)
			return true
		}
	}
	return false
}

// setItems stores the items of a LIST in the snapshot's field of their type, in place: at 100k
// pods a copy would double their memory.
// It reports false when the snapshot has no such field (then put the items).
func setItems(s *stuck.Objects, list runtime.Object) bool {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	items := v.Elem().FieldByName("Items")
	return items.IsValid() && setSlice(s, items)
}
