package gather

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/internal/text"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Revisions held as metadata. An all-namespaces Live caches every ControllerRevision of the
// cluster without its data (revisionMetadata): a diagnosis reads a revision's data — the
// template it records — only for a StatefulSet whose status is not settled (which revision
// holds today's template while a spec is not observed, what a rollout changes, a rollback's
// target) or whose images OpenShift's image lookup has a say in (which revision brought an
// image: resolver's cause), as check -A's triage reads those namespaces deep. Refresh GETs the
// data of such sets' revisions once each: a revision's data never changes (ValidateImmutableField
// of data in ValidateControllerRevisionUpdate, pkg/apis/apps/validation/validation.go:361@v1.37.2),
// so it is kept by UID until the revision is deleted.

// withoutData is the transform of an all-namespaces Live's revisions: a copy without data.
func withoutData(rev *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	c := *rev
	c.Data = runtime.RawExtension{}
	return &c
}

// revisionData holds the data Refresh fetched, by revision UID.
type revisionData struct {
	mu    sync.Mutex
	byUID map[types.UID][]byte
}

func (d *revisionData) get(uid types.UID) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	raw, ok := d.byUID[uid]
	return raw, ok
}

func (d *revisionData) put(uid types.UID, raw []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byUID == nil {
		d.byUID = map[types.UID][]byte{}
	}
	d.byUID[uid] = raw
}

// forget drops a deleted revision's data.
func (d *revisionData) forget(obj any) {
	if gone, ok := obj.(interface{ GetUID() types.UID }); ok {
		d.mu.Lock()
		delete(d.byUID, gone.GetUID())
		d.mu.Unlock()
	}
}

// readsRevisionData reports whether a diagnosis may read the data of the StatefulSet's
// revisions: its status is not settled, or (OpenShift) image lookup has a say in its images.
func readsRevisionData(set *appsv1.StatefulSet, images *resolver.Admission) bool {
	return !controller.StatusSettled(set) || (images != nil && imageLookupConcerns(images, set))
}

// refreshRevisionData GETs the data of the revisions of namespace's ("" for all) StatefulSets
// that readsRevisionData that are not held yet. The warnings name those it could not read.
func (l *Live) refreshRevisionData(ctx context.Context, namespace string) []string {
	var images *resolver.Admission
	if l.openShift && l.streams != nil {
		images = &resolver.Admission{Stream: cachedStreams{l.streams}.Stream}
	}
	read := map[types.UID]bool{}
	for _, set := range items[appsv1.StatefulSet](cached(l.listers["statefulsets"], false, namespace)) {
		if readsRevisionData(&set, images) {
			read[set.UID] = true
		}
	}
	if len(read) == 0 {
		return nil
	}
	var warnings []string
	for _, obj := range cached(l.listers["controllerrevisions"], false, namespace) {
		rev, ok := obj.(*appsv1.ControllerRevision)
		if !ok {
			continue
		}
		owner := metav1.GetControllerOfNoCopy(rev)
		if owner == nil || !read[owner.UID] || len(rev.Data.Raw) > 0 {
			continue
		}
		if _, held := l.revisions.get(rev.UID); held {
			continue
		}
		full, err := l.clients.reader().AppsV1().ControllerRevisions(rev.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("revision %s/%s read as metadata only: %s", rev.Namespace, rev.Name, text.FirstLine(err)))
			continue
		case full.UID != rev.UID:
			continue // deleted and created again: its own event brings it
		}
		l.revisions.put(rev.UID, full.Data.Raw)
	}
	return warnings
}

// withRevisionData gives the snapshot's revisions held as metadata the data Refresh fetched
// (the snapshot's revisions are copies: the cache is not changed).
func (l *Live) withRevisionData(s *stuck.Objects) {
	for i := range s.Revisions {
		rev := &s.Revisions[i]
		if len(rev.Data.Raw) > 0 || rev.Data.Object != nil {
			continue
		}
		if raw, ok := l.revisions.get(rev.UID); ok {
			rev.Data = runtime.RawExtension{Raw: raw}
		}
	}
}
