package watch

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
)

// removedPod is a pod a repair deleted or evicted.
type removedPod struct {
	name string
	uid  string
}

// repairHeld repairs, with --fix, what fix plans for a StatefulSet once a finding behind one of
// the actions has held for --hold; a StatefulSet gone is forgotten.
func (c *Controller) repairHeld(ctx context.Context, key string, set *appsv1.StatefulSet, snap *stuck.Objects, rep *model.Report, state *setState, now time.Time) error {
	if set == nil {
		c.mu.Lock()
		delete(c.awaiting, key)
		c.mu.Unlock()
	}
	if !c.opts.Fix || set == nil {
		return nil
	}
	actions := onePod(plan.Planner{Policy: plan.Policy{Rollback: c.opts.Rollback}}.Plan(rep, snap).For(set.Namespace, set.Name))
	if !c.heldForRepair(key, state, actions, now) {
		return nil
	}
	return c.repair(ctx, key, set, snap, actions)
}

// onePod keeps the template changes and the first pod removal of a StatefulSet's plan: watch
// --fix removes at most one pod per StatefulSet per pass, as prometheus-operator's repair does,
// so a PodDisruptionBudget or a quorum sees one disruption at a time.
func onePod(actions []model.Action) []model.Action {
	var out []model.Action
	removal := false
	for _, a := range actions {
		if a.Kind() == apiv1.DeletePod || a.Kind() == apiv1.ForceDeletePod {
			if removal {
				continue
			}
			removal = true
		}
		out = append(out, a)
	}
	return out
}

// awaitingReady returns the pod the last repair of the StatefulSet removed while it is not yet
// back (another UID) and Ready in snap; "" once it is (and forgets it).
func (c *Controller) awaitingReady(key string, snap *stuck.Objects) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	removed, ok := c.awaiting[key]
	if !ok {
		return ""
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	for i := range snap.Pods {
		p := &snap.Pods[i]
		if p.Namespace == ns && p.Name == removed.name && string(p.UID) != removed.uid && podReady(p) {
			delete(c.awaiting, key)
			return ""
		}
	}
	return removed.name
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// heldForRepair reports whether a finding behind one of the planned actions (one of their
// causes) has held for Hold; if one has not yet, it looks again when it will have.
func (c *Controller) heldForRepair(key string, state *setState, actions []model.Action, now time.Time) bool {
	if len(actions) == 0 {
		return false
	}
	causes := map[apiv1.Code]bool{}
	for _, a := range actions {
		causes[a.Cause] = true
	}
	var keys []string
	for k, f := range state.findings {
		if causes[f.Code] {
			keys = append(keys, k)
		}
	}
	due, next := state.held.Due(now, c.opts.Hold, keys)
	if !next.IsZero() {
		c.queue.AddAfter(key, next.Sub(now)+50*time.Millisecond)
	}
	return len(due) > 0
}

// repair applies fix's planned actions for one StatefulSet, within the namespace's budget.
func (c *Controller) repair(ctx context.Context, key string, set *appsv1.StatefulSet, snap *stuck.Objects, actions []model.Action) error {
	if !c.reserveRepairs(set.Namespace, len(actions)) {
		for _, a := range actions {
			c.metrics.Repairs.WithLabelValues(string(a.Kind()), "ratelimited", a.Namespace).Inc()
		}
		c.logf("%s: repair postponed: %d repairs per hour in namespace %s already made", key, c.opts.MaxRepairsPerHour, set.Namespace)
		c.recorder.Event(set, corev1.EventTypeWarning, "RepairRateLimited", fmt.Sprintf("stsdiag postponed %d repair(s): --max-repairs-per-hour %d reached in this namespace", len(actions), c.opts.MaxRepairsPerHour))
		c.queue.AddAfter(key, 5*time.Minute)
		return nil
	}
	if waiting := c.awaitingReady(key, snap); waiting != "" {
		c.refundRepairs(set.Namespace, len(actions))
		c.logf("%s: repair postponed: pod %s, removed by the last repair, is not back and Ready yet", key, waiting)
		c.queue.AddAfter(key, 5*time.Second)
		return nil
	}
	exec := repair.New(repair.Options{Kube: c.clients.Kube, Prove: c.prover(key, set.Namespace, set.Name), DryRun: apiv1.DryRunNone,
		Policy: plan.Policy{Rollback: c.opts.Rollback}, Disruption: c.opts.Disruption})
	done, err := exec.Apply(ctx, actions)
	changed := 0
	for _, a := range done {
		if a.Result == apiv1.ResultDone {
			changed++
			if (a.Kind() == apiv1.DeletePod || a.Kind() == apiv1.ForceDeletePod) && !a.DryRun {
				c.mu.Lock()
				c.awaiting[key] = removedPod{name: a.Pod, uid: a.UID}
				c.mu.Unlock()
			}
		}
		c.metrics.Repairs.WithLabelValues(string(a.Kind()), string(a.Result), a.Namespace).Inc()
		// The Event's reason is the code of the finding the action repairs.
		reason := string(a.Cause)
		eventType := corev1.EventTypeNormal
		if a.Result != apiv1.ResultDone {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(set, eventType, reason, truncate(fmt.Sprintf("stsdiag repair %s: %s: %s", a.Result, explain.Action(a), a.Message)))
		c.logf("%s: repair %s: %s: %s", key, a.Result, explain.Action(a), a.Message)
	}
	c.refundRepairs(set.Namespace, len(actions)-changed)
	// Look again once the repair had time to work; a finding that holds is due again.
	c.queue.AddAfter(key, c.opts.Hold+time.Second)
	return err
}

// reserveRepairs takes n repair actions from the namespace's hourly budget in one decision
// (check and record under one lock, so concurrent workers can never exceed it) and reports
// whether they fit. Unused reservations go back with refundRepairs.
func (c *Controller) reserveRepairs(namespace string, n int) bool {
	if c.opts.MaxRepairsPerHour <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	cutoff := now.Add(-time.Hour)
	recent := c.repairs[namespace][:0]
	for _, t := range c.repairs[namespace] {
		if t.After(cutoff) {
			recent = append(recent, t)
		}
	}
	if len(recent)+n > c.opts.MaxRepairsPerHour {
		c.repairs[namespace] = recent
		return false
	}
	for i := 0; i < n; i++ {
		recent = append(recent, now)
	}
	c.repairs[namespace] = recent
	return true
}

// refundRepairs gives back n reserved actions that changed nothing (skipped or failed).
func (c *Controller) refundRepairs(namespace string, n int) {
	if c.opts.MaxRepairsPerHour <= 0 || n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.repairs[namespace]
	c.repairs[namespace] = list[:max(len(list)-n, 0)]
}
