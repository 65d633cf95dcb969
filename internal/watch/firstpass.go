package watch

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck"
)

// The first pass. Once the caches synced, every StatefulSet is diagnosed namespace by namespace
// from the caches, before any worker runs: one snapshot and one diagnosis per namespace (not
// one per StatefulSet, as a worker's sync builds), the cluster-scoped kinds read once for all.
// Each StatefulSet's findings are observed and reported (metrics, log, Events) as its sync would;
// then stsdiag_startup_seconds{phase="diagnosed"} is set, and every StatefulSet is handed to the
// workers for what follows a diagnosis (the Stalled condition, canaries, repairs). A worker
// does not diagnose a StatefulSet again when the first pass's verdict still stands (verdict).
//
// A namespace's diagnosis gives each of its StatefulSets the findings a sync's gives it
// (CachedOf(namespace, name) reads the same namespace; the diagnosis of one StatefulSet reads
// only its namespace's objects and the cluster-scoped ones; orphans are found by their
// StatefulSet's name, in scope either way), which TestFirstPassEqualsSyncs checks on the
// scenarios of testdata/.

// passVerdict is what the first pass found for one StatefulSet, until a worker takes it.
type passVerdict struct {
	// recheckAt is when a time-based rule of its namespace may change a verdict (zero: none).
	recheckAt time.Time
}

// firstPass diagnoses every cached StatefulSet, observes and reports its findings and returns
// the keys of the StatefulSets diagnosed. It stops early, returning nil, when ctx ends.
func (c *Controller) firstPass(ctx context.Context, live *gather.Live) []string {
	live.Refresh(ctx, "")
	namespaceSnapshot := live.NamespaceSnapshots()
	// Every namespace's snapshot holds the same Nodes: indexed once, not once per namespace.
	var nodes *stuck.Shared
	var indexNodes sync.Once
	read := func(ns string) *stuck.Objects {
		s := namespaceSnapshot(ns)
		indexNodes.Do(func() { nodes = stuck.NewShared(s) })
		s.Shared = nodes.For(s)
		return s
	}
	namespaces := live.StatefulSetNamespaces()
	next := make(chan string)
	var (
		mu   sync.Mutex
		keys []string
		wg   sync.WaitGroup
	)
	for i := 0; i < c.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ns := range next {
				done := c.diagnoseNamespace(read(ns))
				mu.Lock()
				keys = append(keys, done...)
				mu.Unlock()
			}
		}()
	}
	for _, ns := range namespaces {
		select {
		case next <- ns:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return keys
}

// diagnoseNamespace diagnoses every StatefulSet of one namespace's snapshot and does, for each,
// what sync does with its diagnosis up to the Stalled condition: observe and report its
// findings, and look again when a time-based rule matures. It returns their keys.
func (c *Controller) diagnoseNamespace(snap *stuck.Objects) []string {
	rep := diagnose.Report(snap, c.opts.Diagnosis)
	byKey := map[string][]stuck.Finding{}
	for _, f := range rep.Findings {
		k := types.NamespacedName{Namespace: f.Namespace, Name: f.StatefulSet}.String()
		byKey[k] = append(byKey[k], f)
	}
	now := c.clock.Now()
	keys := make([]string, 0, len(snap.StatefulSets))
	for i := range snap.StatefulSets {
		set := &snap.StatefulSets[i]
		key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}.String()
		keys = append(keys, key)
		findings := byKey[key]
		if c.scope.Selector != nil && !c.scope.Selector.Matches(labels.Set(set.Labels)) {
			set, findings = nil, nil // out of -l's scope, as in sync
		}
		_, fresh := c.observe(key, findings, now)
		c.report(key, set, fresh)
		if !rep.RecheckAt.IsZero() {
			// The namespace's earliest: its other StatefulSets are diagnosed again needlessly then.
			c.queue.AddAfter(key, rep.RecheckAt.Sub(now)+50*time.Millisecond)
		}
		c.mu.Lock()
		c.verdicts[key] = passVerdict{recheckAt: rep.RecheckAt}
		c.mu.Unlock()
	}
	return keys
}

// verdict takes the first pass's verdict of a StatefulSet: ok when there was one and it still
// stands (nothing of the StatefulSet changed since the first pass read the caches, and no
// time-based rule matured since), so that sync need not diagnose it again.
func (c *Controller) verdict(key string, now time.Time) (ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.verdicts[key]
	if !found {
		return false
	}
	ok = !c.touched[key] && (v.recheckAt.IsZero() || now.Before(v.recheckAt))
	delete(c.verdicts, key)
	if len(c.verdicts) == 0 {
		c.verdicts, c.touched = nil, nil
	}
	return ok
}

// afterFirstPass is sync for a StatefulSet whose first-pass verdict stands: what follows its
// diagnosis (the Stalled condition, a canary released), from the cached StatefulSet and the
// findings observed. It reports false, having done nothing, when sync must diagnose it instead:
// a declared canary and --fix with findings read the snapshot, and a StatefulSet gone or out of
// -l's scope takes sync's path.
func (c *Controller) afterFirstPass(ctx context.Context, key string, live *gather.Live, ns, name string) (bool, error) {
	set := live.StatefulSet(ns, name)
	if set == nil || annotated(set) || (c.scope.Selector != nil && !c.scope.Selector.Matches(labels.Set(set.Labels))) {
		return false, nil
	}
	c.mu.Lock()
	state := c.seen[key]
	c.mu.Unlock()
	if state == nil {
		state = &setState{} // no findings (observe keeps none)
	}
	if c.opts.Fix && len(state.findings) > 0 {
		return false, nil
	}
	if !c.opts.NoConditions {
		c.syncCondition(ctx, key, set, state, c.clock.Now(), live.ServerVersion())
	}
	c.forgetCanary(key)
	return true, c.releaseCanary(ctx, key, set)
}
