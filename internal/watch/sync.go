package watch

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/stuck"
)

// findingKey names a finding of one StatefulSet across syncs: its code, pod, container and image.
func findingKey(f stuck.Finding) string {
	return strings.Join([]string{string(f.Code), f.Pod, f.Container, f.Image}, "/")
}

// sync diagnoses one StatefulSet from the caches and does what follows: it reports what is new
// (Events, metrics, the Stalled condition), drives the canary declared on it, and repairs what
// has held.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued
	}
	live := c.live.Load()
	if c.verdict(key, c.clock.Now()) {
		if done, err := c.afterFirstPass(ctx, key, live, ns, name); done || err != nil {
			return err
		}
	}
	snap, rep, set := c.diagnoseOne(ctx, live, ns, name)
	now := c.clock.Now()
	state := c.publish(ctx, key, set, rep, snap.ServerVersion, now)
	if running, err := c.driveCanary(ctx, key, set, snap, rep, state, now); running || err != nil {
		return err
	}
	return c.repairHeld(ctx, key, set, snap, rep, state, now)
}

// diagnoseOne diagnoses one StatefulSet from the caches (its namespace's objects and the
// cluster-scoped ones). set is nil when it is gone or out of -l's scope, as its report then.
func (c *Controller) diagnoseOne(ctx context.Context, live *gather.Live, ns, name string) (*stuck.Objects, *model.Report, *appsv1.StatefulSet) {
	start := time.Now()
	live.Refresh(ctx, ns)
	snap := live.CachedOf(ns, name)
	rep := diagnose.Report(snap, c.opts.Diagnosis)
	c.metrics.Latency.Observe(time.Since(start).Seconds())
	var set *appsv1.StatefulSet
	for i := range snap.StatefulSets {
		if snap.StatefulSets[i].Name == name {
			set = &snap.StatefulSets[i]
		}
	}
	if set != nil && c.scope.Selector != nil && !c.scope.Selector.Matches(labels.Set(set.Labels)) {
		// Out of -l's scope (now, or since its labels changed): as if it were gone.
		set, rep = nil, &model.Report{}
	}
	return snap, rep, set
}

// publish observes a StatefulSet's findings and says what is new: metrics, a log line and an
// Event per new finding, and the Stalled condition (unless --no-conditions); it looks again
// when a time-based rule of the report matures. It returns the set's state.
func (c *Controller) publish(ctx context.Context, key string, set *appsv1.StatefulSet, rep *model.Report, serverVersion string, now time.Time) *setState {
	state, fresh := c.observe(key, rep.Findings, now)
	if !rep.RecheckAt.IsZero() {
		// A settle time or threshold matures then: look again even if nothing changes.
		c.queue.AddAfter(key, rep.RecheckAt.Sub(now)+50*time.Millisecond)
	}
	c.report(key, set, fresh)
	if !c.opts.NoConditions {
		c.syncCondition(ctx, key, set, state, now, serverVersion)
	}
	return state
}

// observe records the findings of one StatefulSet now and returns its state and the findings
// seen for the first time.
func (c *Controller) observe(key string, findings []stuck.Finding, now time.Time) (*setState, []stuck.Finding) {
	current := make(map[string]stuck.Finding, len(findings))
	keys := make([]string, 0, len(findings))
	for _, f := range findings {
		k := findingKey(f)
		current[k] = f
		keys = append(keys, k)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	state := c.seen[key]
	if state == nil {
		state = &setState{}
	}
	var fresh []stuck.Finding
	for _, k := range state.held.Observe(now, keys) {
		fresh = append(fresh, current[k])
	}
	state.findings = current
	if len(current) == 0 {
		delete(c.seen, key)
	} else {
		c.seen[key] = state
	}
	return state, fresh
}
