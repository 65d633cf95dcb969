package gather

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stsdiag/stsdiag/internal/slimpb"
)

// firstList is an informer's first LIST, read page by page by EachNamespace for watch's first
// pass: the informer's reflector takes it, once, instead of asking the API server again. It is
// delivered whole, at the resourceVersion of its first page (every page of a paged LIST is of
// that resourceVersion), from which the reflector then WATCHes; or not at all, when the kind
// could not be read to the end (then the reflector LISTs).
type firstList struct {
	ready chan struct{}
	taken atomic.Bool

	mu    sync.Mutex
	list  *objectList // set on delivery, nil when there is none
	meta  metav1.ListMeta
	items []runtime.Object
	// paged: the first page was added (its resourceVersion is the list's).
	paged bool
	done  bool
}

func newFirstList() *firstList { return &firstList{ready: make(chan struct{})} }

// add appends a page's items: a slimpb.Each's as they are (each an allocation of its own), else
// copied (a list's Items array is dropped after its namespaces' diagnoses, as the reflector's
// own LIST copies: meta.ExtractListWithAlloc).
func (f *firstList) add(page runtime.Object) error {
	if f == nil {
		return nil
	}
	var objs []runtime.Object
	var err error
	if e, ok := page.(*slimpb.Each); ok {
		objs = e.Items
	} else if objs, err = meta.ExtractListWithAlloc(page); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.paged {
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return err
		}
		f.meta.ResourceVersion, f.paged = lm.GetResourceVersion(), true
	}
	f.items = append(f.items, objs...)
	return nil
}

// deliver ends the list: complete, it is the reflector's first LIST; else the reflector LISTs.
// Only the first call counts.
func (f *firstList) deliver(complete bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	if complete {
		f.list = &objectList{ListMeta: f.meta, Items: f.items}
	}
	f.items = nil
	close(f.ready)
}

// take waits for the delivery and returns the list, the first time only; nil when there is none
// (or ctx ended).
func (f *firstList) take(ctx context.Context) runtime.Object {
	if f == nil || f.taken.Swap(true) {
		return nil
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.list
	f.list = nil
	if l == nil {
		return nil
	}
	return l
}

// objectList is a list of objects of any kind, as a reflector reads a LIST's result:
// meta.ExtractListWithAlloc takes []runtime.Object items as they are.
type objectList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

func (l *objectList) DeepCopyObject() runtime.Object {
	out := &objectList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]runtime.Object, len(l.Items))
	for i, item := range l.Items {
		out.Items[i] = item.DeepCopyObject()
	}
	return out
}
