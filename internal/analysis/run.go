package analysis

// Scheduling as analysis/analysis.go @ argo-rollouts 9f8d111d8f8e: generateMetricTasks and
// calculateNextReconcileTime (the first measurement initialDelay after the run starts; the next
// one interval after the last finished, or DefaultErrorRetryInterval after an Error; none once
// the metric is completed), runMeasurements (tallies) and utils/analysis/helpers.go's
// IsTerminating (a metric ending Failed, Error or Inconclusive stops the others).

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Run takes measurements of metrics, concurrently, each at its interval (the first after its
// InitialDelay), until every metric is completed. A metric with an Interval but no Count never
// ends by itself (Argo's indefinite, background metric): Run returns once every finite metric
// is completed, and the indefinite ones are then terminated as Argo terminates a run (Successful
// unless they breached a limit). A metric ending Failed, Error or Inconclusive stops the others
// at once, as in Argo. If ctx ends first, measurements stop, unfinished metrics stay Running or
// Pending, and so does the Result's phase.
//
// q gives each metric its Querier; an error from it is an Error measurement, and it is asked
// again for the next one. report, if not nil, is called after every measurement, never
// concurrently, and Run returns after the last call. With no metrics Run is Successful at once.
func Run(ctx context.Context, q func(Metric) (Querier, error), metrics []Metric, clk clock.Clock, report func(MetricResult)) Result {
	if len(metrics) == 0 {
		return Result{Phase: PhaseSuccessful}
	}
	r := newRunner(q, metrics, clk, report)
	rctx, cancel := context.WithCancel(ctx)
	r.run(rctx)
	ended := r.wait(ctx, true)
	cancel()
	r.wg.Wait()
	return r.result(ended, "")
}

// Background runs metrics, typically indefinite ones, until Stop (call it, or end ctx, to
// release its goroutines). Its methods are safe for concurrent use; report must not call Stop.
type Background struct {
	r        *runner
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	final *Result
}

// StartBackground starts taking measurements of metrics as Run does, and returns at once. The
// analysis ends by itself only when a metric ends Failed, Error or Inconclusive (which stops
// the others), or every metric is completed; or when ctx ends.
func StartBackground(ctx context.Context, q func(Metric) (Querier, error), metrics []Metric, clk clock.Clock, report func(MetricResult)) *Background {
	r := newRunner(q, metrics, clk, report)
	bctx, cancel := context.WithCancel(ctx)
	b := &Background{r: r, cancel: cancel, done: make(chan struct{})}
	r.run(bctx)
	go func() {
		r.wait(bctx, false)
		cancel()
		r.wg.Wait()
		close(b.done)
	}()
	return b
}

// Done is closed once no more measurements will be taken.
func (b *Background) Done() <-chan struct{} { return b.done }

// Result is the analysis so far: Running while no metric has ended Failed, Error or
// Inconclusive, else the worst completed metric's phase; after Stop, Stop's Result.
func (b *Background) Result() Result {
	b.mu.Lock()
	final := b.final
	b.mu.Unlock()
	if final != nil {
		return cloneResult(*final)
	}
	return b.r.result(false, "")
}

// Stop stops the measurements (an in-flight one is dropped) and terminates the analysis as Argo
// terminates a background run when the rollout is done: a metric that breached no limit is
// Successful, and so is the analysis then ("Run Terminated"). Later calls return the same Result.
func (b *Background) Stop() Result {
	b.stopOnce.Do(func() {
		b.cancel()
		<-b.done
		message := "Run Terminated"
		b.r.mu.Lock()
		if b.r.terminating {
			message = "" // it had ended by itself: Argo would not terminate it
		}
		b.r.mu.Unlock()
		res := b.r.result(true, message)
		b.mu.Lock()
		b.final = &res
		b.mu.Unlock()
	})
	return b.Result()
}

type runner struct {
	clk      clock.Clock
	metrics  []Metric
	newQ     func(Metric) (Querier, error)
	report   func(MetricResult)
	reportMu sync.Mutex
	start    time.Time
	wg       sync.WaitGroup
	changed  chan struct{} // a measurement was recorded

	mu          sync.Mutex
	results     []MetricResult
	terminating bool // a metric ended Failed, Error or Inconclusive
}

func newRunner(q func(Metric) (Querier, error), metrics []Metric, clk clock.Clock, report func(MetricResult)) *runner {
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &runner{clk: clk, metrics: metrics, newQ: q, report: report, changed: make(chan struct{}, 1)}
	r.results = make([]MetricResult, len(metrics))
	for i, m := range metrics {
		r.results[i] = MetricResult{
			Name:             m.Name,
			Query:            m.Prometheus.Query,
			SuccessCondition: m.SuccessCondition,
			FailureCondition: m.FailureCondition,
			Phase:            PhasePending,
		}
	}
	return r
}

func (r *runner) run(ctx context.Context) {
	r.start = r.clk.Now()
	for i := range r.metrics {
		r.wg.Add(1)
		go r.loop(ctx, i)
	}
}

// loop measures metric i until it is completed or ctx ends.
func (r *runner) loop(ctx context.Context, i int) {
	defer r.wg.Done()
	m := r.metrics[i]
	due := r.start.Add(m.InitialDelay)
	var q Querier
	for {
		if !r.sleepUntil(ctx, due) {
			return
		}
		var meas Measurement
		if q == nil {
			var err error
			q, err = r.newQ(m)
			if q == nil && err == nil {
				err = errors.New("no Prometheus querier")
			}
			if err != nil {
				q = nil
				now := r.clk.Now()
				meas = Measurement{Phase: PhaseError, Message: err.Error(), StartedAt: now, FinishedAt: now}
			}
		}
		if q != nil {
			meas = Measure(ctx, q, m, r.clk.Now)
		}
		if ctx.Err() != nil {
			return // stopped during the query: the measurement does not count
		}
		if r.record(i, meas).Completed() {
			return
		}
		wait := m.Interval
		if meas.Phase == PhaseError {
			wait = DefaultErrorRetryInterval
		}
		if wait <= 0 {
			return // no interval: the count (1) was reached, so record said completed
		}
		due = meas.FinishedAt.Add(wait)
	}
}

func (r *runner) sleepUntil(ctx context.Context, due time.Time) bool {
	d := due.Sub(r.clk.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// record counts meas into metric i's result, assesses the metric, and reports.
func (r *runner) record(i int, meas Measurement) Phase {
	r.mu.Lock()
	res := &r.results[i]
	tally(res, meas)
	ms := append(append(make([]Measurement, 0, len(res.Measurements)+1), res.Measurements...), meas)
	if len(ms) > DefaultMeasurementHistoryLimit {
		ms = ms[len(ms)-DefaultMeasurementHistoryLimit:]
	}
	res.Measurements = ms
	phase := assess(r.metrics[i], *res, false)
	if phase != res.Phase {
		res.Message = meas.Message
		res.Phase = phase
	}
	switch phase {
	case PhaseFailed, PhaseError, PhaseInconclusive:
		r.terminating = true
	}
	snapshot := cloneMetricResult(*res)
	r.mu.Unlock()

	select {
	case r.changed <- struct{}{}:
	default:
	}
	if r.report != nil {
		r.reportMu.Lock()
		r.report(snapshot)
		r.reportMu.Unlock()
	}
	return phase
}

// wait returns true when the analysis ended by itself, false when ctx ended first.
func (r *runner) wait(ctx context.Context, untilFinite bool) bool {
	for {
		r.mu.Lock()
		ended := r.ended(untilFinite)
		r.mu.Unlock()
		if ended {
			return true
		}
		select {
		case <-r.changed:
		case <-ctx.Done():
			return false
		}
	}
}

// ended: a metric ended Failed, Error or Inconclusive; or every metric is completed; or, with
// untilFinite, there are finite metrics and they all are.
func (r *runner) ended(untilFinite bool) bool {
	if r.terminating {
		return true
	}
	all, finite, finiteDone := true, false, true
	for i, m := range r.metrics {
		done := r.results[i].Phase.Completed()
		all = all && done
		if !m.Indefinite() {
			finite = true
			finiteDone = finiteDone && done
		}
	}
	return all || (untilFinite && finite && finiteDone)
}

// result assesses the run; terminate: Argo's terminating run (metrics that breached no limit
// are Successful).
func (r *runner) result(terminate bool, message string) Result {
	r.mu.Lock()
	results := make([]MetricResult, len(r.results))
	for i, res := range r.results {
		results[i] = cloneMetricResult(res)
	}
	terminating := terminate || r.terminating
	r.mu.Unlock()
	if len(r.metrics) == 0 {
		return Result{Phase: PhaseSuccessful, Metrics: results}
	}
	phase, msg := assessRun(r.metrics, results, terminating, message)
	return Result{Phase: phase, Message: msg, Metrics: results}
}

func cloneMetricResult(r MetricResult) MetricResult {
	r.Measurements = append([]Measurement(nil), r.Measurements...)
	return r
}

func cloneResult(r Result) Result {
	ms := make([]MetricResult, len(r.Metrics))
	for i, m := range r.Metrics {
		ms[i] = cloneMetricResult(m)
	}
	r.Metrics = ms
	return r
}
