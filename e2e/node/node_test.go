package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestKubeletStates runs the scenarios whose state the real kubelet makes, side by side on the
// one node. TestLostNode (it stops the kubelet) runs after them.
func TestKubeletStates(t *testing.T) {
	testenv.TestInParallel(t, missingTagFeature(), readinessFeature(), crashLoopFeature(), configErrorFeature(),
		failedMountFeature(), initCrashFeature(), initForeverFeature(), crashFromStartFeature(), sidecarCrashFeature())
}

func deleteNamespace(ns string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		_ = clientset(t, cfg).CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		return ctx
	}
}

// missingTagFeature: kubernetes#67250 with a tag the registry really lacks. web-0 churns
// ErrImagePull ⇄ ImagePullBackOff; the template is fixed; OrderedReady never replaces web-0.
func missingTagFeature() features.Feature {
	const ns, name = "node-67250", "web"
	var missing string
	reasons := map[string]bool{}
	return features.New("kubernetes#67250: a tag the registry lacks, fixed in the template").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 3)
			missing = local.Image("app:1.0-missing")
			set := appSet(ns, name, 3)
			set.Spec.Template.Spec.Containers[0].Image = missing
			create(ctx, t, cs, set)
			waitPod(ctx, t, cs, ns, name+"-0", 90*time.Second, "ImagePullBackOff", func(p *corev1.Pod) bool {
				reasons[waitingReason(p, "web")] = true
				return waitingReason(p, "web") == "ImagePullBackOff"
			})
			update(ctx, t, cs, ns, name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = local.Image(cluster.AppImage) })
			return ctx
		}).
		Assess("premise: the real kubelet's pull errors, and web-0 is never replaced (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			// containerd's words, through the kubelet (REAL-WORLD.md §1).
			notFound := fmt.Sprintf(`failed to pull and unpack image "%[1]s": failed to resolve reference "%[1]s": %[1]s: not found`, missing)
			pod := waitPod(ctx, t, cs, ns, name+"-0", 60*time.Second, "the pull error", func(p *corev1.Pod) bool {
				st := containerStatus(p, "web")
				reasons[waitingReason(p, "web")] = true
				return st != nil && st.State.Waiting != nil && strings.Contains(st.State.Waiting.Message, notFound)
			})
			if msg := containerStatus(pod, "web").State.Waiting.Message; !strings.Contains(msg, "rpc error: code = NotFound desc = ") {
				t.Errorf("waiting message %q lacks the CRI's NotFound", msg)
			}
			eventWith(ctx, t, cs, ns, name+"-0", "Failed", "Error: ErrImagePull", 10*time.Second)
			eventWith(ctx, t, cs, ns, name+"-0", "BackOff", fmt.Sprintf(`Back-off pulling image "%s"`, missing), 10*time.Second)
			if !reasons["ErrImagePull"] || !reasons["ImagePullBackOff"] {
				t.Errorf("reasons seen %v, want ErrImagePull and ImagePullBackOff", reasons)
			}
			harness.ProvenStuck(ctx, t, cs, ns, name, 30*time.Second)
			// The churn goes on while it is stuck: the kubelet retries (attempts at about +1, +25,
			// +51, +91 s), each failure ErrImagePull, then back to ImagePullBackOff.
			again := []string{}
			waitPod(ctx, t, cs, ns, name+"-0", 2*time.Minute, "ErrImagePull then ImagePullBackOff again", func(p *corev1.Pod) bool {
				r := waitingReason(p, "web")
				if r == "ErrImagePull" && len(again) == 0 || r == "ImagePullBackOff" && len(again) == 1 {
					again = append(again, r)
				}
				return len(again) == 2
			})
			for _, later := range []string{name + "-1", name + "-2"} {
				if _, err := cs.CoreV1().Pods(ns).Get(ctx, later, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("%s exists: the controller went on", later)
				}
			}
			return ctx
		}).
		Assess("check: StaleRevisionStuck for web-0 with the kubelet's message, blocking web-1 and web-2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := run(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json")
			rep := harness.DecodeReport(t, r.Stdout)
			f := harness.FindingOf(rep, apiv1.StaleRevisionStuck, name+"-0")
			if r.Code != 1 || f == nil || len(harness.Errors(rep)) != 1 {
				t.Fatalf("exit %d findings %v", r.Code, harness.Codes(rep))
			}
			if (f.Reason != "ImagePullBackOff" && f.Reason != "ErrImagePull") || f.Image != missing || f.Container != "web" ||
				!strings.Contains(f.Message, missing+": not found") || f.Remedy != "kubectl delete pod web-0 -n node-67250" {
				t.Errorf("finding %+v", f)
			}
			if blocks, _ := harness.Details(*f)["blocks"].([]any); len(blocks) != 2 {
				t.Errorf("blocks %v, want web-1 and web-2", blocks)
			}
			return ctx
		}).
		Assess("fix deletes web-0; the rollout completes on three replicas, web-0's claim kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before := harness.MarkClaims(ctx, t, cs, ns)
			if len(before) != 1 {
				t.Fatalf("claims %v, want data-web-0 only", before)
			}
			r := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--wait=3m", "-o", "json")
			res := harness.DecodeFix(t, r.Stdout)
			if r.Code != 0 || len(res.Actions) != 1 || res.Actions[0].Action != apiv1.DeletePod || res.Actions[0].Pod != "web-0" ||
				res.Actions[0].Result != apiv1.ResultDone || res.Rollout != apiv1.RolloutComplete {
				t.Fatalf("exit %d %+v", r.Code, res)
			}
			harness.ClaimsKept(ctx, t, cs, ns, before)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			if claims := harness.Claims(ctx, t, cs, ns); len(claims) != 3 {
				t.Errorf("claims %v, want three", claims)
			}
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// readinessFeature: probe-0 runs but its readiness probe answers 503; the template is fixed;
// OrderedReady waits for probe-0 forever (the kwok suite's notReadyFeature, on a real kubelet).
func readinessFeature() features.Feature {
	const ns, name = "node-readiness", "probe"
	return features.New("Running but never Ready: a real readiness probe failing with 503").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 2)
			create(ctx, t, cs, appSet(ns, name, 2, "serve", "-unready"))
			waitPod(ctx, t, cs, ns, name+"-0", 90*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			update(ctx, t, cs, ns, name, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Args = []string{"serve"} })
			return ctx
		}).
		Assess("premise: the kubelet's probe fails with 503 and probe-0 is never replaced (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			eventWith(ctx, t, cs, ns, name+"-0", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", 30*time.Second)
			harness.ProvenStuck(ctx, t, cs, ns, name, 30*time.Second)
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := containerStatus(pod, "web")
			if pod.Status.Phase != corev1.PodRunning || st == nil || st.State.Running == nil || !ptr.Deref(st.Started, false) || st.Ready {
				t.Fatalf("probe-0 is not Running, started and unready: %s", statusJSON(pod))
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady") {
					t.Errorf("Ready condition %+v", c)
				}
			}
			return ctx
		}).
		Assess("check: StaleRevisionStuck NotReady with the probe's output", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := run(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--not-ready-threshold", "30s")
			rep := harness.DecodeReport(t, r.Stdout)
			f := harness.FindingOf(rep, apiv1.StaleRevisionStuck, name+"-0")
			if r.Code != 1 || f == nil || len(harness.Errors(rep)) != 1 {
				t.Fatalf("exit %d findings %v", r.Code, harness.Codes(rep))
			}
			if f.Reason != "NotReady" || f.Remedy != "kubectl delete pod probe-0 -n node-readiness" ||
				!strings.Contains(f.Message, "last probe failure: Readiness probe failed: HTTP probe failed with statuscode: 503") {
				t.Errorf("finding %+v", f)
			}
			return ctx
		}).
		Assess("fix deletes probe-0; the rollout completes, claims kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before := harness.MarkClaims(ctx, t, cs, ns)
			r := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--not-ready-threshold", "30s", "--wait=3m", "-o", "json")
			res := harness.DecodeFix(t, r.Stdout)
			if r.Code != 0 || len(res.Actions) != 1 || res.Actions[0].Pod != "probe-0" || res.Actions[0].Result != apiv1.ResultDone || res.Rollout != apiv1.RolloutComplete {
				t.Fatalf("exit %d %+v", r.Code, res)
			}
			harness.ClaimsKept(ctx, t, cs, ns, before)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// brokenUpdate is a healthy two-replica StatefulSet given a template the real kubelet cannot
// run: the controller replaces <name>-1 with the new revision and stops there (the readiness
// probe keeps a failing pod from ever counting as Ready). fix --rollback returns the template to
// the revision whose pod is still Ready and replaces <name>-1.
type brokenUpdate struct {
	ns, name, title string
	// prepare makes what the good template needs (run before the StatefulSet is created).
	prepare func(ctx context.Context, t *testing.T, cs kubernetes.Interface)
	// breakIt changes the template.
	breakIt func(*appsv1.StatefulSet)
	// premise waits for and asserts the kubelet's state of <name>-1 (its reasons and messages).
	premise func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string)
	// holds must stay true on every poll while the rollout is proven frozen.
	holds func(ctx context.Context, cs kubernetes.Interface, pod string) error
	// verdict asserts check's report (it may poll: some verdicts need time).
	verdict func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string)
	// fixArgs are extra flags of fix (thresholds); repaired false: fix has no repair for it.
	fixArgs  []string
	repaired bool
}

func (b brokenUpdate) feature() features.Feature {
	pod := b.name + "-1"
	return features.New(b.title).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, b.ns, 2)
			if b.prepare != nil {
				b.prepare(ctx, t, cs)
			}
			create(ctx, t, cs, appSet(b.ns, b.name, 2, "serve"))
			if err := scenario.WaitRolloutComplete(ctx, cs, b.ns, b.name, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			update(ctx, t, cs, b.ns, b.name, b.breakIt)
			waitPod(ctx, t, cs, b.ns, pod, 60*time.Second, "the update revision", func(p *corev1.Pod) bool {
				return p.DeletionTimestamp == nil && onUpdateRevision(ctx, cs, p, b.name)
			})
			return ctx
		}).
		Assess("premise: the real kubelet's state, and the rollout does not move (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			b.premise(ctx, t, cs, pod)
			frozen(ctx, t, cs, b.ns, b.name, 30*time.Second, func(ctx context.Context) error { return b.holds(ctx, cs, pod) })
			return ctx
		}).
		Assess("check's verdict", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			b.verdict(ctx, t, cfg, pod)
			return ctx
		}).
		Assess("fix --rollback", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			before := harness.MarkClaims(ctx, t, cs, b.ns)
			old, err := cs.CoreV1().Pods(b.ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"fix", "--openshift", "never", "-n", b.ns, "--yes", "--rollback", "--wait=3m", "-o", "json"}, b.fixArgs...)
			r := run(t, cfg, args...)
			res := harness.DecodeFix(t, r.Stdout)
			if !b.repaired {
				if r.Code != 1 || len(res.Actions) != 0 {
					t.Fatalf("fix has no repair for this: exit %d %+v", r.Code, res)
				}
				if now, err := cs.CoreV1().Pods(b.ns).Get(ctx, pod, metav1.GetOptions{}); err != nil || now.UID != old.UID {
					t.Errorf("%s changed without a repair: %v", pod, err)
				}
				return ctx
			}
			var kinds []string
			for _, a := range res.Actions {
				kinds = append(kinds, string(a.Action)+"/"+a.Pod+"/"+string(a.Result))
			}
			if r.Code != 0 || !slices.Equal(kinds, []string{"Rollback//done", "DeletePod/" + pod + "/done"}) || res.Rollout != apiv1.RolloutComplete {
				t.Fatalf("exit %d actions %v rollout %q", r.Code, kinds, res.Rollout)
			}
			harness.ClaimsKept(ctx, t, cs, b.ns, before)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, b.ns, b.name)
			return ctx
		}).
		Teardown(deleteNamespace(b.ns)).Feature()
}

// crashLoopFeature: the new template exits 3 after a log line. On a kubelet ≥ 1.34 the
// container shows terminated (reason Error) between restarts for minutes before any
// CrashLoopBackOff: the verdict must come from the restarts and the exit, not that string.
func crashLoopFeature() features.Feature {
	const logLine = "fatal: cannot open /data/db.lock: permission denied"
	return brokenUpdate{ns: "node-crashloop", name: "crash", title: "a crash loop, judged before any CrashLoopBackOff",
		breakIt: func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Args = []string{"exit", "3", logLine} },
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			p := waitPod(ctx, t, cs, "node-crashloop", pod, 60*time.Second, "a restart after exit code 3", func(p *corev1.Pod) bool {
				st := containerStatus(p, "web")
				return st != nil && st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.ExitCode == 3
			})
			if r := containerStatus(p, "web").LastTerminationState.Terminated.Reason; r != "Error" {
				t.Errorf("the kubelet's reason for exit 3 is %q, want Error", r)
			}
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("phase %s: a crash-looping pod stays Running", p.Status.Phase)
			}
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods("node-crashloop").Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if harness.PodReady(p) {
				return fmt.Errorf("%s is Ready", pod)
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			crashVerdict(ctx, t, cfg, "node-crashloop", pod, apiv1.CurrentRevisionFailing, 3, logLine)
		},
		repaired: true,
	}.feature()
}

// crashVerdict polls check --logs until it reports the crash loop of pod's container web from a
// status without the string CrashLoopBackOff: the kubelet's status read right before and right
// after check shows none and the same restart count. (A readiness probe's results make the
// kubelet sync during a back-off, so CrashLoopBackOff may show from the second restart; a check
// that lands then does not count, the next terminated state does.)
// previousLogGone reports whether a finding's logs say the kubelet no longer had the previous
// container's log file ("…/web/2.log: no such file or directory").
func previousLogGone(f map[string]any) bool {
	logs, _ := detailOf(f, "logs").([]any)
	for _, l := range logs {
		if s, ok := l.(string); ok && strings.Contains(s, ".log: no such file or directory") {
			return true
		}
	}
	return false
}

func crashVerdict(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, pod string, code apiv1.Code, exitCode int, logLine string) {
	t.Helper()
	cs := clientset(t, cfg)
	read := func() (string, int32) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := containerStatus(p, "web")
		if st == nil {
			return statusJSON(p), -1
		}
		return statusJSON(p), st.RestartCount
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		before, restarts := read()
		r := run(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--logs", "5")
		after, restartsAfter := read()
		f := rawFinding(t, r.Stdout, code, pod)
		early := !strings.Contains(before, "CrashLoopBackOff") && !strings.Contains(after, "CrashLoopBackOff") && restarts == restartsAfter
		if f != nil && early && previousLogGone(f) {
			// The kubelet removed the last instance's log file between the status and the log
			// read (its container GC keeps one dead container per pod): judge another moment.
			early = false
		}
		if f == nil || !early {
			if time.Now().After(deadline) {
				t.Fatalf("no %s for %s from a status without CrashLoopBackOff within 3m; last status %s\nlast report:\n%s", code, pod, after, r.Stdout)
			}
			time.Sleep(time.Second)
			continue
		}
		t.Logf("judged at restart %d from the status %s", restarts, before)
		if r.Code != 1 || f["reason"] != "CrashLoopBackOff" || f["container"] != "web" || f["image"] != local.Image(cluster.AppImage) {
			t.Errorf("exit %d finding %v", r.Code, f)
		}
		msg, _ := f["message"].(string)
		if !strings.Contains(msg, `stuck at startup (CrashLoopBackOff, container "web"`) || !strings.Contains(msg, fmt.Sprintf("last exit code %d", exitCode)) {
			t.Errorf("message %q", msg)
		}
		if num(detailOf(f, "lastExitCode")) != exitCode || detailOf(f, "lastExitReason") != "Error" || num(detailOf(f, "restartCount")) < 3 {
			t.Errorf("details %v", f["details"])
		}
		logs, _ := detailOf(f, "logs").([]any)
		if !slices.Contains(logs, any(logLine)) {
			t.Errorf("details.logs %v lack the container's log line %q", logs, logLine)
		}
		return
	}
}

// crashFromStartFeature: a one-replica StatefulSet whose container exits 1 from the start, with
// no readiness probe. A kubelet ≥ 1.34 shows terminated (Error) between restarts and Ready true
// for a moment after each one, long before any CrashLoopBackOff. Nothing earlier was Ready:
// fix --rollback has nothing to return to and says so.
func crashFromStartFeature() features.Feature {
	const ns, name, logLine = "node-crashstart", "boot", "panic: config file /etc/app.toml: no such file or directory"
	return features.New("a crash loop from the start, Ready for a moment after each restart").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 1)
			set := scenario.StatefulSet(ns, name, local.Image(cluster.AppImage), 1, true)
			set.Spec.Template.Spec.Containers[0].Args = []string{"exit", "1", logLine}
			create(ctx, t, cs, set)
			return ctx
		}).
		Assess("premise: terminated Error, restarts, Ready true for a moment (real kubelet)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			var sawReady, sawError bool
			waitPod(ctx, t, cs, ns, name+"-0", 90*time.Second, "Ready after a restart and terminated Error", func(p *corev1.Pod) bool {
				st := containerStatus(p, "web")
				if st == nil || !onUpdateRevision(ctx, cs, p, name) {
					return false
				}
				sawReady = sawReady || (st.Ready && st.RestartCount >= 1)
				sawError = sawError || (st.State.Terminated != nil && st.State.Terminated.Reason == "Error" && st.State.Terminated.ExitCode == 1)
				return sawReady && sawError && p.Status.Phase == corev1.PodRunning
			})
			// It never recovers: the same pod, restarting, for 30 s.
			first := waitPod(ctx, t, cs, ns, name+"-0", 10*time.Second, "read", func(*corev1.Pod) bool { return true })
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
				if err != nil || p.UID != first.UID || p.Status.Phase != corev1.PodRunning {
					return fmt.Errorf("boot-0 went or changed phase: %v %s", err, statusJSON(p))
				}
				return nil
			})
			last := waitPod(ctx, t, cs, ns, name+"-0", 10*time.Second, "read", func(*corev1.Pod) bool { return true })
			if a, b := containerStatus(first, "web").RestartCount, containerStatus(last, "web").RestartCount; b <= a {
				t.Fatalf("restartCount %d → %d: not restarting", a, b)
			}
			return ctx
		}).
		Assess("check's verdict, before any CrashLoopBackOff", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			crashVerdict(ctx, t, cfg, ns, name+"-0", apiv1.CurrentRevisionFailing, 1, logLine)
			return ctx
		}).
		Assess("fix --rollback: no Ready revision to return to, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--rollback", "-o", "json")
			res := harness.DecodeFix(t, r.Stdout)
			if r.Code != 1 || len(res.Actions) != 0 || len(res.Unrepaired) == 0 || !strings.Contains(res.Unrepaired[0].Details.Rollback, "no earlier revision was Ready") {
				t.Errorf("exit %d %+v", r.Code, res)
			}
			return ctx
		}).
		Teardown(deleteNamespace(ns)).Feature()
}

// configErrorFeature: the new template reads an env var from a ConfigMap key that does not exist.
func configErrorFeature() features.Feature {
	const ns = "node-configerr"
	return brokenUpdate{ns: ns, name: "cfg", title: "CreateContainerConfigError: a missing ConfigMap key",
		prepare: func(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"mode": "fast"}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		breakIt: func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CACHE_SIZE", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "cache-size"}}}}
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			p := waitPod(ctx, t, cs, ns, pod, 60*time.Second, "CreateContainerConfigError", func(p *corev1.Pod) bool {
				return waitingReason(p, "web") == "CreateContainerConfigError"
			})
			if msg := containerStatus(p, "web").State.Waiting.Message; msg != "couldn't find key cache-size in ConfigMap node-configerr/settings" {
				t.Errorf("the kubelet's message is %q", msg)
			}
			eventWith(ctx, t, cs, ns, pod, "Failed", "Error: couldn't find key cache-size in ConfigMap node-configerr/settings", 20*time.Second)
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if r := waitingReason(p, "web"); r != "CreateContainerConfigError" {
				return fmt.Errorf("%s waits for %q", pod, r)
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			r, f := pollCheck(t, cfg, ns, apiv1.CurrentRevisionFailing, pod, 10*time.Second)
			msg, _ := f["message"].(string)
			if r.Code != 1 || f["reason"] != "CreateContainerConfigError" || f["container"] != "web" ||
				!strings.Contains(msg, "couldn't find key cache-size in ConfigMap node-configerr/settings") {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "missing") != "configmap/settings" || detailOf(f, "missingKey") != "cache-size" {
				t.Errorf("details %v", f["details"])
			}
		},
		repaired: true,
	}.feature()
}

// failedMountFeature: the new template mounts a Secret that does not exist.
func failedMountFeature() features.Feature {
	const ns = "node-failedmount"
	const mountErr = `MountVolume.SetUp failed for volume "creds" : secret "db-creds" not found`
	return brokenUpdate{ns: ns, name: "mount", title: "FailedMount: a missing Secret",
		breakIt: func(s *appsv1.StatefulSet) {
			spec := &s.Spec.Template.Spec
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-creds"}}})
			spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "creds", MountPath: "/etc/creds"})
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			eventWith(ctx, t, cs, ns, pod, "FailedMount", mountErr, 60*time.Second)
			p := waitPod(ctx, t, cs, ns, pod, 10*time.Second, "ContainerCreating", func(p *corev1.Pod) bool {
				return waitingReason(p, "web") == "ContainerCreating"
			})
			if p.Status.Phase != corev1.PodPending {
				t.Errorf("phase %s", p.Status.Phase)
			}
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodPending || waitingReason(p, "web") != "ContainerCreating" {
				return fmt.Errorf("%s is %s/%s", pod, p.Status.Phase, waitingReason(p, "web"))
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			r, f := pollCheck(t, cfg, ns, apiv1.CurrentRevisionFailing, pod, 60*time.Second)
			msg, _ := f["message"].(string)
			if r.Code != 1 || f["reason"] != "FailedMount" || !strings.Contains(msg, mountErr) {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "volume") != "creds" || detailOf(f, "missing") != "secret/db-creds" {
				t.Errorf("details %v", f["details"])
			}
		},
		repaired: true,
	}.feature()
}

// initCrashFeature: the new template's init container exits 2 again and again (Init:Error).
func initCrashFeature() features.Feature {
	const ns = "node-initcrash"
	return brokenUpdate{ns: ns, name: "migrate", title: "an init container that fails again and again",
		breakIt: func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "schema", Image: local.Image(cluster.AppImage),
				Args: []string{"exit", "2", "migration failed: schema version 7 is unknown"}}}
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			p := waitPod(ctx, t, cs, ns, pod, 60*time.Second, "an init restart after exit code 2", func(p *corev1.Pod) bool {
				st := containerStatus(p, "schema")
				return st != nil && st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.ExitCode == 2
			})
			if r := containerStatus(p, "schema").LastTerminationState.Terminated.Reason; r != "Error" || p.Status.Phase != corev1.PodPending {
				t.Errorf("init container's last reason %q, phase %s", r, p.Status.Phase)
			}
			if r := waitingReason(p, "web"); r != "PodInitializing" {
				t.Errorf("web waits for %q, want PodInitializing", r)
			}
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodPending {
				return fmt.Errorf("%s is %s", pod, p.Status.Phase)
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			r, f := pollCheck(t, cfg, ns, apiv1.CurrentRevisionFailing, pod, 90*time.Second)
			if r.Code != 1 || f["reason"] != "CrashLoopBackOff" || f["container"] != "schema" {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "initContainer") != true || num(detailOf(f, "lastExitCode")) != 2 || detailOf(f, "lastExitReason") != "Error" {
				t.Errorf("details %v", f["details"])
			}
		},
		repaired: true,
	}.feature()
}

// sidecarCrashFeature: the new template adds a sidecar (an init container with restartPolicy
// Always) that exits 0 at once. The kubelet restarts a sidecar whatever its exit code
// (kuberuntime_container.go:1207-1209@v1.37.2), so exit 0 is no completion: a crash loop, like an
// app container's. Its readiness probe never passes, so the pod never turns Ready between runs.
func sidecarCrashFeature() features.Feature {
	const ns = "node-sidecar"
	always := corev1.ContainerRestartPolicyAlways
	return brokenUpdate{ns: ns, name: "sidecar", title: "a sidecar that keeps exiting 0",
		breakIt: func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: local.Image(cluster.AppImage),
				Args: []string{"exit", "0", "proxy: no upstream configured"}, RestartPolicy: &always,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8081)}},
					PeriodSeconds: 1}}}
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			p := waitPod(ctx, t, cs, ns, pod, 90*time.Second, "the sidecar's 3rd restart after exit code 0", func(p *corev1.Pod) bool {
				st := containerStatus(p, "proxy")
				return st != nil && st.RestartCount >= 3 && st.LastTerminationState.Terminated != nil
			})
			last := containerStatus(p, "proxy").LastTerminationState.Terminated
			if last.ExitCode != 0 || last.Reason != "Completed" {
				t.Errorf("sidecar's last exit %d (%s), want 0 (Completed)", last.ExitCode, last.Reason)
			}
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if st := containerStatus(p, "proxy"); st == nil || st.Ready || harness.PodReady(p) {
				return fmt.Errorf("%s: %s", pod, statusJSON(p))
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			r, f := pollCheck(t, cfg, ns, apiv1.CurrentRevisionFailing, pod, 60*time.Second)
			if r.Code != 1 || f["reason"] != "CrashLoopBackOff" || f["container"] != "proxy" {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "initContainer") != true || num(detailOf(f, "lastExitCode")) != 0 || detailOf(f, "lastExitReason") != "Completed" {
				t.Errorf("details %v", f["details"])
			}
		},
		repaired: true,
	}.feature()
}

// initForeverFeature: the new template's init container runs and never completes: the pod stays
// Pending, its app container waiting PodInitializing. fix has no repair for a wait (RolloutBlocked).
func initForeverFeature() features.Feature {
	const ns = "node-initwait"
	return brokenUpdate{ns: ns, name: "initwait", title: "an init container that never completes",
		breakIt: func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "wait-for-db", Image: local.Image(cluster.AppImage), Args: []string{"wait"}}}
		},
		premise: func(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string) {
			waitPod(ctx, t, cs, ns, pod, 60*time.Second, "init container running, web PodInitializing", func(p *corev1.Pod) bool {
				st := containerStatus(p, "wait-for-db")
				return p.Status.Phase == corev1.PodPending && st != nil && st.State.Running != nil && waitingReason(p, "web") == "PodInitializing"
			})
		},
		holds: func(ctx context.Context, cs kubernetes.Interface, pod string) error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if st := containerStatus(p, "wait-for-db"); p.Status.Phase != corev1.PodPending || st == nil || st.State.Running == nil || st.RestartCount != 0 {
				return fmt.Errorf("%s: %s", pod, statusJSON(p))
			}
			return nil
		},
		verdict: func(ctx context.Context, t *testing.T, cfg *envconf.Config, pod string) {
			r, f := pollCheck(t, cfg, ns, apiv1.RolloutBlocked, pod, 30*time.Second, "--not-ready-threshold", "30s")
			if r.Code != 1 || f["reason"] != "WaitRunning" || f["container"] != "wait-for-db" {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "initContainer") != true || detailOf(f, "waitingFor") != "Running" || detailOf(f, "runningFor") == nil {
				t.Errorf("details %v", f["details"])
			}
		},
		fixArgs: []string{"--not-ready-threshold", "30s"},
	}.feature()
}

// TestLostNode: the kubelet stops. The real node lifecycle controller marks the node Unknown and
// db's pods not Ready; a deletion (kubectl delete pod, or a rollout's) is never confirmed, so the
// pods stay terminating and the StatefulSet never replaces them. fix --force-lost-node
// force-deletes them; once the kubelet is back, the rollout completes with the same claims.
//
// With one node the taint eviction never comes: the node lifecycle controller sees every node not
// Ready and enters "master disruption mode", in which it evicts nothing
// (node_lifecycle_controller.go:1091@v1.37.2, seen in this suite's kube-controller-manager log),
// so the test deletes the pods as a person would.
func TestLostNode(t *testing.T) {
	const ns, name = "node-lost", "db"
	uids := map[string]types.UID{}
	var before map[string]types.UID
	f := features.New("a node whose kubelet is stopped").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			setup(ctx, t, cs, ns, 2)
			set := appSet(ns, name, 2, "serve")
			set.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
			create(ctx, t, cs, set)
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{name + "-0", name + "-1"} {
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				uids[p] = pod.UID
			}
			before = harness.MarkClaims(ctx, t, cs, ns)
			if err := local.StopKubelet(); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: the node goes Unknown, db-0 is marked not Ready, nothing moves (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			waitNode(ctx, t, cs, 2*time.Minute, func(n *corev1.Node) bool {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						return c.Status == corev1.ConditionUnknown && c.Reason == "NodeStatusUnknown" && c.Message == "Kubelet stopped posting node status."
					}
				}
				return false
			})
			// The node lifecycle controller's, not the kubelet's: the containers still run.
			waitPod(ctx, t, cs, ns, name+"-0", 30*time.Second, "Ready False", func(p *corev1.Pod) bool { return !harness.PodReady(p) })
			frozen(ctx, t, cs, ns, name, 30*time.Second, func(ctx context.Context) error { return nil })
			return ctx
		}).
		Assess("check: RolloutBlocked WaitReady on db-0, its node Unknown", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r, f := pollCheck(t, cfg, ns, apiv1.RolloutBlocked, name+"-0", 30*time.Second, "--not-ready-threshold", "30s")
			msg, _ := f["message"].(string)
			if r.Code != 1 || f["reason"] != "WaitReady" || !strings.Contains(msg, "its node stsdiag-node has been Ready=Unknown") ||
				!strings.Contains(msg, "no node of the cluster is Ready, so the node lifecycle controller evicts nothing") {
				t.Errorf("exit %d finding %v", r.Code, f)
			}
			if detailOf(f, "waitingFor") != "Ready" || detailOf(f, "node") != cluster.RealNodeName || detailOf(f, "nodeReady") != "Unknown" ||
				detailOf(f, "nodeReason") != "NodeStatusUnknown" {
				t.Errorf("details %v", f["details"])
			}
			fix := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--not-ready-threshold", "30s", "-o", "json")
			if res := harness.DecodeFix(t, fix.Stdout); fix.Code != 1 || len(res.Actions) != 0 {
				t.Errorf("a wait is never repaired: exit %d %+v", fix.Code, res)
			}
			return ctx
		}).
		Assess("premise: deleted, db's pods stay terminating and are never replaced (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for p := range uids {
				if err := cs.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				for p, uid := range uids {
					pod, err := cs.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{})
					if err != nil || pod.UID != uid || pod.DeletionTimestamp == nil {
						return fmt.Errorf("%s went or was replaced: %v", p, err)
					}
				}
				return nil
			})
			return ctx
		}).
		Assess("check: PodStuckTerminating with the node's state; fix needs --force-lost-node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := run(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json", "--terminating-threshold", "5s")
			rep := harness.DecodeReport(t, r.Stdout)
			if r.Code != 1 {
				t.Fatalf("exit %d findings %v", r.Code, harness.Codes(rep))
			}
			for p := range uids {
				f := harness.FindingOf(rep, apiv1.PodStuckTerminating, p)
				if f == nil {
					t.Fatalf("no PodStuckTerminating for %s: %v", p, harness.Codes(rep))
				}
				d := harness.Details(*f)
				if f.Reason != "Terminating" || d["node"] != cluster.RealNodeName || d["nodeReady"] != "Unknown" || d["nodeReason"] != "NodeStatusUnknown" ||
					!strings.Contains(f.Remedy, "confirm node stsdiag-node is really down") ||
					!strings.Contains(f.Remedy, "kubectl delete pod "+p+" -n node-lost --grace-period=0 --force") {
					t.Errorf("finding %+v", f)
				}
			}
			plain := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--terminating-threshold", "5s", "-o", "json")
			if res := harness.DecodeFix(t, plain.Stdout); plain.Code != 1 || len(res.Actions) != 0 {
				t.Errorf("without --force-lost-node nothing is force-deleted: exit %d %+v", plain.Code, res)
			}
			return ctx
		}).
		Assess("fix --force-lost-node force-deletes them; the kubelet comes back; the rollout completes, claims kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			r := run(t, cfg, "fix", "--openshift", "never", "-n", ns, "--yes", "--terminating-threshold", "5s", "--force-lost-node", "-o", "json")
			res := harness.DecodeFix(t, r.Stdout)
			got := map[string]string{}
			for _, a := range res.Actions {
				if a.Action == apiv1.ForceDeletePod && a.Result == apiv1.ResultDone {
					got[a.Pod] = a.UID
				}
			}
			if r.Code != 0 || len(res.Actions) != 2 || got[name+"-0"] != string(uids[name+"-0"]) || got[name+"-1"] != string(uids[name+"-1"]) {
				t.Fatalf("exit %d %+v", r.Code, res)
			}
			// The controller recreates db-0, which waits for a node: the only one is unreachable.
			waitPod(ctx, t, cs, ns, name+"-0", 30*time.Second, "recreated", func(p *corev1.Pod) bool { return p.UID != uids[name+"-0"] })
			t0 := time.Now()
			if err := local.StartKubelet(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("kubelet back, node Ready in %s", time.Since(t0).Round(100*time.Millisecond))
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
			harness.ClaimsKept(ctx, t, cs, ns, before)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			if r := run(t, cfg, "check", "--openshift", "never", "-n", ns, "--terminating-threshold", "5s"); r.Code != 0 {
				t.Errorf("check after the repair: exit %d", r.Code)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := local.StartKubelet(ctx); err != nil && !strings.Contains(err.Error(), "is running") {
				t.Errorf("restarting the kubelet: %v", err)
			}
			return deleteNamespace(ns)(ctx, t, cfg)
		}).Feature()
	testenv.Test(t, f)
}

func waitNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, within time.Duration, ok func(*corev1.Node) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, cluster.RealNodeName, metav1.GetOptions{})
		if err == nil && ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: condition not met within %s (%v)", cluster.RealNodeName, within, err)
		}
		time.Sleep(time.Second)
	}
}
