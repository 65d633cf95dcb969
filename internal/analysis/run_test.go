package analysis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

// harness runs Run or StartBackground on a fake clock starting at t0.
type harness struct {
	t       *testing.T
	clk     *testingclock.FakeClock
	reports chan MetricResult
	done    chan Result
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, clk: testingclock.NewFakeClock(t0), reports: make(chan MetricResult, 100), done: make(chan Result, 1)}
}

func (h *harness) report(r MetricResult) { h.reports <- r }

func (h *harness) run(ctx context.Context, q func(Metric) (Querier, error), metrics ...Metric) {
	go func() { h.done <- Run(ctx, q, metrics, h.clk, h.report) }()
}

// next is the next report.
func (h *harness) next() MetricResult {
	h.t.Helper()
	select {
	case r := <-h.reports:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("no report")
		return MetricResult{}
	}
}

// quiet checks that nothing was reported.
func (h *harness) quiet() {
	h.t.Helper()
	select {
	case r := <-h.reports:
		h.t.Fatalf("unexpected report at %s", r.Measurements[len(r.Measurements)-1].StartedAt.Sub(t0))
	default:
	}
}

// step advances the clock by d once n timers wait on it.
func (h *harness) step(d time.Duration, n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.clk.Waiters() < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d timers wait, want %d", h.clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
	h.clk.Step(d)
}

func (h *harness) result() Result {
	h.t.Helper()
	select {
	case r := <-h.done:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return")
		return Result{}
	}
}

func querierFor(address string) func(Metric) (Querier, error) {
	return func(Metric) (Querier, error) { return NewQuerier(Connection{Address: address}) }
}

func rate(name string) Metric {
	return Metric{Name: name, SuccessCondition: "result[0] >= 0.95", Prometheus: Prometheus{Query: "sum(rate(ok[5m])) / sum(rate(all[5m]))"}}
}

// at is a measurement's start as an offset from t0.
func at(r MetricResult) []time.Duration {
	var out []time.Duration
	for _, m := range r.Measurements {
		out = append(out, m.StartedAt.Sub(t0))
	}
	return out
}

func TestRunCountAndInterval(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("0.99")), ok(bodyVector("0.98")), ok(bodyVector("0.97")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Count, m.Interval = ptr(int32(3)), time.Minute
	h.run(context.Background(), querierFor(srv.URL), m)

	r := h.next()
	if r.Phase != PhaseRunning || r.Successful != 1 || r.Count != 1 {
		t.Errorf("after 1: %s, %d successful, count %d", r.Phase, r.Successful, r.Count)
	}
	h.step(59*time.Second, 1)
	h.quiet()
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d queries before the interval, want 1", n)
	}
	h.step(time.Second, 1)
	h.next()
	h.step(time.Minute, 1)
	r = h.next()
	if r.Phase != PhaseSuccessful {
		t.Errorf("after 3: %s", r.Phase)
	}

	res := h.result()
	want := Result{Phase: PhaseSuccessful, Metrics: []MetricResult{{
		Name: "success-rate", Query: m.Prometheus.Query, SuccessCondition: "result[0] >= 0.95",
		Phase: PhaseSuccessful, Count: 3, Successful: 3, ConsecutiveSuccess: 3,
		Measurements: []Measurement{
			{Phase: PhaseSuccessful, Value: "[0.99]", StartedAt: t0, FinishedAt: t0},
			{Phase: PhaseSuccessful, Value: "[0.98]", StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(time.Minute)},
			{Phase: PhaseSuccessful, Value: "[0.97]", StartedAt: t0.Add(2 * time.Minute), FinishedAt: t0.Add(2 * time.Minute)},
		},
	}}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	var times []string
	for _, s := range srv.seen() {
		times = append(times, s.time)
	}
	if diff := cmp.Diff([]string{"1767323045", "1767323105", "1767323165"}, times); diff != "" {
		t.Errorf("query times (-want +got):\n%s", diff)
	}
}

func TestRunFailedBeyondFailureLimit(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("0.5")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Interval, m.FailureLimit = time.Minute, 2 // indefinite: only a failure ends it
	h.run(context.Background(), querierFor(srv.URL), m)

	var phases []Phase
	phases = append(phases, h.next().Phase)
	h.step(time.Minute, 1)
	phases = append(phases, h.next().Phase)
	h.step(time.Minute, 1)
	phases = append(phases, h.next().Phase)
	if diff := cmp.Diff([]Phase{PhaseRunning, PhaseRunning, PhaseFailed}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	res := h.result()
	if res.Phase != PhaseFailed || res.Message != `Metric "success-rate" assessed Failed due to failed (3) > failureLimit (2)` {
		t.Errorf("result %s %q", res.Phase, res.Message)
	}
	if r := res.Metrics[0]; r.Failed != 3 || r.Count != 3 || r.Measurements[2].Value != "[0.5]" {
		t.Errorf("metric %+v", r)
	}
}

func TestRunInconclusive(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("0.7")))
	h := newHarness(t)
	m := rate("success-rate")
	m.FailureCondition = "result[0] < 0.5"
	h.run(context.Background(), querierFor(srv.URL), m)
	res := h.result()
	if res.Phase != PhaseInconclusive || res.Message != `Metric "success-rate" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)` {
		t.Errorf("result %s %q", res.Phase, res.Message)
	}
	if diff := cmp.Diff([]Measurement{{Phase: PhaseInconclusive, Value: "[0.7]", StartedAt: t0, FinishedAt: t0}}, res.Metrics[0].Measurements); diff != "" {
		t.Errorf("measurements (-want +got):\n%s", diff)
	}
}

// An empty vector with result[0] is an Error measurement, retried every 10s (Argo's
// DefaultErrorRetryInterval), until the 5th in a row ends the metric (limit 4).
func TestRunNoData(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyEmpty))
	h := newHarness(t)
	m := rate("success-rate") // no count, no interval: one measurement
	h.run(context.Background(), querierFor(srv.URL), m)
	for range 4 {
		if r := h.next(); r.Phase != PhaseRunning {
			t.Fatalf("phase %s", r.Phase)
		}
		h.step(10*time.Second, 1)
	}
	res := h.result()
	const noData = `could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`
	if want := `Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: ` + noData + `"`; res.Phase != PhaseError || res.Message != want {
		t.Errorf("result %s\n got %s\nwant %s", res.Phase, res.Message, want)
	}
	r := res.Metrics[0]
	if diff := cmp.Diff([]time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second}, at(r)); diff != "" {
		t.Errorf("measured at (-want +got):\n%s", diff)
	}
	if r.Error != 5 || r.ConsecutiveError != 5 || r.Count != 0 || r.Message != noData || r.Measurements[0].Value != "" {
		t.Errorf("metric %+v", r)
	}

	// Guarded, no data passes.
	srv2 := newPromServer(t, false, ok(bodyEmpty))
	h2 := newHarness(t)
	m.SuccessCondition = "len(result) == 0 || result[0] >= 0.95"
	h2.run(context.Background(), querierFor(srv2.URL), m)
	if res := h2.result(); res.Phase != PhaseSuccessful || res.Metrics[0].Measurements[0].Value != "[]" {
		t.Errorf("guarded: %s %+v", res.Phase, res.Metrics[0].Measurements)
	}
}

func TestRunServerDown(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyEmpty))
	srv.Close()
	h := newHarness(t)
	m := rate("success-rate")
	m.Count, m.Interval, m.ConsecutiveErrorLimit = ptr(int32(3)), time.Minute, ptr(int32(1))
	h.run(context.Background(), querierFor(srv.URL), m)
	h.next()
	h.step(10*time.Second, 1)
	res := h.result()
	refused := fmt.Sprintf(`Post "%s/api/v1/query": dial tcp %s: connect: connection refused`, srv.URL, srv.Listener.Addr())
	if want := `Metric "success-rate" assessed Error due to consecutiveErrors (2) > consecutiveErrorLimit (1): "Error Message: ` + refused + `"`; res.Phase != PhaseError || res.Message != want {
		t.Errorf("result %s\n got %s\nwant %s", res.Phase, res.Message, want)
	}
	if diff := cmp.Diff([]time.Duration{0, 10 * time.Second}, at(res.Metrics[0])); diff != "" {
		t.Errorf("measured at (-want +got):\n%s", diff)
	}
}

// Errors are retried after 10s whatever the interval, do not count toward count, and a
// success resets ConsecutiveError.
func TestRunErrorsThenSuccess(t *testing.T) {
	srv := newPromServer(t, false, reply{http.StatusInternalServerError, ""}, reply{http.StatusInternalServerError, ""}, ok(bodyVector("1")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Count, m.Interval = ptr(int32(2)), time.Minute
	h.run(context.Background(), querierFor(srv.URL), m)
	h.next()
	h.step(10*time.Second, 1)
	h.next()
	h.step(10*time.Second, 1)
	if r := h.next(); r.ConsecutiveError != 0 || r.Error != 2 || r.Count != 1 {
		t.Errorf("after the success: %+v", r)
	}
	h.step(time.Minute, 1)
	res := h.result()
	if res.Phase != PhaseSuccessful {
		t.Errorf("phase %s", res.Phase)
	}
	r := res.Metrics[0]
	if diff := cmp.Diff([]time.Duration{0, 10 * time.Second, 20 * time.Second, 80 * time.Second}, at(r)); diff != "" {
		t.Errorf("measured at (-want +got):\n%s", diff)
	}
	if r.Error != 2 || r.Successful != 2 || r.Count != 2 || r.Measurements[0].Message != "server_error: server error: 500" {
		t.Errorf("metric %+v", r)
	}
}

func TestRunInitialDelay(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	h := newHarness(t)
	m := rate("success-rate")
	m.InitialDelay = 2 * time.Minute
	h.run(context.Background(), querierFor(srv.URL), m)
	h.step(119*time.Second, 1)
	h.quiet()
	if n := len(srv.seen()); n != 0 {
		t.Errorf("%d queries during the initial delay", n)
	}
	h.step(time.Second, 1)
	res := h.result()
	if diff := cmp.Diff([]time.Duration{2 * time.Minute}, at(res.Metrics[0])); diff != "" || res.Phase != PhaseSuccessful {
		t.Errorf("%s, measured at (-want +got):\n%s", res.Phase, diff)
	}
}

// Run returns once the finite metrics are done; the indefinite one is then terminated.
func TestRunFiniteAndIndefinite(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	h := newHarness(t)
	finite := rate("finite")
	finite.InitialDelay = time.Minute
	background := rate("background")
	background.Interval = 25 * time.Second
	h.run(context.Background(), querierFor(srv.URL), finite, background)
	h.next() // background at 0
	h.step(25*time.Second, 2)
	h.next() // 25s
	h.step(25*time.Second, 2)
	h.next() // 50s
	h.step(10*time.Second, 2)
	h.next() // finite at 60s
	res := h.result()
	if res.Phase != PhaseSuccessful || res.Message != "" {
		t.Errorf("result %s %q", res.Phase, res.Message)
	}
	if got := []Phase{res.Metrics[0].Phase, res.Metrics[1].Phase}; got[0] != PhaseSuccessful || got[1] != PhaseSuccessful {
		t.Errorf("phases %v", got)
	}
	if diff := cmp.Diff([]time.Duration{0, 25 * time.Second, 50 * time.Second}, at(res.Metrics[1])); diff != "" {
		t.Errorf("background measured at (-want +got):\n%s", diff)
	}
}

// A metric that fails stops the others, as Argo's terminating run does.
func TestRunFailureStopsOthers(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("0.5")))
	h := newHarness(t)
	later := rate("later")
	later.InitialDelay = time.Minute
	failing := rate("failing")
	failing.Interval = 30 * time.Second
	h.run(context.Background(), querierFor(srv.URL), later, failing)
	res := h.result()
	if res.Phase != PhaseFailed || res.Message != `Metric "failing" assessed Failed due to failed (1) > failureLimit (0)` {
		t.Errorf("result %s %q", res.Phase, res.Message)
	}
	if p := res.Metrics[0].Phase; p != PhasePending || len(res.Metrics[0].Measurements) != 0 {
		t.Errorf("later: %s, %d measurements", p, len(res.Metrics[0].Measurements))
	}
	if h.clk.Waiters() != 0 {
		t.Errorf("%d timers left", h.clk.Waiters())
	}
}

func TestRunContextEnds(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Count, m.Interval = ptr(int32(5)), time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	h.run(ctx, querierFor(srv.URL), m)
	h.next()
	cancel()
	res := h.result()
	if res.Phase != PhaseRunning || res.Metrics[0].Phase != PhaseRunning || len(res.Metrics[0].Measurements) != 1 {
		t.Errorf("result %s, metric %s with %d measurements", res.Phase, res.Metrics[0].Phase, len(res.Metrics[0].Measurements))
	}
}

func TestRunQuerierError(t *testing.T) {
	h := newHarness(t)
	calls := 0
	q := func(Metric) (Querier, error) { calls++; return nil, errors.New("prometheus address is not configured") }
	m := rate("success-rate")
	m.ConsecutiveErrorLimit = ptr(int32(0))
	h.run(context.Background(), q, m)
	res := h.result()
	want := `Metric "success-rate" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: prometheus address is not configured"`
	if res.Phase != PhaseError || res.Message != want || calls != 1 {
		t.Errorf("result %s %q, %d calls", res.Phase, res.Message, calls)
	}
}

func TestRunEmpty(t *testing.T) {
	if res := Run(context.Background(), nil, nil, testingclock.NewFakeClock(t0), nil); res.Phase != PhaseSuccessful {
		t.Errorf("phase %s", res.Phase)
	}
}

func TestBackgroundStop(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("1")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Interval = time.Minute
	b := StartBackground(context.Background(), querierFor(srv.URL), []Metric{m}, h.clk, h.report)
	h.next()
	for range 11 {
		h.step(time.Minute, 1)
		h.next()
	}
	res := b.Result()
	if res.Phase != PhaseRunning || res.Metrics[0].Phase != PhaseRunning || res.Metrics[0].Count != 12 {
		t.Errorf("running: %s, %s, count %d", res.Phase, res.Metrics[0].Phase, res.Metrics[0].Count)
	}
	// Argo keeps the last 10 measurements.
	if got := at(res.Metrics[0]); len(got) != 10 || got[0] != 2*time.Minute || got[9] != 11*time.Minute {
		t.Errorf("kept measurements at %v", got)
	}
	select {
	case <-b.Done():
		t.Fatal("done before Stop")
	default:
	}
	res = b.Stop()
	if res.Phase != PhaseSuccessful || res.Message != "Run Terminated" || res.Metrics[0].Phase != PhaseSuccessful {
		t.Errorf("stopped: %s %q, metric %s", res.Phase, res.Message, res.Metrics[0].Phase)
	}
	<-b.Done()
	if again := b.Stop(); again.Phase != PhaseSuccessful || b.Result().Message != "Run Terminated" {
		t.Errorf("second Stop: %s", again.Phase)
	}
}

func TestBackgroundFails(t *testing.T) {
	srv := newPromServer(t, false, ok(bodyVector("0.5")))
	h := newHarness(t)
	m := rate("success-rate")
	m.Interval, m.FailureLimit = time.Minute, 1
	b := StartBackground(context.Background(), querierFor(srv.URL), []Metric{m}, h.clk, h.report)
	h.next()
	h.step(time.Minute, 1)
	h.next()
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not done after failing")
	}
	want := `Metric "success-rate" assessed Failed due to failed (2) > failureLimit (1)`
	if res := b.Result(); res.Phase != PhaseFailed || res.Message != want {
		t.Errorf("result %s %q", res.Phase, res.Message)
	}
	if res := b.Stop(); res.Phase != PhaseFailed || res.Message != want {
		t.Errorf("after Stop %s %q", res.Phase, res.Message)
	}
}
