package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestVerdictsHold: verdicts about the future that hold on the real kubelet and controller —
// wait never calls a crash loop's Ready second Complete, still passes a slow but healthy start,
// and a crash-looping pod the controller only seems about to replace is reported.
func TestVerdictsHold(t *testing.T) {
	testenv.TestInParallel(t, waitCrashLoopFeature(), waitSlowStartFeature(), minReadyCrashLoopFeature())
}

// waitResult is wait's JSON document, read by key.
type waitResult struct {
	Result   string           `json:"result"`
	Message  string           `json:"message"`
	Findings []map[string]any `json:"findings"`
}

func decodeWait(t *testing.T, stdout string) waitResult {
	t.Helper()
	var res waitResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not a WaitResult: %v\n%s", err, stdout)
	}
	return res
}

// podWatch polls a pod in the background and records what the real kubelet and controller did:
// whether the pod was Ready after a restart, whether its container was seen terminated with an
// error, and whether the StatefulSet's status read complete meanwhile.
type podWatch struct {
	mu                             sync.Mutex
	readyAfterRestart, exited      bool
	statusComplete                 bool
	stop                           context.CancelFunc
	done                           chan struct{}
	namespace, set, pod, container string
	lastStatus                     string
}

func watchPod(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, set, pod, container string) *podWatch {
	cs := clientset(t, cfg)
	ctx, cancel := context.WithCancel(ctx)
	w := &podWatch{stop: cancel, done: make(chan struct{}), namespace: ns, set: set, pod: pod, container: container}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			p, perr := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			s, serr := cs.AppsV1().StatefulSets(ns).Get(ctx, set, metav1.GetOptions{})
			w.mu.Lock()
			if perr == nil {
				if st := containerStatus(p, container); st != nil {
					w.readyAfterRestart = w.readyAfterRestart || (st.Ready && st.RestartCount >= 1)
					w.exited = w.exited || (st.State.Terminated != nil && st.State.Terminated.ExitCode != 0) || st.LastTerminationState.Terminated != nil
				}
				w.lastStatus = statusJSON(p)
			}
			if serr == nil && s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas == *s.Spec.Replicas &&
				s.Status.UpdatedReplicas == *s.Spec.Replicas && s.Status.CurrentRevision == s.Status.UpdateRevision {
				w.statusComplete = true
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *podWatch) finish() {
	w.stop()
	<-w.done
}

// waitCrashLoopFeature: issue 33's history. One replica, OrderedReady, no readiness probe; the
// template changes to an image whose process exits 1 after a log line, and wait starts at once,
// as a CI gate right after a push. A kubelet ≥ 1.34 makes the pod Ready for the second each run
// lasts (kubernetes#133066), and the controller's status reads complete then: wait must exit 1
// Stuck with the crash's cause, exit code and log line — never 0.
func waitCrashLoopFeature() features.Feature {
	const ns, name, logLine = "node-waitcrash", "crash", "fatal: listen tcp :8080: bind: address already in use"
	var res harness.Result
	var w *podWatch
	return features.New("wait on a crash-looping deploy: Stuck, never Complete").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 0)
			create(ctx, t, cs, scenario.StatefulSet(ns, name, local.Image(cluster.AppImage), 1, false))
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			update(ctx, t, cs, ns, name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Args = []string{"exit", "1", logLine} })
			w = watchPod(ctx, t, cfg, ns, name, name+"-0", "web")
			start := time.Now()
			res = run(t, cfg, "wait", name, "--openshift", "never", "-n", ns, "--timeout", "5m", "--hold", "20s", "-o", "json")
			t.Logf("wait exited %d after %s", res.Code, time.Since(start).Round(time.Second))
			w.finish()
			return ctx
		}).
		Assess("premise: the real kubelet restarted the container after it exited, and made the pod Ready after a restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w.mu.Lock()
			defer w.mu.Unlock()
			if !w.exited || !w.readyAfterRestart {
				t.Fatalf("not the crash loop of kubernetes#133066: exited %t, Ready after a restart %t; last status %s", w.exited, w.readyAfterRestart, w.lastStatus)
			}
			t.Logf("the controller's status read complete during the crash loop: %t", w.statusComplete)
			return ctx
		}).
		Assess("wait: exit 1, Stuck, CurrentRevisionFailing with the exit code and the log line", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			got := decodeWait(t, res.Stdout)
			if res.Code != 1 || got.Result != string(apiv1.WaitStuck) {
				t.Fatalf("exit %d result %s: %s\nstderr:\n%s", res.Code, got.Result, got.Message, res.Stderr)
			}
			var f map[string]any
			for _, x := range got.Findings {
				if x["code"] == string(apiv1.CurrentRevisionFailing) && x["pod"] == name+"-0" {
					f = x
				}
			}
			if f == nil || f["reason"] != "CrashLoopBackOff" || num(detailOf(f, "lastExitCode")) != 1 {
				t.Fatalf("finding %v; all: %v", f, got.Findings)
			}
			logs, _ := detailOf(f, "logs").([]any)
			if !slices.Contains(logs, any(logLine)) && !previousLogGone(f) {
				t.Errorf("details.logs %v lack the crash's log line %q", logs, logLine)
			}
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// waitSlowStartFeature: a healthy template that takes 20 s to become Ready (the readiness
// probe's initial delay), with minReadySeconds 3: wait exits 0 Complete, after the pod has been
// Ready for the settle time.
func waitSlowStartFeature() features.Feature {
	const ns, name = "node-waitslow", "slow"
	var res harness.Result
	return features.New("wait on a slow but healthy start: Complete").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 0)
			set := scenario.StatefulSet(ns, name, local.Image(cluster.AppImage), 2, false)
			set.Spec.MinReadySeconds = 3
			set.Spec.Template.Spec.Containers[0].Args = []string{"serve"}
			set.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
				ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
				InitialDelaySeconds: 20, PeriodSeconds: 1, FailureThreshold: 1,
			}
			create(ctx, t, cs, set)
			res = run(t, cfg, "wait", name, "--openshift", "never", "-n", ns, "--timeout", "4m", "--hold", "20s", "-o", "json")
			return ctx
		}).
		Assess("premise: each pod ran for ≥ 15 s before it was Ready (real kubelet)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for _, pod := range []string{name + "-0", name + "-1"} {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				st := containerStatus(p, "web")
				var ready *corev1.PodCondition
				for i := range p.Status.Conditions {
					if p.Status.Conditions[i].Type == corev1.PodReady {
						ready = &p.Status.Conditions[i]
					}
				}
				if st == nil || st.State.Running == nil || ready == nil || ready.Status != corev1.ConditionTrue || st.RestartCount != 0 {
					t.Fatalf("%s not Ready and running without restarts: %s", pod, statusJSON(p))
				}
				if d := ready.LastTransitionTime.Sub(st.State.Running.StartedAt.Time); d < 15*time.Second {
					t.Fatalf("%s was Ready %s after it started: not a slow start", pod, d)
				}
			}
			return ctx
		}).
		Assess("wait: exit 0, Complete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if got := decodeWait(t, res.Stdout); res.Code != 0 || got.Result != string(apiv1.WaitComplete) {
				t.Fatalf("exit %d result %s: %s\nstderr:\n%s", res.Code, got.Result, got.Message, res.Stderr)
			}
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// minReadyCrashLoopFeature: a crash-looping pod the controller only seems about to replace. The
// old revision crash-loops without a readiness probe, so the real kubelet makes it Ready for a
// moment each run; but with minReadySeconds 5 it is never Available, and OrderedReady waits for
// Available before it goes on (stateful_set_control.go:485@v1.37.2): the template fix never
// rolls out. check reports it (not "expected to change by itself") and fix plans and makes the
// delete.
func minReadyCrashLoopFeature() features.Feature {
	const ns, name = "node-minready", "blip"
	pod := name + "-0"
	return features.New("a crash loop Ready for moments, never Available: reported, fixed").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 1)
			set := scenario.StatefulSet(ns, name, local.Image(cluster.AppImage), 1, true)
			set.Spec.MinReadySeconds = 5
			set.Spec.Template.Spec.Containers[0].Args = []string{"exit", "1", "boom"}
			create(ctx, t, cs, set)
			var sawReady bool
			waitPod(ctx, t, cs, ns, pod, 90*time.Second, "Ready after a restart", func(p *corev1.Pod) bool {
				st := containerStatus(p, "web")
				sawReady = sawReady || (st != nil && st.Ready && st.RestartCount >= 1)
				return sawReady
			})
			// The fix: a template that serves.
			update(ctx, t, cs, ns, name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Args = []string{"serve"} })
			return ctx
		}).
		Assess("premise: the pod keeps crashing and is Ready for moments, and the rollout does not move (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			w := watchPod(ctx, t, cfg, ns, name, pod, "web")
			first := waitPod(ctx, t, cs, ns, pod, 10*time.Second, "read", func(*corev1.Pod) bool { return true })
			frozen(ctx, t, cs, ns, name, 30*time.Second, func(ctx context.Context) error {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
				if err != nil || p.UID != first.UID {
					return fmt.Errorf("%s replaced: %v", pod, err)
				}
				return nil
			})
			w.finish()
			last := waitPod(ctx, t, cs, ns, pod, 10*time.Second, "read", func(*corev1.Pod) bool { return true })
			if a, b := containerStatus(first, "web").RestartCount, containerStatus(last, "web").RestartCount; b <= a {
				t.Fatalf("restartCount %d → %d: not crash-looping", a, b)
			}
			return ctx
		}).
		Assess("check: StaleRevisionStuck, never replaced; fix plans the delete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r, f := pollCheck(t, cfg, ns, apiv1.StaleRevisionStuck, pod, 2*time.Minute)
			msg, _ := f["message"].(string)
			if r.Code != 1 || f["reason"] != "CrashLoopBackOff" || !strings.Contains(msg, "Available (Ready for minReadySeconds, 5s)") {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			plan := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--dry-run=client", "-o", "json")
			res := harness.DecodeFix(t, plan.Stdout)
			if len(res.Actions) != 1 || res.Actions[0].Action != apiv1.DeletePod || res.Actions[0].Pod != pod {
				t.Fatalf("plan %+v", res.Actions)
			}
			return ctx
		}).
		Assess("fix --yes --wait: the pod recreated from the fix, claims kept, Complete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before := harness.MarkClaims(ctx, t, cs, ns)
			r := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--wait=3m", "-o", "json")
			res := harness.DecodeFix(t, r.Stdout)
			if r.Code != 0 || len(res.Actions) != 1 || res.Actions[0].Result != apiv1.ResultDone || res.Rollout != apiv1.RolloutComplete {
				t.Fatalf("exit %d %+v\nstderr:\n%s", r.Code, res, r.Stderr)
			}
			harness.ClaimsKept(ctx, t, cs, ns, before)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}
