package watch_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/analysis"
	"github.com/stsdiag/stsdiag/internal/watch"
)

// Canary analyses declared by annotations, on a fake cluster: web, 4 replicas, steps "1,50%",
// rolling out web-b over web-a; web-3 (the first step's canary pod) Ready on web-b, web-0..2
// Ready on web-a, for an hour; the hold 0s, so the step has held healthy at once. Nothing moves
// a pod: the tests read what watch wrote.

var anHourAgo = metav1.NewTime(time.Now().Add(-time.Hour))

const errorRatioTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-ratio
spec:
  args:
  - name: namespace
  - name: pods
  - name: revision
  - name: job
  metrics:
  - name: errors
    successCondition: result[0] <= 0.1
    provider:
      prometheus:
        address: http://prometheus.invalid:9090
        query: errors{job="{{args.job}}",namespace="{{args.namespace}}",pod=~"{{args.pods}}",revision="{{args.revision}}"}
`

// stepHealthy is the set at step 1 (partition 3) with its analysis declared by annotations.
func stepHealthy(annotations map[string]string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2,
			Annotations: map[string]string{"stsdiag.io/canary-steps": "1,50%", "stsdiag.io/canary-hold": "0s"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:b"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, CurrentReplicas: 3, UpdatedReplicas: 1,
			CurrentRevision: "web-a", UpdateRevision: "web-b"},
	}
	for k, v := range annotations {
		set.Annotations[k] = v
	}
	return set
}

func controllerRevision(name string, number int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Revision: number,
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"app:` +
			strings.TrimPrefix(name, "web-") + `"}]}}}}`)}}
}

func readyPod(ordinal, rev string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + ordinal, Namespace: "shop", UID: types.UID("uid-web-" + ordinal), CreationTimestamp: anHourAgo,
		Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev, appsv1.StatefulSetPodNameLabel: "web-" + ordinal},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:" + strings.TrimPrefix(rev, "web-")}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &anHourAgo,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: anHourAgo},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: anHourAgo}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "app:" + strings.TrimPrefix(rev, "web-"),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: anHourAgo}}}}}}
}

// analysisCluster is the fake cluster with set and extra objects; as the API server does, a
// write of the spec bumps the generation, and the controller observes it at once and names the
// update revision after the image.
func analysisCluster(set *appsv1.StatefulSet, extra ...runtime.Object) *fake.Clientset {
	objs := append([]runtime.Object{shop(), set, controllerRevision("web-a", 1), controllerRevision("web-b", 2),
		readyPod("0", "web-a"), readyPod("1", "web-a"), readyPod("2", "web-a"), readyPod("3", "web-b")}, extra...)
	kube := fake.NewClientset(objs...)
	react := k8stesting.ObjectReaction(kube.Tracker())
	kube.PrependReactor("patch", "statefulsets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "" {
			return false, nil, nil
		}
		handled, obj, err := react(action)
		if err != nil || !handled {
			return handled, obj, err
		}
		set := obj.(*appsv1.StatefulSet).DeepCopy()
		set.Generation++
		set.Status.ObservedGeneration = set.Generation
		set.Status.UpdateRevision = "web-" + strings.TrimPrefix(set.Spec.Template.Spec.Containers[0].Image, "app:")
		return true, set, kube.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("statefulsets"), set, set.Namespace)
	})
	return kube
}

// prometheus answers each query with the next of its values (the last one repeats), or err.
type prometheus struct {
	mu      sync.Mutex
	values  []float64
	err     error
	queries []string
}

func (p *prometheus) Query(_ context.Context, query string, _ time.Time) (model.Value, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries = append(p.queries, query)
	if p.err != nil {
		return nil, p.err
	}
	v := p.values[0]
	if len(p.values) > 1 {
		p.values = p.values[1:]
	}
	return model.Vector{&model.Sample{Value: model.SampleValue(v)}}, nil
}

func (p *prometheus) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.queries...)
}

func (p *prometheus) options() watch.Options {
	return watch.Options{Hold: time.Hour, Prometheus: func(analysis.Metric) (analysis.Querier, error) { return p, nil }}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never: %s", what)
	}
}

func shopEvents(t *testing.T, kube *fake.Clientset, reason string) []corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// specPatches counts the patches of the StatefulSet's spec (not its status).
func specPatches(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "statefulsets" && a.GetSubresource() == "" {
			n++
		}
	}
	return n
}

func configMapGets(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
			n++
		}
	}
	return n
}

func setNow(t *testing.T, kube *fake.Clientset) *appsv1.StatefulSet {
	t.Helper()
	set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func reconciling(set *appsv1.StatefulSet) *appsv1.StatefulSetCondition {
	return conditionOf(set, watch.ConditionReconciling)
}

func errorRatioConfigMap(key string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "error-ratio", Namespace: "shop"}, Data: map[string]string{key: errorRatioTemplate}}
}

// TestAnalysisSuccessfulAdvances: the analysis named by stsdiag.io/canary-analysis (its
// ConfigMap's only key) measures the step with canary's arguments — the step's pod, the
// namespace, the update revision and the annotation's job — and, Successful, the partition goes
// to the next step; the measurement is an Event and both metrics count.
func TestAnalysisSuccessfulAdvances(t *testing.T) {
	kube := analysisCluster(stepHealthy(map[string]string{"stsdiag.io/canary-analysis": "error-ratio", "stsdiag.io/canary-analysis-args": "job=shop"}),
		errorRatioConfigMap("error-ratio.yaml"))
	p := &prometheus{values: []float64{0.01}}
	metrics, _ := run(t, kube, p.options())
	note := waitPartition(t, kube, 2)
	if note != "step 50% (2 of 3): partition 2, revision web-b" {
		t.Errorf("annotation %q", note)
	}
	want := `errors{job="shop",namespace="shop",pod=~"web-3",revision="web-b"}`
	if q := p.seen(); len(q) != 1 || q[0] != want {
		t.Errorf("queries %q, want one %q", q, want)
	}
	eventually(t, "the measurement and the step counted", func() bool {
		return testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Successful")) == 1 &&
			testutil.ToFloat64(metrics.CanaryAnalysisRuns.WithLabelValues("shop", "Successful")) == 1 &&
			testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("advanced", "shop")) == 1
	})
	eventually(t, "a CanaryMeasurement and a CanaryStep Event", func() bool {
		return len(shopEvents(t, kube, "CanaryMeasurement")) == 1 && len(shopEvents(t, kube, "CanaryStep")) == 1
	})
	m := shopEvents(t, kube, "CanaryMeasurement")[0]
	if wantMsg := "stsdiag canary analysis error-ratio, revision web-b at partition 3: metric errors: Successful [0.01] (1 successful, 0 failed, 0 inconclusive, 0 errors)"; m.Type != corev1.EventTypeNormal || m.Message != wantMsg {
		t.Errorf("%s %q, want Normal %q", m.Type, m.Message, wantMsg)
	}
	if s := shopEvents(t, kube, "CanaryStep")[0]; !strings.HasSuffix(s.Message, "; analysis error-ratio successful") {
		t.Errorf("CanaryStep %q", s.Message)
	}
	if n := configMapGets(kube); n != 1 {
		t.Errorf("%d GETs of the ConfigMap, want 1", n)
	}
	if n := deletes(kube); n != 0 {
		t.Errorf("%d pods deleted", n)
	}
}

// TestAnalysisFailedRollsBack: the canary pod serves 50% errors: the template goes back to
// web-a (plan.AnalysisRollback through the executor) and no pod is deleted; the Event names the
// metric, its value and its query.
func TestAnalysisFailedRollsBack(t *testing.T) {
	kube := analysisCluster(stepHealthy(map[string]string{"stsdiag.io/canary-analysis-template": errorRatioTemplate, "stsdiag.io/canary-analysis-args": "job=shop"}))
	p := &prometheus{values: []float64{0.5}}
	metrics, _ := run(t, kube, p.options())
	eventually(t, "the template rolled back to app:a", func() bool {
		return setNow(t, kube).Spec.Template.Spec.Containers[0].Image == "app:a"
	})
	eventually(t, "a CanaryRolledBack Event", func() bool { return len(shopEvents(t, kube, "CanaryRolledBack")) == 1 })
	e := shopEvents(t, kube, "CanaryRolledBack")[0]
	for _, want := range []string{"stsdiag canary of revision web-b failed; template rolled back to revision web-a, no pod deleted: the controller replaces the canary pods (1 actions done): analysis error-ratio failed: ",
		`Metric "errors" assessed Failed`, "last value [0.5]", "successCondition result[0] <= 0.1", `query: errors{job="shop",namespace="shop",pod=~"web-3",revision="web-b"}`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("Event %q lacks %q", e.Message, want)
		}
	}
	if e.Type != corev1.EventTypeWarning {
		t.Errorf("Event type %s", e.Type)
	}
	eventually(t, "the run and the rollback counted", func() bool {
		return testutil.ToFloat64(metrics.CanaryAnalysisRuns.WithLabelValues("shop", "Failed")) == 1 &&
			testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Failed")) == 1 &&
			testutil.ToFloat64(metrics.CanarySteps.WithLabelValues("rolledback", "shop")) == 1 &&
			testutil.ToFloat64(metrics.Repairs.WithLabelValues("Rollback", "done", "shop")) == 1
	})
	if n := deletes(kube); n != 0 {
		t.Errorf("%d pods deleted, want none", n)
	}
	if q := p.seen(); len(q) != 1 {
		t.Errorf("queries %q, want one", q)
	}
}

// TestAnalysisInconclusivePauses: Prometheus unreachable beyond consecutiveErrorLimit: no patch
// of the spec, nothing deleted, a Warning CanaryInconclusive, Reconciling=True CanaryPaused;
// then a new value of the args annotation measures the step again, and it goes forward.
func TestAnalysisInconclusivePauses(t *testing.T) {
	tmpl := strings.Replace(errorRatioTemplate, "    successCondition:", "    consecutiveErrorLimit: 0\n    successCondition:", 1)
	kube := analysisCluster(stepHealthy(map[string]string{"stsdiag.io/canary-analysis-template": tmpl, "stsdiag.io/canary-analysis-args": "job=shop"}))
	p := &prometheus{err: errorString(`Post "http://prometheus.invalid:9090/api/v1/query": dial tcp: lookup prometheus.invalid: no such host`)}
	metrics, _ := run(t, kube, p.options())
	eventually(t, "Reconciling=True CanaryPaused", func() bool {
		c := reconciling(setNow(t, kube))
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "CanaryPaused"
	})
	eventually(t, "a CanaryInconclusive Event", func() bool { return len(shopEvents(t, kube, "CanaryInconclusive")) == 1 })
	e := shopEvents(t, kube, "CanaryInconclusive")[0]
	want := `stsdiag canary of revision web-b paused at partition 3, nothing rolled back, no step forward until the template, the partition or the analysis changes: ` +
		`analysis error-ratio could not be measured: Metric "errors" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0)`
	if e.Type != corev1.EventTypeWarning || !strings.HasPrefix(e.Message, want) || !strings.Contains(e.Message, "no such host") {
		t.Errorf("%s %q, want Warning %q…", e.Type, e.Message, want)
	}
	if c := reconciling(setNow(t, kube)); !strings.HasPrefix(c.Message, "canary of revision web-b paused at partition 3 (change the analysis, the template or the partition to go on): analysis error-ratio could not be measured") {
		t.Errorf("condition message %q", c.Message)
	}
	time.Sleep(300 * time.Millisecond) // any sync that would step or roll back has had its turn
	if n := specPatches(kube); n != 0 {
		t.Fatalf("%d patches of the spec while paused", n)
	}
	if n := deletes(kube); n != 0 {
		t.Errorf("%d pods deleted", n)
	}
	if got := testutil.ToFloat64(metrics.CanaryAnalysisRuns.WithLabelValues("shop", "Error")); got != 1 {
		t.Errorf("runs{Error} = %v", got)
	}
	if got := testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Error")); got != 1 {
		t.Errorf("measurements{Error} = %v", got)
	}

	// Resumed: Prometheus back, the analysis re-annotated.
	p.mu.Lock()
	p.err, p.values = nil, []float64{0}
	p.mu.Unlock()
	set := setNow(t, kube)
	set.Annotations["stsdiag.io/canary-analysis-args"] = "job=shop,namespace=shop"
	if _, err := kube.AppsV1().StatefulSets("shop").Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPartition(t, kube, 2)
	if got := testutil.ToFloat64(metrics.CanaryAnalysisRuns.WithLabelValues("shop", "Successful")); got != 1 {
		t.Errorf("runs{Successful} = %v after resuming", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestAnalysisConfigMapMissing: the ConfigMap the annotation names does not exist: a template
// change waiting behind the parked partition is not started (no pod could be measured), one
// Warning CanaryInvalid says so.
func TestAnalysisConfigMapMissing(t *testing.T) {
	set := stepHealthy(map[string]string{"stsdiag.io/canary-analysis": "error-ratio"})
	set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](4)
	set.Status.UpdatedReplicas = 0
	kube := analysisCluster(set)
	p := &prometheus{values: []float64{0}}
	run(t, kube, p.options())
	eventually(t, "a CanaryInvalid Event", func() bool { return len(shopEvents(t, kube, "CanaryInvalid")) == 1 })
	e := shopEvents(t, kube, "CanaryInvalid")[0]
	if want := "annotation stsdiag.io/canary-analysis: ConfigMap shop/error-ratio not found"; e.Type != corev1.EventTypeWarning || e.Message != want {
		t.Errorf("%s %q, want Warning %q", e.Type, e.Message, want)
	}
	time.Sleep(300 * time.Millisecond)
	if n := specPatches(kube); n != 0 {
		t.Errorf("%d patches of the spec, want none", n)
	}
	if len(p.seen()) != 0 {
		t.Errorf("measured: %q", p.seen())
	}
}

// TestAnalysisInvalidDeclarations: what watch cannot measure with is one Warning CanaryInvalid
// naming the annotation, and no step forward.
func TestAnalysisInvalidDeclarations(t *testing.T) {
	web := strings.Replace(errorRatioTemplate, "prometheus:\n", "web:\n", 1)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		configMap   *corev1.ConfigMap
		want        string
	}{
		{"unsupported provider", map[string]string{"stsdiag.io/canary-analysis-template": web, "stsdiag.io/canary-analysis-args": "job=a"}, nil,
			"annotation stsdiag.io/canary-analysis-template: "},
		{"both", map[string]string{"stsdiag.io/canary-analysis-template": errorRatioTemplate, "stsdiag.io/canary-analysis": "error-ratio"}, nil,
			"annotations stsdiag.io/canary-analysis and stsdiag.io/canary-analysis-template: give one of them"},
		{"args alone", map[string]string{"stsdiag.io/canary-analysis-args": "job=a"}, nil,
			"annotation stsdiag.io/canary-analysis-args needs stsdiag.io/canary-analysis or stsdiag.io/canary-analysis-template"},
		{"bad args", map[string]string{"stsdiag.io/canary-analysis-template": errorRatioTemplate, "stsdiag.io/canary-analysis-args": "job"}, nil,
			`annotation stsdiag.io/canary-analysis-args: "job": want name=value`},
		{"undeclared arg", map[string]string{"stsdiag.io/canary-analysis-template": errorRatioTemplate, "stsdiag.io/canary-analysis-args": "job=a,jobs=b"}, nil,
			"annotation stsdiag.io/canary-analysis-template: annotation stsdiag.io/canary-analysis-args: jobs: analysis template error-ratio declares no such argument (it declares namespace, pods, revision, job)"},
		{"arg missing", map[string]string{"stsdiag.io/canary-analysis-template": errorRatioTemplate}, nil,
			"annotation stsdiag.io/canary-analysis-template: analysis template error-ratio: "},
		{"no address", map[string]string{"stsdiag.io/canary-analysis-template": strings.Replace(errorRatioTemplate, "        address: http://prometheus.invalid:9090\n", "", 1),
			"stsdiag.io/canary-analysis-args": "job=a"}, nil,
			"annotation stsdiag.io/canary-analysis-template: analysis template error-ratio: metric errors names no Prometheus address: give watch --prometheus, or set provider.prometheus.address"},
		{"two keys", map[string]string{"stsdiag.io/canary-analysis": "error-ratio", "stsdiag.io/canary-analysis-args": "job=a"},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "error-ratio", Namespace: "shop"}, Data: map[string]string{"a.yaml": errorRatioTemplate, "b.yaml": errorRatioTemplate}},
			"annotation stsdiag.io/canary-analysis: ConfigMap shop/error-ratio has no key template.yaml and 2 others (a.yaml, b.yaml): put the AnalysisTemplate under template.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var extra []runtime.Object
			if tc.configMap != nil {
				extra = append(extra, tc.configMap)
			}
			kube := analysisCluster(stepHealthy(tc.annotations), extra...)
			p := &prometheus{values: []float64{0}}
			run(t, kube, p.options())
			eventually(t, "a CanaryInvalid Event", func() bool { return len(shopEvents(t, kube, "CanaryInvalid")) == 1 })
			if e := shopEvents(t, kube, "CanaryInvalid")[0]; !strings.HasPrefix(e.Message, tc.want) {
				t.Errorf("%q, want it to start %q", e.Message, tc.want)
			}
			time.Sleep(100 * time.Millisecond)
			if n := specPatches(kube); n != 0 || len(p.seen()) != 0 {
				t.Errorf("%d patches of the spec, %d queries; want none", n, len(p.seen()))
			}
		})
	}
}

// TestAnalysisMeasurementEvents: a metric measured 8 times, its phase changing at each: every
// measurement counted, but Events only for the first of the metric and its changes of phase, 5
// at most (client-go's spam filter lets 25 Events of a StatefulSet through, then one per 5
// minutes). The measurements are paced by watch's clock, here a fake one.
func TestAnalysisMeasurementEvents(t *testing.T) {
	tmpl := strings.Replace(errorRatioTemplate, "    successCondition:", "    count: 8\n    interval: 1m\n    failureLimit: 4\n    successCondition:", 1)
	kube := analysisCluster(stepHealthy(map[string]string{"stsdiag.io/canary-analysis-template": tmpl, "stsdiag.io/canary-analysis-args": "job=shop"}))
	p := &prometheus{values: []float64{0, 0.5, 0, 0.5, 0, 0.5, 0, 0.5}}
	opts := p.options()
	clk := clocktesting.NewFakeClock(time.Now())
	opts.Clock = clk
	metrics, _ := run(t, kube, opts)
	measured := func() float64 {
		return testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Successful")) +
			testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Failed"))
	}
	eventually(t, "8 measurements, the run Successful", func() bool {
		if testutil.ToFloat64(metrics.CanaryAnalysisRuns.WithLabelValues("shop", "Successful")) == 1 {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(time.Minute)
		}
		return false
	})
	if got := measured(); got != 8 {
		t.Errorf("%v measurements, want 8", got)
	}
	if s, f := testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Successful")), testutil.ToFloat64(metrics.CanaryAnalysisMeasurements.WithLabelValues("shop", "Failed")); s != 4 || f != 4 {
		t.Errorf("measurements Successful %v, Failed %v; want 4 and 4", s, f)
	}
	waitPartition(t, kube, 2)
	// Events are written by the broadcaster's goroutine, after the partition may have moved.
	eventually(t, "5 CanaryMeasurement Events", func() bool { return len(shopEvents(t, kube, "CanaryMeasurement")) >= 5 })
	time.Sleep(200 * time.Millisecond) // and no more come
	events := shopEvents(t, kube, "CanaryMeasurement")
	if len(events) != 5 {
		t.Errorf("%d CanaryMeasurement Events, want 5", len(events))
	}
	for i, e := range events {
		t.Logf("%d: %s", i, e.Message)
	}
}

// TestAnalysisPausedIsNotRolledBack: once paused, the StatefulSet's diagnosis reports the pause
// (RolloutBlocked CanaryPaused, from watch's own condition), a blocking finding; it held for
// far longer than the hold, watch still neither rolls back nor steps: a pause waits for a person.
func TestAnalysisPausedIsNotRolledBack(t *testing.T) {
	tmpl := strings.Replace(errorRatioTemplate, "    successCondition:", "    consecutiveErrorLimit: 0\n    successCondition:", 1)
	kube := analysisCluster(stepHealthy(map[string]string{"stsdiag.io/canary-analysis-template": tmpl, "stsdiag.io/canary-analysis-args": "job=shop"}))
	p := &prometheus{err: errorString("connection refused")}
	opts := p.options()
	opts.Hold = 20 * time.Millisecond
	run(t, kube, opts)
	eventually(t, "Reconciling=True CanaryPaused", func() bool {
		c := reconciling(setNow(t, kube))
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "CanaryPaused"
	})
	// The pause becomes a finding with the next sync (the condition changed the StatefulSet).
	eventually(t, "Stalled=True RolloutBlocked", func() bool {
		c := stalledOf(setNow(t, kube))
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "RolloutBlocked"
	})
	time.Sleep(500 * time.Millisecond) // 25 holds
	if n := specPatches(kube); n != 0 {
		t.Fatalf("%d patches of the spec while paused (a rollback or a step)", n)
	}
	if n := deletes(kube); n != 0 {
		t.Errorf("%d pods deleted", n)
	}
}
