// Package watch is the watch use case: it diagnoses StatefulSets continuously from shared informers, reports new findings
// as Kubernetes Events and metrics, and, when enabled, repairs findings that have held long
// enough through the same code path as `stsdiag fix`.
package watch

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/hold"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options tune the monitor.
type Options struct {
	// Fix enables repairs of findings that held for Hold.
	Fix bool
	// Rollback (with Fix) also rolls a failing update revision back to the earlier revision whose
	// pods are Ready (repair.Policy).
	Rollback bool
	// Disruption is how a pod proven stuck is removed (watch --fix --disruption).
	Disruption apiv1.DisruptionMode
	// Hold is how long a finding must hold before it is repaired and sets Stalled (--hold).
	Hold time.Duration
	// Steady is how long a canary step's pods must have been Ready, not restarted, by their own
	// timestamps, before the step counts as healthy (rollout.Settled; --settle).
	Steady time.Duration
	// MaxRepairsPerHour bounds repair actions per namespace (0: no bound).
	MaxRepairsPerHour int
	Workers           int
	// Log receives one line per finding and repair.
	Log io.Writer
	// Diagnosis tunes each diagnosis.
	Diagnosis stuck.Options
	// NoConditions turns off the kstatus Stalled condition written on StatefulSets whose error
	// finding held for Hold (conditions.go).
	NoConditions bool
	// Events is the client Events are posted through (clients.Kube if nil): watch gives it its
	// own rate limit, so a burst of Events does not wait behind the informers' requests.
	Events typedcorev1.EventsGetter
	// EventShards is how many Events are posted at once, each object's always by the same one
	// of them (events.go; 0: defaultEventShards).
	EventShards int
	// Clock times findings, the repair budget and requeues, and paces canary analyses (real time
	// if nil).
	Clock clock.WithTicker
	// Prometheus gives each metric of a canary analysis (stsdiag.io/canary-analysis, analysis.go)
	// its Querier: watch's --prometheus flags' analysis.Dialer.Querier; nil: each metric's own
	// address, as written.
	Prometheus func(analysis.Metric) (analysis.Querier, error)
	// PrometheusOverride: --prometheus replaces every metric's address, so a metric without one
	// can be measured.
	PrometheusOverride bool
}

// Controller is the monitor. Create it with New and start it with Run.
type Controller struct {
	clients  gather.Clients
	scope    gather.Scope
	opts     Options
	metrics  *Metrics
	live     atomic.Pointer[gather.Live]
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	ready    atomic.Bool

	clock   clock.WithTicker
	mu      sync.Mutex
	seen    map[string]*setState   // StatefulSet key → its findings now
	repairs map[string][]time.Time // namespace → times of repair actions
	// awaiting maps a StatefulSet key to the pod its last repair removed: no further pod of
	// that StatefulSet is repaired until the pod is back (a new UID) and Ready.
	awaiting map[string]removedPod

	// verdicts holds the first pass's verdicts until the workers take them, touched the
	// StatefulSets queued for a change since the first pass read the caches (firstpass.go);
	// both nil once every verdict was taken.
	verdicts map[string]passVerdict
	touched  map[string]bool
	// early holds the objects changed before the caches were filled (nil after).
	early []any
	// holding: the Events of findings are held (in held) until the caches are filled, not
	// written while the API server serves their first LISTs.
	holding bool
	held    []heldEvent

	conds conditions // the Stalled conditions written (conditions.go)
	// canaries remembers, per annotated StatefulSet, when its step first looked healthy (canary.go)
	// and its step's analysis (analysis.go).
	canaries map[string]*canaryMemory
	// prometheus is Options.Prometheus, or a plain analysis.Dialer's; analyses are the running
	// analyses' goroutines, waited for when Run ends.
	prometheus func(analysis.Metric) (analysis.Querier, error)
	analyses   sync.WaitGroup
	// cacheCatchUp bounds the wait of a repair's proof for the caches to show its writes
	// (prove.go).
	cacheCatchUp time.Duration
}

// setState is what the monitor knows of one StatefulSet's findings. findings is replaced, never
// changed, under Controller.mu (the metrics read it); held is used only by the worker syncing
// the StatefulSet (the queue never hands one key to two workers at once).
type setState struct {
	findings map[string]stuck.Finding // finding key → the finding as last diagnosed
	held     hold.Tracker             // finding key → when it was first seen
}

// removedPod is a pod a repair deleted or evicted.
type removedPod struct {
	name string
	uid  string
}

// New returns a monitor for the scope.
func New(c gather.Clients, scope gather.Scope, opts Options, metrics *Metrics) *Controller {
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.EventShards == 0 {
		opts.EventShards = defaultEventShards
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	ctrl := &Controller{clients: c, scope: scope, opts: opts, metrics: metrics, clock: opts.Clock,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "stsdiag", Clock: opts.Clock}),
		seen: map[string]*setState{}, repairs: map[string][]time.Time{}, awaiting: map[string]removedPod{}, cacheCatchUp: defaultCacheCatchUp}
	ctrl.prometheus = opts.Prometheus
	if ctrl.prometheus == nil {
		ctrl.prometheus = (&analysis.Dialer{}).Querier
	}
	metrics.findings.setSource(ctrl.findingCounts)
	return ctrl
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.ready.Load() }

// Run starts the informers and workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	events := c.opts.Events
	if events == nil {
		events = c.clients.Kube.CoreV1()
	}
	recorder := newShardedRecorder(ctx, c.opts.EventShards, &typedcorev1.EventSinkImpl{Interface: events.Events("")}, scheme.Scheme, "stsdiag")
	defer recorder.Shutdown()
	c.recorder = recorder

	c.mu.Lock()
	c.verdicts, c.touched = map[string]passVerdict{}, map[string]bool{}
	c.holding = true
	c.mu.Unlock()
	// The first pass: every namespace diagnosed as the caches' first LISTs read it, or when
	// that cannot be, from the caches once they are filled (firstpass.go).
	var keys []string
	var diagnosed time.Duration
	live, warnings, streamed, err := gather.StartLiveDiagnosing(ctx, c.clients, c.scope, c.changed, func(snap *stuck.Objects) error {
		keys = append(keys, c.diagnoseNamespace(snap)...)
		diagnosed = time.Since(processStart)
		return nil
	})
	if err != nil {
		return err
	}
	for _, w := range warnings {
		c.logf("warning: %s", w)
	}
	synced := time.Since(processStart)
	c.metrics.Startup.WithLabelValues("synced").Set(synced.Seconds())
	c.logf("caches synced %.2fs after start", synced.Seconds())
	// From here on, a change queues its StatefulSets (and voids their first-pass verdicts),
	// those since the caches' first LISTs included; the workers start once the first pass is
	// done.
	c.mu.Lock()
	c.live.Store(live)
	early := c.early
	c.early = nil
	c.mu.Unlock()
	for _, obj := range early {
		c.enqueueFor(obj)
	}
	c.releaseEvents()
	if !streamed {
		keys = c.firstPass(ctx, live)
		diagnosed = time.Since(processStart)
	}
	if ctx.Err() != nil {
		c.queue.ShutDown()
		return nil
	}
	c.mu.Lock()
	if len(c.verdicts) == 0 {
		c.verdicts, c.touched = nil, nil // no StatefulSet: nothing to take, nothing to void
	}
	c.mu.Unlock()
	if diagnosed == 0 {
		diagnosed = synced // no namespace to diagnose
	}
	c.metrics.Startup.WithLabelValues("diagnosed").Set(diagnosed.Seconds())
	c.logf("first diagnosis of every StatefulSet (%d) complete %.2fs after start", len(keys), diagnosed.Seconds())
	for _, key := range keys {
		c.queue.Add(key)
	}
	var wg sync.WaitGroup
	for i := 0; i < c.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	c.ready.Store(true)
	c.logf("watching StatefulSets in %s (fix: %v, hold: %s)", scopeName(c.scope.Namespace), c.opts.Fix, c.opts.Hold)
	<-ctx.Done()
	c.ready.Store(false)
	c.queue.ShutDownWithDrain()
	wg.Wait()
	c.analyses.Wait() // ctx ended: each stops measuring
	return nil
}

func scopeName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// changed is told every object the informers add, update or delete. The objects of the caches'
// initial fill are no change: the first pass diagnoses every StatefulSet with them. A change
// before the caches are filled waits for them, to be looked up.
func (c *Controller) changed(obj any, initial bool) {
	if initial {
		return
	}
	c.mu.Lock()
	if c.live.Load() == nil {
		c.early = append(c.early, obj)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.enqueueFor(obj)
}

// enqueueFor maps a changed object to the StatefulSets it concerns.
func (c *Controller) enqueueFor(obj any) {
	live := c.live.Load()
	if live == nil {
		return // initial fill: Run enqueues everything once the caches synced
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: o.Name}.String())
	case *corev1.Pod:
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "StatefulSet" {
			c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: ref.Name}.String())
		}
	case *appsv1.ControllerRevision:
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "StatefulSet" {
			c.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: ref.Name}.String())
		}
	case *corev1.Event:
		if o.Source.Component == "stsdiag" || o.ReportingController == "stsdiag" {
			return
		}
		switch o.InvolvedObject.Kind {
		case "Pod":
			if name, ok := live.PodController(o.InvolvedObject.Namespace, o.InvolvedObject.Name); ok {
				c.enqueue(types.NamespacedName{Namespace: o.InvolvedObject.Namespace, Name: name}.String())
			}
		case "PersistentVolumeClaim":
			c.enqueueNamespace(live, o.InvolvedObject.Namespace)
		}
	case *corev1.PersistentVolumeClaim:
		c.enqueueNamespace(live, o.Namespace)
	case *imagev1.ImageStream:
		c.enqueueNamespace(live, o.Namespace)
	case *corev1.Namespace:
		c.enqueueNamespace(live, o.Name)
	case *corev1.Service:
		c.enqueueNamespace(live, o.Namespace)
	case *storagev1.StorageClass:
		for _, key := range live.StatefulSetKeys() {
			c.enqueue(key)
		}
	}
}

func (c *Controller) enqueueNamespace(live *gather.Live, ns string) {
	for _, name := range live.StatefulSetNames(ns) {
		c.enqueue(types.NamespacedName{Namespace: ns, Name: name}.String())
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.logf("%s: %v (retrying)", key, err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// processStart is when this program started (package initialisation, before main).
var processStart = time.Now()

func findingKey(f stuck.Finding) string {
	return strings.Join([]string{string(f.Code), f.Pod, f.Container, f.Image}, "/")
}

// sync diagnoses one StatefulSet from the caches, reports what is new and repairs what has held.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this monitor queued
	}
	live := c.live.Load()
	if c.verdict(key, c.clock.Now()) {
		if done, err := c.afterFirstPass(ctx, key, live, ns, name); done || err != nil {
			return err
		}
	}
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
	now := c.clock.Now()
	state, fresh := c.observe(key, rep.Findings, now)
	if !rep.RecheckAt.IsZero() {
		// A settle time or threshold matures then: look again even if nothing changes.
		c.queue.AddAfter(key, rep.RecheckAt.Sub(now)+50*time.Millisecond)
	}
	c.report(key, set, fresh)
	if !c.opts.NoConditions {
		c.syncCondition(ctx, key, set, state, now, snap.ServerVersion)
	}
	if set == nil {
		c.mu.Lock()
		delete(c.awaiting, key)
		c.mu.Unlock()
	}
	if set != nil && annotated(set) {
		// A declared canary is driven by its engine; while it runs it is the only writer of the
		// set's template and pods (no second repair path acts on it).
		if running, err := c.syncCanary(ctx, key, set, snap, rep, state, now); running || err != nil {
			return err
		}
	} else {
		c.forgetCanary(key)
		if set != nil {
			if err := c.releaseCanary(ctx, key, set); err != nil {
				return err
			}
		}
	}
	if !c.opts.Fix || set == nil {
		return nil
	}
	actions := onePod(plan.Planner{Policy: plan.Policy{Rollback: c.opts.Rollback}}.Plan(rep, snap).For(ns, name))
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

// report counts, logs and records an Event for each new finding.
func (c *Controller) report(key string, set *appsv1.StatefulSet, fresh []stuck.Finding) {
	for _, f := range fresh {
		c.metrics.FindingsTotal.WithLabelValues(string(f.Code), f.Namespace).Inc()
		c.logf("%s: new finding %s %s %s: %s", key, f.Severity, f.Code, f.Pod, f.Message)
		if set != nil {
			eventType := corev1.EventTypeWarning
			if f.Severity == apiv1.SeverityInfo {
				eventType = corev1.EventTypeNormal
			}
			c.event(set, eventType, string(f.Code), truncate(fmt.Sprintf("%s: %s Remedy: %s", f.Pod, f.Message, f.Remedy)))
		}
	}
}

// heldEvent is a finding's Event held while the caches fill.
type heldEvent struct {
	about                      *appsv1.StatefulSet // its identity only
	eventType, reason, message string
}

// event records an Event about set, or holds it while the caches fill (Controller.held).
func (c *Controller) event(set *appsv1.StatefulSet, eventType, reason, message string) {
	c.mu.Lock()
	if c.holding {
		about := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace, UID: set.UID, ResourceVersion: set.ResourceVersion}}
		c.held = append(c.held, heldEvent{about, eventType, reason, message})
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.recorder.Event(set, eventType, reason, message)
}

// releaseEvents records the Events held while the caches filled, and those to come.
func (c *Controller) releaseEvents() {
	c.mu.Lock()
	held := c.held
	c.held, c.holding = nil, false
	c.mu.Unlock()
	for _, e := range held {
		c.recorder.Event(e.about, e.eventType, e.reason, e.message)
	}
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

// findingCounts counts the findings present now by StatefulSet, code and reason, for the
// stsdiag_statefulset_findings and stsdiag_findings gauges (computed when Prometheus scrapes,
// never half-filled). seen holds only the StatefulSets that have findings.
func (c *Controller) findingCounts() map[findingLabels]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[findingLabels]int{}
	for _, state := range c.seen {
		for _, f := range state.findings {
			out[findingLabels{namespace: f.Namespace, statefulSet: f.StatefulSet, code: string(f.Code), reason: f.Reason}]++
		}
	}
	return out
}

func (c *Controller) logf(format string, args ...any) {
	fmt.Fprintf(c.opts.Log, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

func truncate(s string) string {
	const max = 1000
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}
