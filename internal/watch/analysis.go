package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/canary/stepanalysis"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
)

// A canary declared on a StatefulSet may also declare an analysis (apiv1.AnnotationCanaryAnalysis
// naming a ConfigMap, or apiv1.AnnotationCanaryAnalysisTemplate inline, with
// apiv1.AnnotationCanaryAnalysisArgs): once a step's pods held healthy for the hold, watch
// measures the step as canary --analysis does (internal/canary/stepanalysis, the same arguments)
// before it steps forward. The measuring runs in a goroutine of its own, one per StatefulSet and
// step ("revision/partition"), started once; its outcome is kept in the canary's memory and the
// StatefulSet queued again when it is known, and the step machine (engine.Turn) decides on it:
//   - Successful: the step goes forward (canaryTurn.Advance);
//   - Failed: the template goes back to the current revision, no pod deleted
//     (plan.AnalysisRollback through the repair executor, within the repair budget);
//   - Inconclusive or Error: the canary pauses — no step forward, nothing rolled back — until the
//     step changes (a new revision or partition) or the analysis does (its annotations, or its
//     ConfigMap's template, read again every analysisRecheck while paused).
//
// Only memory holds the outcome: a restarted watch (or a new leader) measures the step again.

// analysisRecheck is how often a paused canary whose template is in a ConfigMap, or one whose
// ConfigMap could not be read, reads it again: watch has no informer on ConfigMaps, so their
// changes queue nothing.
const analysisRecheck = time.Minute

// maxMeasurementEvents bounds the CanaryMeasurement Events of one step's run. client-go's spam
// filter lets 25 Events about one object through, then one per 5 minutes
// (tools/record/events_cache.go:47-48@v0.35.4 defaultSpamBurst, defaultSpamQPS), the findings',
// steps' and rollback's Events included: measurements must not use that up.
const maxMeasurementEvents = 5

// analysisNames are watch's names in stepanalysis.Check's errors.
var analysisNames = stepanalysis.Names{Arg: "annotation " + apiv1.AnnotationCanaryAnalysisArgs + ":",
	Address: "give watch --prometheus, or set provider.prometheus.address"}

// analysisDeclared reports whether the StatefulSet declares an analysis (or means to: any of its
// annotations).
func analysisDeclared(set *appsv1.StatefulSet) bool {
	for _, a := range []string{apiv1.AnnotationCanaryAnalysis, apiv1.AnnotationCanaryAnalysisTemplate, apiv1.AnnotationCanaryAnalysisArgs} {
		if _, ok := set.Annotations[a]; ok {
			return true
		}
	}
	return false
}

// declarationOf is what the analysis annotations say, hashed: another value measures the step
// again.
func declarationOf(set *appsv1.StatefulSet) string {
	return digest(set.Annotations[apiv1.AnnotationCanaryAnalysis], set.Annotations[apiv1.AnnotationCanaryAnalysisTemplate], set.Annotations[apiv1.AnnotationCanaryAnalysisArgs])
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// declaredAnalysis is the analysis a StatefulSet declares, read and checked.
type declaredAnalysis struct {
	analysis *stepanalysis.Analysis
	// configMap is the ConfigMap the template was read from ("" for the inline annotation).
	configMap string
	// declaration is declarationOf the StatefulSet; template the template's text, hashed.
	declaration, template string
}

// invalidAnalysis is a declaration watch cannot measure with; anything else readAnalysis
// returns is an error of the API, retried.
type invalidAnalysis struct {
	reason string // CanaryInvalid, or CanaryForbidden
	err    error
}

func (e *invalidAnalysis) Error() string { return e.err.Error() }

func invalid(format string, a ...any) error {
	return &invalidAnalysis{reason: "CanaryInvalid", err: fmt.Errorf(format, a...)}
}

// readAnalysis reads the analysis the StatefulSet declares — a GET of its ConfigMap when it
// names one — and checks it as canary checks --analysis, before anything is measured.
func (c *Controller) readAnalysis(ctx context.Context, set *appsv1.StatefulSet) (*declaredAnalysis, error) {
	name, named := set.Annotations[apiv1.AnnotationCanaryAnalysis]
	inline, given := set.Annotations[apiv1.AnnotationCanaryAnalysisTemplate]
	d := &declaredAnalysis{declaration: declarationOf(set)}
	var text, where string
	switch {
	case named && given:
		return nil, invalid("annotations %s and %s: give one of them", apiv1.AnnotationCanaryAnalysis, apiv1.AnnotationCanaryAnalysisTemplate)
	case given:
		text, where = inline, "annotation "+apiv1.AnnotationCanaryAnalysisTemplate
	case named:
		if name == "" {
			return nil, invalid("annotation %s: name a ConfigMap in namespace %s", apiv1.AnnotationCanaryAnalysis, set.Namespace)
		}
		cm, err := c.clients.Kube.CoreV1().ConfigMaps(set.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, invalid("annotation %s: ConfigMap %s/%s not found", apiv1.AnnotationCanaryAnalysis, set.Namespace, name)
		case apierrors.IsForbidden(err):
			return nil, &invalidAnalysis{reason: "CanaryForbidden", err: fmt.Errorf("stsdiag cannot read the analysis declared by %s: %v; grant get on configmaps, with patch on statefulsets and delete on pods (deploy/watch-fix)", apiv1.AnnotationCanaryAnalysis, err)}
		case err != nil:
			return nil, fmt.Errorf("ConfigMap %s/%s: %w", set.Namespace, name, err)
		}
		key := "template.yaml"
		if _, ok := cm.Data[key]; !ok {
			if len(cm.Data) != 1 {
				return nil, invalid("annotation %s: ConfigMap %s/%s has no key template.yaml and %d others (%s): put the AnalysisTemplate under template.yaml",
					apiv1.AnnotationCanaryAnalysis, set.Namespace, name, len(cm.Data), strings.Join(slices.Sorted(maps.Keys(cm.Data)), ", "))
			}
			for k := range cm.Data {
				key = k
			}
		}
		text, where = cm.Data[key], fmt.Sprintf("ConfigMap %s/%s, key %s", set.Namespace, name, key)
		d.configMap = name
	default:
		return nil, invalid("annotation %s needs %s or %s", apiv1.AnnotationCanaryAnalysisArgs, apiv1.AnnotationCanaryAnalysis, apiv1.AnnotationCanaryAnalysisTemplate)
	}
	tmpl, err := analysis.Parse([]byte(text))
	if err != nil {
		return nil, invalid("%s: %v", where, err)
	}
	args, err := parseArgs(set.Annotations[apiv1.AnnotationCanaryAnalysisArgs])
	if err != nil {
		return nil, invalid("annotation %s: %v", apiv1.AnnotationCanaryAnalysisArgs, err)
	}
	d.analysis = &stepanalysis.Analysis{Template: tmpl, Args: args, Querier: c.prometheus, Clock: c.clock}
	if err := stepanalysis.Check(d.analysis, c.opts.PrometheusOverride, analysisNames); err != nil {
		return nil, invalid("%s: %v", where, err)
	}
	d.template = digest(text)
	return d, nil
}

// parseArgs reads "name=value,name=value" (spaces around each pair ignored; a value holds no
// comma).
func parseArgs(s string) (map[string]string, error) {
	args := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return args, nil
	}
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=value", strings.TrimSpace(pair))
		}
		if _, dup := args[name]; dup {
			return nil, fmt.Errorf("argument %s given twice", name)
		}
		args[name] = value
	}
	return args, nil
}

// stepAnalysis is one step's measuring, in the canary's memory.
type stepAnalysis struct {
	step        string // "revision/partition"
	template    string // the AnalysisTemplate's name
	declaration string // declarationOf the StatefulSet it was started for
	configMap   string // the ConfigMap its template was read from, "" for inline
	content     string // that template's text, hashed
	checked     time.Time
	cancel      context.CancelFunc

	mu  sync.Mutex
	run *apiv1.AnalysisRun // nil while measuring
}

func (s *stepAnalysis) result() *apiv1.AnalysisRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// stopAnalysis ends the memory's measuring, if any, and forgets it.
func (m *canaryMemory) stopAnalysis() {
	if m.analysis != nil {
		m.analysis.cancel()
		m.analysis = nil
	}
}

// Analyzed implements engine.Port: an analysis gates the step while a rollout is under way and the
// StatefulSet declares one. A measuring of another step (another revision or partition), or of
// none, is stopped.
func (t *canaryTurn) Analyzed(_ context.Context, f engine.Facts) bool {
	if !analysisDeclared(t.set) || !f.Observed || !f.Pending {
		t.mem.stopAnalysis()
		return false
	}
	if t.mem.analysis != nil && t.mem.analysis.step != t.step {
		t.mem.stopAnalysis() // another revision or partition: another step
	}
	return true
}

// Check implements engine.Port: the analysis is read (a GET of its ConfigMap) and checked as
// canary checks --analysis; one it cannot be measured with is a Warning Event.
func (t *canaryTurn) Check(ctx context.Context) (bool, error) {
	if _, err := t.c.readAnalysis(ctx, t.set); err != nil {
		return false, t.c.analysisUnreadable(t.key, t.set, t.mem, err)
	}
	return true, nil
}

// Measurement implements engine.Port: the step's run from the canary's memory. A run started for
// other annotations is forgotten (the step is measured again); a paused one whose template is in
// a ConfigMap reads it again every analysisRecheck, and is forgotten when it changed (nothing
// queues the set for a ConfigMap).
func (t *canaryTurn) Measurement(ctx context.Context, _ engine.Facts) (*apiv1.AnalysisRun, bool) {
	c, mem := t.c, t.mem
	sa := mem.analysis
	if sa != nil && sa.declaration != declarationOf(t.set) {
		c.logf("%s: canary: the analysis annotations changed: step %s measured again", t.key, t.step)
		mem.stopAnalysis()
		sa = nil
	}
	var run *apiv1.AnalysisRun
	if sa != nil {
		run = sa.result()
	}
	if run != nil && run.Phase != apiv1.AnalysisSuccessful && run.Phase != apiv1.AnalysisFailed && sa.configMap != "" {
		now := c.clock.Now()
		if now.Sub(sa.checked) >= analysisRecheck {
			sa.checked = now
			if decl, err := c.readAnalysis(ctx, t.set); err == nil && decl.template != sa.content {
				c.logf("%s: canary: the template of ConfigMap %s changed: step %s measured again", t.key, sa.configMap, t.step)
				mem.stopAnalysis()
				sa, run = nil, nil
			}
		}
		c.queue.AddAfter(t.key, analysisRecheck)
	}
	return run, sa != nil && run == nil
}

// Measure implements engine.Port: the analysis read, bound to the step and started in the
// background (startAnalysis); Reconciling=True, reason CanaryAnalysis, meanwhile. It returns no
// run: the run's end queues the set.
func (t *canaryTurn) Measure(ctx context.Context, f engine.Facts) (*apiv1.AnalysisRun, error) {
	c, set := t.c, t.set
	decl, err := c.readAnalysis(ctx, set)
	if err != nil {
		return nil, c.analysisUnreadable(t.key, set, t.mem, err)
	}
	s, err := decl.analysis.Bind(set, f.Partition)
	if err != nil {
		return nil, c.analysisUnreadable(t.key, set, t.mem, invalid("%v", err))
	}
	t.mem.analysis = c.startAnalysis(ctx, t.key, set, decl, s, t.step, f.Partition)
	c.setReconciling(ctx, t.key, set, corev1.ConditionTrue, "CanaryAnalysis", fmt.Sprintf("canary of revision %s: partition %d held healthy for %s; measuring analysis %s of %s",
		set.Status.UpdateRevision, f.Partition, t.holdFor, s.Template.Name, strings.Join(s.Pods, ", ")))
	return nil, nil
}

// Pause implements engine.Port: no step forward and nothing rolled back on the analysis' word;
// Reconciling=True, reason CanaryPaused, and a Warning Event CanaryInconclusive.
func (t *canaryTurn) Pause(ctx context.Context, f engine.Facts, run *apiv1.AnalysisRun) error {
	what := explain.Analysis(run)
	// explain.Analysis last: it ends with the query, the first words to go when cut.
	t.c.setReconciling(ctx, t.key, t.set, corev1.ConditionTrue, apiv1.ReasonCanaryPaused, fmt.Sprintf("canary of revision %s paused at partition %d (change the analysis, the template or the partition to go on): %s",
		t.set.Status.UpdateRevision, f.Partition, what))
	t.c.canaryWarning(t.key, t.set, t.mem, "CanaryInconclusive", fmt.Sprintf("stsdiag canary of revision %s paused at partition %d, nothing rolled back, no step forward until the template, the partition or the analysis changes: %s",
		t.set.Status.UpdateRevision, f.Partition, what))
	return nil
}

// analysisUnreadable reports a declaration watch cannot measure with: a Warning Event and no
// step forward; an API error is returned (retried). A ConfigMap is read again in
// analysisRecheck, the set's own changes queue it anyway.
func (c *Controller) analysisUnreadable(key string, set *appsv1.StatefulSet, mem *canaryMemory, err error) error {
	var bad *invalidAnalysis
	if !errors.As(err, &bad) {
		return err
	}
	c.canaryWarning(key, set, mem, bad.reason, bad.Error())
	if _, named := set.Annotations[apiv1.AnnotationCanaryAnalysis]; named {
		c.queue.AddAfter(key, analysisRecheck)
	}
	return nil
}

// startAnalysis starts measuring a step in a goroutine of its own (ended by the memory's
// stopAnalysis or ctx): each measurement counted, logged and, the first of each metric and each
// change of its phase, up to maxMeasurementEvents, an Event; the outcome kept and the set queued.
func (c *Controller) startAnalysis(ctx context.Context, key string, set *appsv1.StatefulSet, decl *declaredAnalysis, s *stepanalysis.Step, step string, partition int32) *stepAnalysis {
	actx, cancel := context.WithCancel(ctx)
	sa := &stepAnalysis{step: step, template: s.Template.Name, declaration: decl.declaration, configMap: decl.configMap, content: decl.template,
		checked: c.clock.Now(), cancel: cancel}
	about := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: set.Namespace, UID: set.UID, ResourceVersion: set.ResourceVersion}}
	ns, revision := set.Namespace, set.Status.UpdateRevision
	c.logf("%s: canary analysis %s of revision %s at partition %d: measuring %s", key, s.Template.Name, revision, partition, strings.Join(s.Pods, ", "))
	c.analyses.Add(1)
	go func() {
		defer c.analyses.Done()
		events := 0
		last := map[string]analysis.Phase{}
		run := decl.analysis.Run(actx, s, func(m analysis.MetricResult) {
			line, ok := stepanalysis.Measured(m)
			if !ok {
				return
			}
			phase := m.Measurements[len(m.Measurements)-1].Phase
			c.metrics.CanaryAnalysisMeasurements.WithLabelValues(ns, string(phase)).Inc()
			c.logf("%s: canary analysis %s at partition %d: %s", key, s.Template.Name, partition, line)
			if before, seen := last[m.Name]; (!seen || before != phase) && events < maxMeasurementEvents {
				events++
				c.recorder.Event(about, corev1.EventTypeNormal, "CanaryMeasurement", truncate(fmt.Sprintf("stsdiag canary analysis %s, revision %s at partition %d: %s",
					s.Template.Name, revision, partition, line)))
			}
			last[m.Name] = phase
		})
		if actx.Err() != nil {
			return // stopped: another step, the analysis changed or gone, or watch stopping
		}
		c.metrics.CanaryAnalysisRuns.WithLabelValues(ns, string(run.Phase)).Inc()
		c.logf("%s: canary analysis of revision %s at partition %d: %s", key, revision, partition, explain.Analysis(run))
		sa.mu.Lock()
		sa.run = run
		sa.mu.Unlock()
		c.queue.Add(key)
	}()
	return sa
}

// RollBackAnalysis implements engine.Port for a step whose analysis failed: the template returns
// to the current revision and no pod is deleted (plan.AnalysisRollback: the canary pods may all
// be Ready; the controller replaces them as in any rolling update), as canary's.
func (t *canaryTurn) RollBackAnalysis(ctx context.Context, run *apiv1.AnalysisRun) error {
	what := explain.Analysis(run)
	action, why := plan.AnalysisRollback(t.snap, t.set)
	if why != "" {
		t.c.canaryUnrollable(ctx, t.key, t.set, t.mem, what, why)
		return nil
	}
	return t.c.applyRollback(ctx, t.key, t.set, []model.Action{action}, what, "no pod deleted: the controller replaces the canary pods")
}
