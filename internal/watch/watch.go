// Package watch is the watch use case (`stsdiag watch`): it diagnoses StatefulSets continuously
// from shared informers and says what it finds as Kubernetes Events, Prometheus metrics and the
// kstatus Stalled condition; with --fix it repairs findings that held through fix's planner and
// executor, and it steps the canaries declared on StatefulSets with the step machine `stsdiag
// canary` drives too (engine.Turn). One file per job:
//
//   - watch.go: the controller — start-up (the first diagnosis of every StatefulSet) and workers;
//   - route.go: which StatefulSets an informer event concerns;
//   - sync.go: one StatefulSet's sync, phase by phase, and its findings' memory;
//   - firstpass.go: the first diagnosis, namespace by namespace;
//   - events.go, metrics.go, conditions.go: what watch says (Events, metrics, Stalled and
//     Reconciling);
//   - repair.go, prove.go: --fix's repairs, their budget and their proofs on the caches;
//   - canary.go, analysis.go: the canaries declared by annotations — watch's port of the step
//     machine — and their analyses, measured in the background;
//   - service.go: Serve, the controller with its HTTP server (package serve) and leader
//     election (package leader).
package watch

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/hold"
	"github.com/stsdiag/stsdiag/stuck"
)

// Options tune the controller.
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

// Controller is watch's controller. Create it with New and start it with Run.
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

// setState is what the controller knows of one StatefulSet's findings. findings is replaced, never
// changed, under Controller.mu (the metrics read it); held is used only by the worker syncing
// the StatefulSet (the queue never hands one key to two workers at once).
type setState struct {
	findings map[string]stuck.Finding // finding key → the finding as last diagnosed
	held     hold.Tracker             // finding key → when it was first seen
}

// New returns a controller for the scope.
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

// Run starts the informers and workers and blocks until ctx ends: Events are recorded from the
// start (those of findings held while the caches fill), every StatefulSet is diagnosed once (the
// first pass, firstpass.go), then the workers sync each StatefulSet an event touches.
func (c *Controller) Run(ctx context.Context) error {
	defer c.startEvents(ctx)()
	keys, ok, err := c.diagnoseAll(ctx)
	if err != nil {
		return err
	}
	if !ok {
		c.queue.ShutDown()
		return nil
	}
	c.work(ctx, keys)
	return nil
}

// startEvents starts the Event recorder (Options.Events' client, EventShards broadcasters) and
// returns its shutdown.
func (c *Controller) startEvents(ctx context.Context) (shutdown func()) {
	events := c.opts.Events
	if events == nil {
		events = c.clients.Kube.CoreV1()
	}
	recorder := newShardedRecorder(ctx, c.opts.EventShards, &typedcorev1.EventSinkImpl{Interface: events.Events("")}, scheme.Scheme, "stsdiag")
	c.recorder = recorder
	return recorder.Shutdown
}

// diagnoseAll fills the caches and diagnoses every StatefulSet once: every namespace as the
// caches' first LISTs read it, or, when that cannot be, from the caches once they are filled
// (firstpass.go). It returns the keys of the StatefulSets diagnosed; ok is false when ctx ended
// first.
func (c *Controller) diagnoseAll(ctx context.Context) (keys []string, ok bool, err error) {
	c.mu.Lock()
	c.verdicts, c.touched = map[string]passVerdict{}, map[string]bool{}
	c.holding = true
	c.mu.Unlock()
	var diagnosed time.Duration
	live, warnings, streamed, err := gather.StartLiveDiagnosing(ctx, c.clients, c.scope, c.changed, func(snap *stuck.Objects) error {
		keys = append(keys, c.diagnoseNamespace(snap)...)
		diagnosed = time.Since(processStart)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	synced := c.cachesSynced(live, warnings)
	if !streamed {
		keys = c.firstPass(ctx, live)
		diagnosed = time.Since(processStart)
	}
	if ctx.Err() != nil {
		return nil, false, nil
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
	return keys, true, nil
}

// cachesSynced is what follows the caches' sync: its warnings and time said, and from then on a
// change queues its StatefulSets (and voids their first-pass verdicts), those since the caches'
// first LISTs included, and Events are no longer held. It returns the time since start.
func (c *Controller) cachesSynced(live *gather.Live, warnings []string) time.Duration {
	for _, w := range warnings {
		c.logf("warning: %s", w)
	}
	synced := time.Since(processStart)
	c.metrics.Startup.WithLabelValues("synced").Set(synced.Seconds())
	c.logf("caches synced %.2fs after start", synced.Seconds())
	c.mu.Lock()
	c.live.Store(live)
	early := c.early
	c.early = nil
	c.mu.Unlock()
	for _, obj := range early {
		c.enqueueFor(obj)
	}
	c.releaseEvents()
	return synced
}

// work hands the StatefulSets of the first pass to the workers and runs them until ctx ends,
// then drains the queue and waits for the analyses under way to stop.
func (c *Controller) work(ctx context.Context, keys []string) {
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
}

func scopeName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
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
