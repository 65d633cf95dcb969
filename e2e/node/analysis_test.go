package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// Canary analysis on the real node (issue 35): `canary --analysis FILE --prometheus URL` runs an
// Argo Rollouts AnalysisTemplate against a real Prometheus (prometheus_test.go) that scrapes the
// suite's app, whose error ratio is set by `serve -errors R`. Each scenario proves its premise on
// the real system (the API, and Prometheus' HTTP API) before it asserts the verdict.
//
// The CLI contract these tests are written against:
//
//	kubectl-stsdiag canary NAME -n NS --steps 1,50% [--image CONTAINER=REF] --analysis FILE
//	  --prometheus URL [--arg k=v]... --hold 5s --settle 5s --timeout 3m -o json
//
// stsdiag fills the template's arguments named namespace, statefulset, revision (the update
// revision) and pods (a regex alternation of the step's canary pods, e.g. web-2|web-3) when it
// declares them without a value; --prometheus is the address of every prometheus provider (it
// replaces the template's address). Exit codes: 0 Complete, 1 RolledBack, 2 bad input, 4
// Inconclusive. The JSON document (CanaryResult) gains steps[].analysis and the result
// Inconclusive; it is decoded here into local structs (analysisResult).

// argoSuccessRateTemplate is Argo Rollouts' documented AnalysisTemplate for a success rate,
// verbatim (the YAML block's 4-space indentation removed): docs/features/analysis.md, section
// "Background Analysis", tab "AnalysisTemplate", in github.com/argoproj/argo-rollouts at
// 9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d (2026-08-17).
const argoSuccessRateTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
  metrics:
  - name: success-rate
    interval: 5m
    # NOTE: prometheus queries return results in the form of a vector.
    # So it is common to access the index 0 of the returned array to obtain the value
    successCondition: result[0] >= 0.95
    failureLimit: 3
    provider:
      prometheus:
        address: http://prometheus.example.com:9090
        query: |
          sum(irate(
            istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}",response_code!~"5.*"}[5m]
          )) /
          sum(irate(
            istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}"}[5m]
          ))
`

// errorRatioTemplate is the suite's own template: the canary pods' error ratio over 20 s, three
// measurements 5 s apart, failed from the second failure. It has no address (--prometheus gives
// it). The PromQL comment line carries the statefulset and revision arguments into the query
// stsdiag reports, where the test reads them.
const errorRatioTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-ratio
spec:
  args:
  - name: namespace
  - name: statefulset
  - name: revision
  - name: pods
  metrics:
  - name: error-ratio
    count: 3
    interval: 5s
    failureLimit: 1
    successCondition: result[0] <= 0.1
    provider:
      prometheus:
        query: |
          # {{args.statefulset}} at {{args.revision}}
          sum(rate(app_requests_total{namespace="{{args.namespace}}",pod=~"{{args.pods}}",code="500"}[20s]))
          /
          sum(rate(app_requests_total{namespace="{{args.namespace}}",pod=~"{{args.pods}}"}[20s]))
`

// webProviderTemplate measures with Argo's web provider (docs/analysis/web.md's example, the
// metric renamed so that "web" in stsdiag's message can only be the provider): not supported.
const webProviderTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: availability
spec:
  args:
  - name: service-name
  metrics:
  - name: availability
    successCondition: result == true
    provider:
      web:
        url: "http://my-server.com/api/v1/measurement?service={{ args.service-name }}"
        timeoutSeconds: 20
        jsonPath: "{$.data.ok}"
`

// analysisResult is the CanaryResult document with the analysis fields issue 35 adds, read by
// key (the product's api/v1 types for them are not imported).
type analysisResult struct {
	Kind            string `json:"kind"`
	Result          string `json:"result"`
	Message         string `json:"message"`
	PartitionBefore int32  `json:"partitionBefore"`
	Steps           []struct {
		Step      string        `json:"step"`
		Pods      int32         `json:"pods"`
		Partition int32         `json:"partition"`
		Result    string        `json:"result"`
		Analysis  *stepAnalysis `json:"analysis"`
	} `json:"steps"`
	RolledBack []struct {
		Revision string `json:"revision"`
	} `json:"rolledBack"`
	Actions []struct {
		Action string `json:"action"`
		Pod    string `json:"pod"`
		Result string `json:"result"`
	} `json:"actions"`
}

type stepAnalysis struct {
	Template string         `json:"template"`
	Phase    string         `json:"phase"`
	Metrics  []metricResult `json:"metrics"`
}

type metricResult struct {
	Name         string        `json:"name"`
	Query        string        `json:"query"`
	Phase        string        `json:"phase"`
	Successful   int           `json:"successful"`
	Failed       int           `json:"failed"`
	Inconclusive int           `json:"inconclusive"`
	Error        int           `json:"error"`
	Measurements []measurement `json:"measurements"`
}

type measurement struct {
	Phase      string `json:"phase"`
	Value      any    `json:"value"`
	StartedAt  string `json:"startedAt"`
	FinishedAt string `json:"finishedAt"`
	Message    string `json:"message"`
}

// number reads a measurement's value: a number, or Argo's form of a vector result ("[0.5]", its
// first element) or of a scalar ("0.5").
func (m measurement) number() (float64, bool) {
	switch v := m.Value.(type) {
	case float64:
		return v, true
	case string:
		s := strings.TrimSpace(strings.Trim(strings.TrimSpace(v), "[]"))
		s, _, _ = strings.Cut(s, ",")
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f, err == nil
	}
	return 0, false
}

func decodeAnalysis(t *testing.T, stdout string) analysisResult {
	t.Helper()
	var doc analysisResult
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Kind != "CanaryResult" {
		t.Fatalf("stdout is not a CanaryResult (%v):\n%s", err, stdout)
	}
	return doc
}

// analysisSupported says whether the built canary has --analysis (issue 35).
func analysisSupported(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command(stsdiag, "canary", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl-stsdiag canary --help: %v\n%s", err, out)
	}
	return strings.Contains(string(out), "--analysis")
}

// TestCanaryAnalysis: canary steps gated by an AnalysisTemplate measured on a real Prometheus —
// a healthy template completes, an erroring one is rolled back, Prometheus going down is
// Inconclusive, Argo's own example runs unchanged, an unsupported provider is refused first.
func TestCanaryAnalysis(t *testing.T) {
	if !analysisSupported(t) {
		t.Skip("kubectl-stsdiag canary --help does not mention --analysis: canary analysis (issue 35) is not in this build")
	}
	testenv.TestInParallel(t, analysisGoodFeature(), analysisBadFeature(), analysisPrometheusDownFeature(),
		analysisArgoExampleFeature(), analysisWebProviderFeature())
}

// writeTemplate writes an AnalysisTemplate into a directory of its own (its path names no
// StatefulSet, container or provider) and returns the file's path.
func writeTemplate(t *testing.T, text string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stsdiag-analysis-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readyAppSet creates the namespace, its volumes and a StatefulSet of the app with args, waits
// until its rollout is complete and returns its current revision.
func readyAppSet(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32, change func(*appsv1.StatefulSet), args ...string) string {
	t.Helper()
	setup(ctx, t, cs, ns, int(replicas))
	set := appSet(ns, name, replicas, args...)
	if change != nil {
		change(set)
	}
	create(ctx, t, cs, set)
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Status.CurrentRevision
}

// podState is what must not change about a pod that is left alone.
type podState struct {
	UID      types.UID
	Restarts int32
	Revision string
	Ready    bool
}

func podStates(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, set string) map[string]podState {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + set})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		s := podState{UID: p.UID, Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey], Ready: harness.PodReady(&p)}
		for _, c := range p.Status.ContainerStatuses {
			s.Restarts += c.RestartCount
		}
		out[p.Name] = s
	}
	return out
}

// setState is the StatefulSet's spec as canary may change it, and its revisions.
type setState struct {
	Generation      int64
	Partition       int32
	Image           string
	Args            string
	Current, Update string
	ReadyReplicas   int32
	Observed        bool
}

func stateOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) setState {
	t.Helper()
	s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := setState{Generation: s.Generation, Image: s.Spec.Template.Spec.Containers[0].Image,
		Args: strings.Join(s.Spec.Template.Spec.Containers[0].Args, " "), Current: s.Status.CurrentRevision,
		Update: s.Status.UpdateRevision, ReadyReplicas: s.Status.ReadyReplicas, Observed: s.Status.ObservedGeneration >= s.Generation}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		st.Partition = *ru.Partition
	}
	return st
}

// holdPartition changes the template and sets the partition in one patch, as a user stepping by
// hand would, and waits until the controller observed it.
func holdPartition(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, partition int32, args ...string) {
	t.Helper()
	a, _ := json.Marshal(args)
	patch := fmt.Sprintf(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":%d}},"template":{"spec":{"containers":[{"name":"web","args":%s}]}}}}`, partition, a)
	if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitObserved(ctx, cs, ns, name); err != nil {
		t.Fatal(err)
	}
}

var podsArg = regexp.MustCompile(`pod=~"([^"]*)"`)

// queriedPods returns the pods the resolved query selects (its pod=~"a|b" regex, sorted).
func queriedPods(query string) []string {
	m := podsArg.FindStringSubmatch(query)
	if m == nil {
		return nil
	}
	pods := strings.Split(m[1], "|")
	slices.Sort(pods)
	return pods
}

// checkMeasurements fails unless every measurement has the phase, a value ok accepts, and times
// in order (startedAt ≤ finishedAt, successive starts at least minGap apart).
func checkMeasurements(t *testing.T, where string, m metricResult, phase string, ok func(float64) bool, minGap time.Duration) {
	t.Helper()
	var lastStart time.Time
	for i, ms := range m.Measurements {
		v, isNum := ms.number()
		if ms.Phase != phase || !isNum || !ok(v) {
			t.Errorf("%s: measurement %d %+v: want %s with an accepted value", where, i, ms, phase)
		}
		start, err1 := time.Parse(time.RFC3339, ms.StartedAt)
		end, err2 := time.Parse(time.RFC3339, ms.FinishedAt)
		if err1 != nil || err2 != nil || end.Before(start) {
			t.Errorf("%s: measurement %d: startedAt %q finishedAt %q", where, i, ms.StartedAt, ms.FinishedAt)
			continue
		}
		if i > 0 && start.Sub(lastStart) < minGap {
			t.Errorf("%s: measurement %d started %s after the one before, want ≥ %s (interval)", where, i, start.Sub(lastStart), minGap)
		}
		lastStart = start
	}
}

// bgRun is stsdiag running in the background, its stderr readable while it runs.
type bgRun struct {
	args        []string
	mu          sync.Mutex
	out, errOut bytes.Buffer
	done        chan harness.Result
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// startStsdiag runs the built binary against the cluster in the background (as run does).
func startStsdiag(t *testing.T, cfg *envconf.Config, args ...string) *bgRun {
	t.Helper()
	r := &bgRun{args: args, done: make(chan harness.Result, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, stsdiag, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cfg.KubeconfigFile(), "PATH="+binDir+":"+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = lockedWriter{&r.mu, &r.out}, lockedWriter{&r.mu, &r.errOut}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel) // a test that fails before wait does not leave it running
	go func() {
		defer cancel()
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.done <- harness.Result{Stdout: r.out.String(), Stderr: r.errOut.String(), Code: code}
	}()
	return r
}

func (r *bgRun) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errOut.String()
}

// waitPod is waitPod while the run goes on: it fails at once, with the run's output, if the
// run ends first.
func (r *bgRun) waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, within time.Duration, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	var last *corev1.Pod
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		select {
		case res := <-r.done:
			r.log(t, res)
			t.Fatalf("stsdiag ended (exit %d) before pod %s/%s was %s", res.Code, ns, name, what)
		default:
		}
		if p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			last = p
			if ok(p) {
				return
			}
		}
	}
	t.Fatalf("pod %s/%s: %s not seen within %s; last status %s; stsdiag's stderr so far:\n%s", ns, name, what, within, statusJSON(last), r.stderr())
}

func (r *bgRun) log(t *testing.T, res harness.Result) {
	t.Helper()
	t.Logf("$ %s %s → exit %d\n%s%s", stsdiag, strings.Join(r.args, " "), res.Code, res.Stdout, res.Stderr)
}

// wait waits for the run's end and logs it as run does.
func (r *bgRun) wait(t *testing.T, within time.Duration) harness.Result {
	t.Helper()
	select {
	case res := <-r.done:
		r.log(t, res)
		return res
	case <-time.After(within):
		t.Fatalf("stsdiag %v still running after %s; stderr so far:\n%s", r.args, within, r.stderr())
	}
	return harness.Result{}
}

// analysisGoodFeature (a): a healthy new image stepped 1, 50%, 100%, each step's analysis
// Successful on three measurements of an error ratio of 0.
func analysisGoodFeature() features.Feature {
	const ns, name = "node-an-good", "web"
	var promURL, file, good string
	var claims map[string]types.UID
	return features.New("canary --analysis: a healthy template, every step's analysis Successful, Complete").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			good = readyAppSet(ctx, t, cs, ns, name, 4, nil, "serve", "-errors", "0")
			claims = harness.MarkClaims(ctx, t, cs, ns)
			promURL, _ = startPrometheus(t, ns)
			file = writeTemplate(t, errorRatioTemplate)
			return ctx
		}).
		Assess("premise: Prometheus scrapes the four pods, their error ratio 0", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			promValue(ctx, t, promURL, `count(up{namespace="node-an-good",pod=~"web-0|web-1|web-2|web-3"} == 1)`, 60*time.Second, equals(4))
			promValue(ctx, t, promURL, errorRatioQuery(ns, "web-0|web-1|web-2|web-3"), 30*time.Second, equals(0))
			return ctx
		}).
		Assess("exit 0 Complete; steps 1, 50%, 100% Passed, each analysis Successful on 3 measurements of 0", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			newImage := local.Image(cluster.AppImage2)
			start := time.Now()
			r := run(t, cfg, "canary", "--yes", name, "-n", ns, "--steps", "1,50%", "--image", "web="+newImage, "--analysis", file,
				"--prometheus", promURL, "--hold", "5s", "--settle", "5s", "--timeout", "3m", "-o", "json")
			t.Logf("canary --analysis (good) took %s", time.Since(start).Round(100*time.Millisecond))
			doc := decodeAnalysis(t, r.Stdout)
			if r.Code != 0 || doc.Result != "Complete" {
				t.Fatalf("exit %d result %s: %s", r.Code, doc.Result, doc.Message)
			}
			set := stateOf(ctx, t, cs, ns, name)
			if set.Image != newImage || set.Current != set.Update || set.Update == good || set.Partition != 0 || set.Args != "serve -errors 0" {
				t.Errorf("StatefulSet %+v: want %s on one new revision, partition 0", set, newImage)
			}
			want := []struct {
				step            string
				pods, partition int32
				canaries        []string
			}{
				{"1", 1, 3, []string{"web-3"}},
				{"50%", 2, 2, []string{"web-2", "web-3"}},
				{"100%", 4, 0, []string{"web-0", "web-1", "web-2", "web-3"}},
			}
			if len(doc.Steps) != len(want) {
				t.Fatalf("steps %+v", doc.Steps)
			}
			for i, w := range want {
				s := doc.Steps[i]
				where := "step " + w.step
				if s.Step != w.step || s.Pods != w.pods || s.Partition != w.partition || s.Result != "Passed" {
					t.Errorf("%s: %s pods %d partition %d result %s", where, s.Step, s.Pods, s.Partition, s.Result)
				}
				a := s.Analysis
				if a == nil || a.Template != "error-ratio" || a.Phase != "Successful" || len(a.Metrics) != 1 {
					t.Errorf("%s: analysis %+v", where, a)
					continue
				}
				m := a.Metrics[0]
				if m.Name != "error-ratio" || m.Phase != "Successful" || m.Successful != 3 || m.Failed != 0 || m.Inconclusive != 0 ||
					m.Error != 0 || len(m.Measurements) != 3 {
					t.Errorf("%s: metric %+v", where, m)
				}
				// the arguments stsdiag filled: namespace, the step's canary pods, the StatefulSet
				// and its update revision (in the query's comment line)
				if !strings.Contains(m.Query, `namespace="node-an-good"`) || !slices.Equal(queriedPods(m.Query), w.canaries) ||
					!strings.Contains(m.Query, "# web at "+set.Update) || strings.Contains(m.Query, "{{") {
					t.Errorf("%s: query %q: want namespace node-an-good, pods %v, web at %s", where, m.Query, w.canaries, set.Update)
				}
				checkMeasurements(t, where, m, "Successful", equals(0), 4*time.Second)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			// and Prometheus agrees: the new revision's four pods answer no 500
			promValue(ctx, t, promURL, errorRatioQuery(ns, "web-0|web-1|web-2|web-3"), 10*time.Second, equals(0))
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// analysisBadFeature (b): the new template is Ready but answers half its requests with 500. The
// readiness gate passes; the analysis fails; canary rolls the template back.
func analysisBadFeature() features.Feature {
	const ns, name = "node-an-bad", "web"
	var promURL, file, good string
	var claims map[string]types.UID
	var before map[string]podState
	return features.New("canary --analysis: a Ready template answering 50% errors, rolled back by the analysis").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			good = readyAppSet(ctx, t, cs, ns, name, 4, nil, "serve", "-errors", "0")
			claims = harness.MarkClaims(ctx, t, cs, ns)
			before = podStates(ctx, t, cs, ns, name)
			promURL, _ = startPrometheus(t, ns)
			file = writeTemplate(t, errorRatioTemplate)
			// the partition held at 3 and the erroring template, as a user stepping by hand would
			holdPartition(ctx, t, cs, ns, name, 3, "serve", "-errors", "0.5")
			waitPod(ctx, t, cs, ns, "web-3", 90*time.Second, "Ready on the update revision", func(p *corev1.Pod) bool {
				return p.DeletionTimestamp == nil && onUpdateRevision(ctx, cs, p, name) && harness.PodReady(p)
			})
			return ctx
		}).
		Assess("premise: web-3 Ready on the new revision, its error ratio ≈0.5 in Prometheus; web-0..2 untouched at 0", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			// the old web-3's samples leave the 20 s window first
			ratio := promValue(ctx, t, promURL, errorRatioQuery(ns, "web-3"), 60*time.Second, between(0.4, 0.6))
			promValue(ctx, t, promURL, errorRatioQuery(ns, "web-0|web-1|web-2"), 10*time.Second, equals(0))
			set := stateOf(ctx, t, cs, ns, name)
			now := podStates(ctx, t, cs, ns, name)
			if set.Current != good || set.Update == good || set.Partition != 3 || now["web-3"].Revision != set.Update || !now["web-3"].Ready {
				t.Fatalf("premise: StatefulSet %+v, web-3 %+v", set, now["web-3"])
			}
			for _, p := range []string{"web-0", "web-1", "web-2"} {
				if now[p] != before[p] {
					t.Fatalf("premise: %s changed: %+v → %+v", p, before[p], now[p])
				}
			}
			t.Logf("web-3 Ready on %s, error ratio %.3f", set.Update, ratio)
			return ctx
		}).
		Assess("exit 1 RolledBack naming error-ratio and its query; web-0..2 and the PVCs the same objects; template back on the old revision", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			start := time.Now()
			r := run(t, cfg, "canary", "--yes", name, "-n", ns, "--steps", "1,50%", "--analysis", file, "--prometheus", promURL,
				"--hold", "5s", "--settle", "5s", "--timeout", "3m", "-o", "json")
			t.Logf("canary --analysis (bad) took %s", time.Since(start).Round(100*time.Millisecond))
			doc := decodeAnalysis(t, r.Stdout)
			if r.Code != 1 || doc.Result != "RolledBack" || !strings.Contains(doc.Message, "error-ratio") || !strings.Contains(doc.Message, "app_requests_total") {
				t.Fatalf("exit %d result %s: %s", r.Code, doc.Result, doc.Message)
			}
			if doc.PartitionBefore != 3 || len(doc.RolledBack) != 1 || doc.RolledBack[0].Revision != good || len(doc.Steps) != 3 ||
				doc.Steps[0].Result != "Failed" || doc.Steps[1].Result != "Pending" {
				t.Errorf("partitionBefore %d rolledBack %+v steps %+v", doc.PartitionBefore, doc.RolledBack, doc.Steps)
			}
			if a := doc.Steps[0].Analysis; a == nil || a.Template != "error-ratio" || a.Phase != "Failed" || len(a.Metrics) != 1 {
				t.Errorf("step 1 analysis %+v", a)
			} else {
				m := a.Metrics[0]
				// failureLimit 1: failed from the second failed measurement
				if m.Name != "error-ratio" || m.Phase != "Failed" || m.Failed < 2 || m.Failed != len(m.Measurements)-m.Successful-m.Inconclusive-m.Error ||
					!slices.Equal(queriedPods(m.Query), []string{"web-3"}) {
					t.Errorf("step 1 metric %+v", m)
				}
				var failed []measurement
				for _, ms := range m.Measurements {
					if ms.Phase == "Failed" {
						failed = append(failed, ms)
					}
				}
				checkMeasurements(t, "step 1 failed", metricResult{Measurements: failed}, "Failed", between(0.4, 0.6), 0)
			}
			set := stateOf(ctx, t, cs, ns, name)
			if set.Args != "serve -errors 0" || set.Update != good || set.Current != good || set.Partition != 3 {
				t.Errorf("StatefulSet %+v: want the template back on %s (serve -errors 0), partition 3", set, good)
			}
			waitPod(ctx, t, cs, ns, "web-3", 60*time.Second, "a new web-3 Ready on the old revision", func(p *corev1.Pod) bool {
				return p.UID != before["web-3"].UID && p.Labels[appsv1.ControllerRevisionHashLabelKey] == good && harness.PodReady(p)
			})
			now := podStates(ctx, t, cs, ns, name)
			for _, p := range []string{"web-0", "web-1", "web-2"} {
				if now[p] != before[p] {
					t.Errorf("%s was touched: %+v → %+v", p, before[p], now[p])
				}
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// analysisPrometheusDownFeature (c): Prometheus stops during step 1. No measurement can be
// taken: Inconclusive (exit 4), and canary neither rolls back nor goes on.
func analysisPrometheusDownFeature() features.Feature {
	const ns, name = "node-an-down", "web"
	var promURL, file string
	var stopProm func()
	var claims map[string]types.UID
	return features.New("canary --analysis: Prometheus stopped mid-canary, Inconclusive, nothing rolled back or forward").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readyAppSet(ctx, t, cs, ns, name, 4, nil, "serve", "-errors", "0")
			claims = harness.MarkClaims(ctx, t, cs, ns)
			promURL, stopProm = startPrometheus(t, ns)
			file = writeTemplate(t, errorRatioTemplate)
			return ctx
		}).
		Assess("exit 4 Inconclusive; partition, template, pods and PVCs as they were when Prometheus stopped", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			// premise: Prometheus works before it is stopped
			promValue(ctx, t, promURL, errorRatioQuery(ns, "web-0|web-1|web-2|web-3"), 60*time.Second, equals(0))
			newImage := local.Image(cluster.AppImage2)
			bg := startStsdiag(t, cfg, "canary", "--yes", name, "-n", ns, "--steps", "1,50%", "--image", "web="+newImage, "--analysis", file,
				"--prometheus", promURL, "--hold", "5s", "--settle", "5s", "--timeout", "3m", "-o", "json")
			bg.waitPod(ctx, t, cs, ns, "web-3", 2*time.Minute, "Ready on the new image", func(p *corev1.Pod) bool {
				return p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == newImage && harness.PodReady(p)
			})
			// after the step's health gate (settle 5s, then hold 5s): as soon as canary says the
			// step's analysis started ("step 1: analysis error-ratio of web-3"), else 15 s on
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if strings.Contains(bg.stderr(), "analysis") {
					break
				}
			}
			stopProm()
			atStop := stateOf(ctx, t, cs, ns, name)
			podsAtStop := podStates(ctx, t, cs, ns, name)
			t.Logf("prometheus stopped; StatefulSet %+v; canary's stderr so far:\n%s", atStop, bg.stderr())
			if _, err := promQuery(ctx, promURL, "up"); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Fatalf("premise: Prometheus still answers after stop (%v)", err)
			}
			if atStop.Partition != 3 || atStop.Image != newImage || podsAtStop["web-3"].Revision != atStop.Update {
				t.Fatalf("premise: Prometheus was not stopped during step 1: %+v", atStop)
			}
			r := bg.wait(t, 4*time.Minute)
			doc := decodeAnalysis(t, r.Stdout)
			if r.Code != 4 || doc.Result != "Inconclusive" {
				t.Fatalf("exit %d result %s: %s", r.Code, doc.Result, doc.Message)
			}
			if !strings.Contains(doc.Message, "connection refused") || len(doc.Steps) != 3 || doc.Steps[0].Result != "Inconclusive" ||
				doc.Steps[1].Result != "Pending" || len(doc.RolledBack) != 0 || len(doc.Actions) != 0 {
				t.Errorf("message %q steps %+v rolledBack %+v actions %+v", doc.Message, doc.Steps, doc.RolledBack, doc.Actions)
			}
			// Argo's rule: more Errors in a row than consecutiveErrorLimit (default 4) is Error; each
			// measurement that could not be taken says why, in the client's words
			if a := doc.Steps[0].Analysis; a == nil || a.Phase != "Error" || len(a.Metrics) != 1 {
				t.Errorf("step 1 analysis %+v: want phase Error", a)
			} else if m := a.Metrics[0]; m.Phase != "Error" || m.Error < 5 {
				t.Errorf("step 1 metric %+v: want phase Error after 5 errors", m)
			} else {
				last := m.Measurements[len(m.Measurements)-1]
				if last.Phase != "Error" || !strings.Contains(last.Message, "connection refused") {
					t.Errorf("last measurement %+v: want Error, connection refused", last)
				}
			}
			if now := stateOf(ctx, t, cs, ns, name); now.Generation != atStop.Generation || now.Partition != atStop.Partition ||
				now.Image != atStop.Image || now.Args != atStop.Args || now.Update != atStop.Update || now.Current != atStop.Current {
				t.Errorf("StatefulSet moved after Prometheus stopped: %+v → %+v", atStop, now)
			}
			if now := podStates(ctx, t, cs, ns, name); len(now) != 4 || now["web-3"].UID != podsAtStop["web-3"].UID ||
				now["web-0"].UID != podsAtStop["web-0"].UID || now["web-1"].UID != podsAtStop["web-1"].UID || now["web-2"].UID != podsAtStop["web-2"].UID {
				t.Errorf("pods replaced after Prometheus stopped: %+v → %+v", podsAtStop, now)
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// analysisArgoExampleFeature (d): Argo Rollouts' documented success-rate template, unchanged,
// with --arg service-name and --prometheus in place of its example address.
func analysisArgoExampleFeature() features.Feature {
	const ns, name = "node-an-argo", "web"
	const service = "web.node-an-argo.svc.cluster.local"
	var promURL, file string
	return features.New("canary --analysis with Argo Rollouts' documented success-rate template, as is").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readyAppSet(ctx, t, cs, ns, name, 4, nil, "serve", "-errors", "0", "-service", service)
			promURL, _ = startPrometheus(t, ns)
			file = writeTemplate(t, argoSuccessRateTemplate)
			return ctx
		}).
		Assess("premise: Argo's query gives a success rate of 1 for the service", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			promValue(ctx, t, promURL, argoQuery(t, service), 60*time.Second, equals(1))
			return ctx
		}).
		Assess("exit 0 Complete, every step's success-rate analysis Successful", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			newImage := local.Image(cluster.AppImage2)
			r := run(t, cfg, "canary", "--yes", name, "-n", ns, "--steps", "1,50%", "--image", "web="+newImage, "--analysis", file,
				"--prometheus", promURL, "--arg", "service-name="+service, "--hold", "5s", "--settle", "5s", "--timeout", "3m", "-o", "json")
			doc := decodeAnalysis(t, r.Stdout)
			if r.Code != 0 || doc.Result != "Complete" || len(doc.Steps) != 3 {
				t.Fatalf("exit %d result %s steps %d: %s", r.Code, doc.Result, len(doc.Steps), doc.Message)
			}
			for _, s := range doc.Steps {
				a := s.Analysis
				if s.Result != "Passed" || a == nil || a.Template != "success-rate" || a.Phase != "Successful" || len(a.Metrics) != 1 {
					t.Errorf("step %s: result %s analysis %+v", s.Step, s.Result, a)
					continue
				}
				m := a.Metrics[0]
				if m.Name != "success-rate" || m.Phase != "Successful" || len(m.Measurements) == 0 || m.Failed != 0 ||
					!strings.Contains(m.Query, `destination_service=~"`+service+`"`) || strings.Contains(m.Query, "{{") {
					t.Errorf("step %s: metric %+v", s.Step, m)
				}
				checkMeasurements(t, "step "+s.Step, m, "Successful", equals(1), 0)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// analysisWebProviderFeature (e): a template measured by a provider canary does not support is
// refused before anything changes.
func analysisWebProviderFeature() features.Feature {
	// no name here contains "web": in the message it can only be the provider
	const ns, name = "node-an-unsupported", "db"
	var promURL, file string
	return features.New("canary --analysis with a web provider: exit 2 before anything changes").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readyAppSet(ctx, t, cs, ns, name, 2, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Name = "db" }, "serve")
			promURL, _ = startPrometheus(t, ns)
			file = writeTemplate(t, webProviderTemplate)
			return ctx
		}).
		Assess("exit 2, one line error: naming the provider; generation, partition, template and pods unchanged", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before, pods := stateOf(ctx, t, cs, ns, name), podStates(ctx, t, cs, ns, name)
			r := run(t, cfg, "canary", "--yes", name, "-n", ns, "--steps", "1", "--image", "db="+local.Image(cluster.AppImage2), "--analysis", file,
				"--prometheus", promURL, "--arg", "service-name=db", "--hold", "5s", "--settle", "5s", "--timeout", "1m", "-o", "json")
			msg := strings.TrimRight(r.Stderr, "\n")
			if r.Code != 2 || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "error: ") || !strings.Contains(msg, "web") {
				t.Errorf("exit %d stderr %q: want exit 2 and one line error: naming the web provider", r.Code, r.Stderr)
			}
			harness.HoldsFor(ctx, t, 5*time.Second, func(ctx context.Context) error {
				if now := stateOf(ctx, t, cs, ns, name); now != before {
					return fmt.Errorf("StatefulSet changed: %+v → %+v", before, now)
				}
				if now := podStates(ctx, t, cs, ns, name); fmt.Sprint(now) != fmt.Sprint(pods) {
					return fmt.Errorf("pods changed: %+v → %+v", pods, now)
				}
				return nil
			})
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}
