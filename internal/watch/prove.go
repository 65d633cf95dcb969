package watch

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
)

// defaultCacheCatchUp bounds how long a proof waits for the informers' caches to show the
// repair's writes; past it the proof is a fresh LIST. A cache is normally a few milliseconds
// behind the API server.
const defaultCacheCatchUp = 5 * time.Second

// prover is the proof of watch --fix's repairs (and of its canary rollbacks) of one StatefulSet:
// its informers' caches, diagnosed as sync diagnoses them, once they show every write the
// executor made in this repair — the patched StatefulSet at the resourceVersion its patch
// returned or a later one, each removed pod gone, terminating or replaced. The caches are read
// again every 10 ms for at most cacheCatchUp; caches that have not caught up by then are not
// trusted and the proof is a fresh LIST of the StatefulSet instead (what every proof was before
// watch proved on its caches), so no pod is removed on data older than a write.
func (c *Controller) prover(key, namespace, name string) repair.Prover {
	return func(ctx context.Context, after []repair.Write) (*model.Report, *stuck.Objects, error) {
		live := c.live.Load()
		if live != nil && c.caughtUp(ctx, live, after) {
			live.Refresh(ctx, namespace)
			snap := live.CachedOf(namespace, name)
			return diagnose.Report(snap, c.opts.Diagnosis), snap, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c.logf("%s: the informers' caches did not show the repair's writes within %s: proving on a fresh LIST", key, c.cacheCatchUp)
		scope := gather.Scope{Namespace: namespace, Names: []string{name}, OpenShift: c.scope.OpenShift}
		return diagnose.FromSource(ctx, gather.Lister{Clients: c.clients, Scope: scope}, c.opts.Diagnosis)
	}
}

// caughtUp waits, for at most cacheCatchUp, until the caches show every write.
func (c *Controller) caughtUp(ctx context.Context, live *gather.Live, writes []repair.Write) bool {
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, c.cacheCatchUp, true, func(context.Context) (bool, error) {
		for _, w := range writes {
			if !cacheShows(live, w) {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

// cacheShows reports whether the caches show a write: the patched StatefulSet (same UID) at the
// patch's resourceVersion or a later one, or the removed pod gone, terminating, or another pod of
// its name. Resource versions are compared as integers, as KEP-5504 (comparable resource
// versions) allows (k8s.io/apimachinery@v0.35.4 pkg/util/resourceversion); a version that is not
// one must be the very version written.
func cacheShows(live *gather.Live, w repair.Write) bool {
	switch w.Kind {
	case apiv1.PatchImage, apiv1.Rollback:
		set := live.StatefulSet(w.Namespace, w.Name)
		if set == nil || string(set.UID) != w.UID {
			return false
		}
		cmp, err := resourceversion.CompareResourceVersion(set.ResourceVersion, w.ResourceVersion)
		if err != nil {
			return set.ResourceVersion == w.ResourceVersion
		}
		return cmp >= 0
	}
	pod := live.Pod(w.Namespace, w.Name)
	return pod == nil || string(pod.UID) != w.UID || pod.DeletionTimestamp != nil
}
