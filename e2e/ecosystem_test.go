package e2e

// Where users already look (issue 16): GitHub Actions annotations and step summaries, the
// kstatus Stalled condition written by watch, and the Argo CD health check that reads it.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/deploy/argocd"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// runEnv runs the built binary like stsdiagRun, with extra environment variables.
func runEnv(t *testing.T, cfg *envconf.Config, env []string, args ...string) result {
	t.Helper()
	r := harness.Run(t, cfg.KubeconfigFile(), binDir, env, stsdiag, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// linesWith returns the lines of s that start with prefix.
func linesWith(s, prefix string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// TestGitHubActions: under GITHUB_ACTIONS=true, check and wait annotate each error finding and
// append a Markdown table to $GITHUB_STEP_SUMMARY; stdout stays the document asked for.
func TestGitHubActions(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	const ns = "gha-stuck"
	f := features.New("GitHub Actions output").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 2); err != nil {
				t.Fatal(err)
			}
			harness.ProvenStuck(ctx, t, cs, ns, "web", 30*time.Second)
			return ctx
		}).
		Assess("check: one ::error line per error finding, the summary appended", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			summary := filepath.Join(t.TempDir(), "step-summary.md")
			if err := os.WriteFile(summary, []byte("## earlier step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
			r := runEnv(t, cfg, env, "check", "--openshift", "never", "-n", ns, "-o", "json")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1", r.code)
			}
			rep := decodeReport(t, r) // stdout is still exactly the JSON document
			if len(rep.Findings) != 1 || rep.Findings[0].Code != apiv1.StaleRevisionStuck {
				t.Fatalf("findings %v", harness.Codes(rep))
			}
			got := rep.Findings[0]
			want := "::error title=StaleRevisionStuck::gha-stuck/web/web-0: " + got.Message + " — kubectl delete pod web-0 -n gha-stuck"
			if lines := linesWith(r.stderr, "::"); len(lines) != 1 || lines[0] != want {
				t.Errorf("annotations %q,\nwant exactly %q", lines, want)
			}
			body, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"## earlier step\n### stsdiag check\n\n1 finding (1 error, 0 warnings, 0 info) in 1 StatefulSet checked (1 stuck).\n\n",
				"| 🔴 error | StaleRevisionStuck | gha-stuck/web | web-0 | ",
				" | `kubectl delete pod web-0 -n gha-stuck` |\n",
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("step summary lacks %q:\n%s", want, body)
				}
			}
			plain := stsdiagRun(t, cfg, "check", "-n", ns)
			if strings.Contains(plain.stderr+plain.stdout, "::error") {
				t.Errorf("annotations without GITHUB_ACTIONS=true:\n%s", plain.stderr)
			}
			return ctx
		}).
		Assess("wait: the same annotation and a Stuck summary", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			summary := filepath.Join(t.TempDir(), "step-summary.md")
			env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
			r := runEnv(t, cfg, env, "wait", "--openshift", "never", "web", "-n", ns, "--stuck-grace", "2s", "--timeout", "1m", "-o", "json")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1", r.code)
			}
			lines := linesWith(r.stderr, "::")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "::error title=StaleRevisionStuck::gha-stuck/web/web-0: ") ||
				!strings.HasSuffix(lines[0], " — kubectl delete pod web-0 -n gha-stuck") {
				t.Errorf("annotations %q", lines)
			}
			body, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(body), "### stsdiag wait\n\n**Stuck** after ") ||
				!strings.Contains(string(body), "| 🔴 error | StaleRevisionStuck | gha-stuck/web | web-0 | ") {
				t.Errorf("step summary:\n%s", body)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// stalled returns the Stalled condition of a StatefulSet (nil if it has none).
func stalled(set *appsv1.StatefulSet) *appsv1.StatefulSetCondition {
	for i := range set.Status.Conditions {
		if set.Status.Conditions[i].Type == "Stalled" {
			return &set.Status.Conditions[i]
		}
	}
	return nil
}

// unstructuredSet is the StatefulSet as the tools that read it (kstatus, Argo CD) see it.
func unstructuredSet(t *testing.T, set *appsv1.StatefulSet) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(set)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apps/v1")
	u.SetKind("StatefulSet")
	return u
}

// argoHealth runs deploy/argocd/health.lua on the StatefulSet as Argo CD would.
func argoHealth(t *testing.T, set *appsv1.StatefulSet) argocd.Health {
	t.Helper()
	h, err := argocd.Run(argoScript(t), unstructuredSet(t, set).Object)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// kstatusOf is cli-utils' kstatus status.Compute, as Flux, Helm 4 and kpt run it.
func kstatusOf(t *testing.T, set *appsv1.StatefulSet) *status.Result {
	t.Helper()
	res, err := status.Compute(unstructuredSet(t, set))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitSet polls a StatefulSet until ok accepts it and returns it with the time it took.
func waitSet(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, within time.Duration, what string, ok func(*appsv1.StatefulSet) bool) (*appsv1.StatefulSet, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(set) {
			return set, time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s/%s: not %s within %s: conditions %+v", ns, name, what, within, set.Status.Conditions)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func stalledTrue(set *appsv1.StatefulSet) bool {
	c := stalled(set)
	return c != nil && c.Status == corev1.ConditionTrue
}

// TestStalledCondition: watch (report mode, deploy/'s RBAC) sets Stalled=True on kubernetes#67250
// within --min-stuck + 10s, keeps it across the controller's status writes (which drop it up to
// v1.36), never touches a healthy set, and clears it within 10s of the recovery; kstatus computes
// Failed, then Current; deploy/argocd's health check says Progressing (before watch), Degraded,
// then Healthy on the same objects.
func TestStalledCondition(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	const ns, minStuck = "stalled", 5 * time.Second
	var w *watchProcess
	f := features.New("kstatus Stalled condition").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "ok", scenario.GoodImage, 2, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 2); err != nil {
				t.Fatal(err)
			}
			harness.ProvenStuck(ctx, t, cs, ns, "web", 30*time.Second)
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "ok", 60*time.Second); err != nil {
				t.Fatal(err)
			}
			// Without the condition, Argo CD's own rules say Progressing forever (argo-cd#6527).
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := argoHealth(t, set); h != (argocd.Health{Status: "Progressing", Message: "Waiting for 2 pods to be ready..."}) {
				t.Errorf("Argo CD health before watch: %+v", h)
			}
			if res := kstatusOf(t, set); res.Status != status.InProgressStatus {
				t.Errorf("kstatus before watch: %s, want InProgress", res.Status)
			}
			imageStreams(ctx, t, cfg)
			w = startWatch(t, applyDeployRBAC(ctx, t, cfg), "-n", ns, "--min-stuck", minStuck.String())
			return ctx
		}).
		Assess("Stalled=True, reason StaleRevisionStuck, within --min-stuck + 10s; kstatus Failed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			set, took := waitSet(ctx, t, cs, ns, "web", minStuck+10*time.Second, "Stalled=True", stalledTrue)
			t.Logf("Stalled=True %s after watch became ready", took.Round(100*time.Millisecond))
			if took < minStuck-time.Second {
				t.Errorf("Stalled=True after %s, before --min-stuck %s", took, minStuck)
			}
			c := stalled(set)
			if c.Reason != "StaleRevisionStuck" || !strings.HasPrefix(c.Message, "web-0: ") || !strings.HasSuffix(c.Message, " delete pod web-0 -n stalled") {
				t.Errorf("condition %+v", c)
			}
			if res := kstatusOf(t, set); res.Status != status.FailedStatus || res.Message != c.Message {
				t.Errorf("kstatus: %s %q, want Failed with the condition's message", res.Status, res.Message)
			}
			if h := argoHealth(t, set); h != (argocd.Health{Status: "Degraded", Message: "StaleRevisionStuck: " + c.Message}) {
				t.Errorf("Argo CD health while stuck: %+v", h)
			}
			return ctx
		}).
		Assess("the controller's status writes do not lose it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			// A spec change outside the template makes the controller write status
			// (observedGeneration): up to v1.36 it rebuilds status from scratch and the condition
			// is gone; watch writes it again.
			before, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			patch := []byte(`{"spec":{"minReadySeconds":1}}`)
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
				t.Fatal(err)
			}
			set, took := waitSet(ctx, t, cs, ns, "web", 10*time.Second, "Stalled=True after the controller's status write", stalledTrue)
			t.Logf("after the controller's status write (observedGeneration %d → %d): Stalled=True within %s", before.Status.ObservedGeneration,
				set.Status.ObservedGeneration, took.Round(100*time.Millisecond))
			if set.Status.ObservedGeneration == before.Status.ObservedGeneration || stalled(set).Reason != "StaleRevisionStuck" {
				t.Errorf("status %+v", set.Status)
			}
			harness.ProvenStuck(ctx, t, cs, ns, "web", 5*time.Second)
			info, err := cs.Discovery().ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			// Up to v1.36 the controller's status update dropped the condition: watch wrote it again.
			if minor, _ := strconv.Atoi(strings.TrimSuffix(info.Minor, "+")); info.Major == "1" && minor <= 36 &&
				!strings.Contains(w.log.String(), "stalled/web: Stalled=True (StaleRevisionStuck) written again: the StatefulSet controller of "+info.GitVersion+" rewrote status without it") {
				t.Errorf("%s: no re-assertion logged:\n%s", info.GitVersion, w.log.String())
			}
			return ctx
		}).
		Assess("cleared within 10s of the recovery; kstatus Current; the healthy set never touched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := cs.CoreV1().Pods(ns).Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			set, took := waitSet(ctx, t, cs, ns, "web", 10*time.Second, "clear of Stalled=True", func(s *appsv1.StatefulSet) bool { return !stalledTrue(s) })
			t.Logf("rollout complete → Stalled %+v within %s", stalled(set), took.Round(100*time.Millisecond))
			if res := kstatusOf(t, set); res.Status != status.CurrentStatus {
				t.Errorf("kstatus after recovery: %s %q, want Current", res.Status, res.Message)
			}
			if h := argoHealth(t, set); h != (argocd.Health{Status: "Healthy", Message: "partitioned roll out complete: 2 new pods have been updated..."}) {
				t.Errorf("Argo CD health after recovery: %+v", h)
			}
			ok, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "ok", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := argoHealth(t, ok); h.Status != "Healthy" {
				t.Errorf("Argo CD health of the healthy set: %+v", h)
			}
			if c := stalled(ok); c != nil {
				t.Errorf("the healthy set got %+v", c)
			}
			if !strings.Contains(w.log.String(), "stalled/web: Stalled=True (StaleRevisionStuck)") {
				t.Errorf("watch did not log the condition:\n%s", w.log.String())
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func argoScript(t *testing.T) string {
	t.Helper()
	s, err := argocd.LoadScript("..")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
