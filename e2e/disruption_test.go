package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// zeroBudget creates a PodDisruptionBudget with maxUnavailable: 0 over app=name and waits until
// the disruption controller has processed it (status.observedGeneration = generation).
func zeroBudget(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	budgetObserved(ctx, t, cs, ns, name)
}

// budgetObserved waits until the disruption controller has processed the budget's spec.
func budgetObserved(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) *policyv1.PodDisruptionBudget {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		pdb, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration >= pdb.Generation && pdb.Status.ExpectedPods > 0, nil
	})
	if err != nil {
		t.Fatalf("the disruption controller never processed PodDisruptionBudget %s/%s: %+v", ns, name, pdb)
	}
	return pdb
}

// budgetIs fails unless the budget's status has these numbers.
func budgetIs(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, allowed, current, desired int32) {
	t.Helper()
	pdb := budgetObserved(ctx, t, cs, ns, name)
	if pdb.Status.DisruptionsAllowed != allowed || pdb.Status.CurrentHealthy != current || pdb.Status.DesiredHealthy != desired {
		t.Fatalf("PodDisruptionBudget %s: allowed %d healthy %d/%d, want allowed %d healthy %d/%d", name,
			pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, allowed, current, desired)
	}
}

// dryRunEvict asks the real API server whether it would evict the pod (dryRun=All).
func dryRunEvict(ctx context.Context, cs kubernetes.Interface, ns, pod string) error {
	return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}})
}

func podUID(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) types.UID {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod.UID
}

// TestDisruptionBudget: fix --disruption=evict over kubernetes#67250 sets guarded by a
// PodDisruptionBudget with maxUnavailable: 0.
func TestDisruptionBudget(t *testing.T) {
	testenv.TestInParallel(t, evictPendingFeature(), evictNotReadyFeature())
}

// evictPendingFeature: the stuck pod is Pending (ImagePullBackOff). The API server deletes a
// Pending pod without consulting its budget (canIgnorePDB, eviction.go:392@v1.37.2), so the
// eviction goes through although the budget allows no disruption.
func evictPendingFeature() features.Feature {
	const ns, name = "evict-pending", "web"
	var before map[string]types.UID
	var stuckUID types.UID
	return features.New("evict a Pending 67250 pod under maxUnavailable: 0").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, name, 2); err != nil {
				t.Fatal(err)
			}
			zeroBudget(ctx, t, cs, ns, name)
			before = harness.MarkClaims(ctx, t, cs, ns)
			stuckUID = podUID(ctx, t, cs, ns, name+"-0")
			return ctx
		}).
		Assess("premise: stuck for 30s, the budget allows no disruption, the API server would evict the Pending pod", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.ProvenStuck(ctx, t, cs, ns, name, 30*time.Second)
			budgetIs(ctx, t, cs, ns, name, 0, 0, 2)
			if err := dryRunEvict(ctx, cs, ns, name+"-0"); err != nil {
				t.Fatalf("the API server refuses to evict the Pending pod: %v", err)
			}
			return ctx
		}).
		Assess("fix --disruption=evict evicts web-0 and the rollout completes, claims kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "evicter-pending", loadRole(t, "../deploy/fix-clusterrole.yaml").Rules)
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--disruption=evict", "--wait=2m", "-o", "json", "--kubeconfig", kubeconfig)
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			a := res.Actions[0]
			if a.Action != apiv1.DeletePod || a.Pod != "web-0" || a.Result != apiv1.ResultDone || a.Disruption != apiv1.DisruptionEvict ||
				a.UID != string(stuckUID) || !strings.HasPrefix(a.Message, "pod evicted (Eviction API") {
				t.Errorf("action %+v", a)
			}
			cs := clientset(t, cfg)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			harness.ClaimsKept(ctx, t, cs, ns, before)
			return ctx
		}).Feature()
}

// evictNotReadyFeature: the stuck pod is Running and never Ready on the old revision. Under the
// default unhealthyPodEvictionPolicy (IfHealthyBudget) an unhealthy budget refuses it (429); under
// AlwaysAllow the API server evicts it (eviction.go:241-251@v1.37.2).
func evictNotReadyFeature() features.Feature {
	const ns, name = "evict-not-ready", "db"
	var before map[string]types.UID
	var stuckUID types.UID
	return features.New("evict a Running, never Ready 67250 pod under maxUnavailable: 0").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.NeverReadyRollout(ctx, cs, ns, name, 2, true); err != nil {
				t.Fatal(err)
			}
			zeroBudget(ctx, t, cs, ns, name)
			before = harness.MarkClaims(ctx, t, cs, ns)
			stuckUID = podUID(ctx, t, cs, ns, name+"-0")
			return ctx
		}).
		Assess("premise: db-0 stays on the old revision, Running, not Ready, for 30s; the API server refuses to evict it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, name+"-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if pod.UID != stuckUID || pod.Status.Phase != corev1.PodRunning || pod.Labels[appsv1.ControllerRevisionHashLabelKey] == set.Status.UpdateRevision || set.Status.ReadyReplicas != 0 {
					return fmt.Errorf("the controller moved: pod %s %s revision %s, %d ready", pod.UID, pod.Status.Phase, pod.Labels[appsv1.ControllerRevisionHashLabelKey], set.Status.ReadyReplicas)
				}
				return nil
			})
			budgetIs(ctx, t, cs, ns, name, 0, 0, 2)
			if err := dryRunEvict(ctx, cs, ns, name+"-0"); !apierrors.IsTooManyRequests(err) {
				t.Fatalf("the API server's answer to evicting db-0: %v, want 429", err)
			}
			return ctx
		}).
		Assess("fix --disruption=evict: skipped, the budget named with its numbers, nothing deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--disruption=evict", "--not-ready-threshold=5s", "-o", "json")
			res := decodeFix(t, r)
			if r.code != 1 || len(res.Actions) != 1 {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			a := res.Actions[0]
			want := "eviction refused by PodDisruptionBudget db (429 toomanyrequests): The disruption budget db needs 2 healthy pods and has 0 currently; nothing deleted"
			if a.Action != apiv1.DeletePod || a.Pod != "db-0" || a.Result != apiv1.ResultSkipped || a.Disruption != apiv1.DisruptionEvict || !strings.HasPrefix(a.Message, want) {
				t.Errorf("action %+v, want skipped with %q", a, want)
			}
			if b := a.DisruptionBudget; b == nil || b.Name != "db" || ptr.Deref(b.DesiredHealthy, -1) != 2 || ptr.Deref(b.CurrentHealthy, -1) != 0 {
				t.Errorf("disruptionBudget %+v, want db needing 2 with 0", b)
			}
			assertPodUID(ctx, t, cfg, ns, name+"-0", stuckUID)
			harness.ClaimsKept(ctx, t, clientset(t, cfg), ns, before)
			return ctx
		}).
		Assess("fix --dry-run=client --disruption=evict predicts the refusal", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--dry-run=client", "--disruption=evict", "--not-ready-threshold=5s", "-o", "json")
			res := decodeFix(t, r)
			want := "dry run: not sent; the eviction would be refused: PodDisruptionBudget db needs 2 healthy pods and has 0 currently (429)"
			if r.code != 0 || len(res.Actions) != 1 || res.Actions[0].Message != want {
				t.Fatalf("exit %d %+v, want %q", r.code, res, want)
			}
			return ctx
		}).
		Assess("unhealthyPodEvictionPolicy: AlwaysAllow: db-0 evicted, the rollout completes, claims kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pdb.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
			if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			budgetIs(ctx, t, cs, ns, name, 0, 0, 2)
			if err := dryRunEvict(ctx, cs, ns, name+"-0"); err != nil {
				t.Fatalf("premise: the API server refuses to evict db-0 under AlwaysAllow: %v", err)
			}
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "evicter-not-ready", loadRole(t, "../deploy/fix-clusterrole.yaml").Rules)
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--disruption=evict", "--not-ready-threshold=5s", "--wait=2m", "-o", "json", "--kubeconfig", kubeconfig)
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			if a := res.Actions[0]; a.Pod != "db-0" || a.Result != apiv1.ResultDone || a.Disruption != apiv1.DisruptionEvict || a.UID != string(stuckUID) {
				t.Errorf("action %+v", a)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, name)
			harness.ClaimsKept(ctx, t, cs, ns, before)
			return ctx
		}).Feature()
}

// TestDisruptionSlowController: kube-controller-manager paused (SIGSTOP) while fix patches the
// seed case's image. It runs serially: a paused controller manager stalls every other test.
func TestDisruptionSlowController(t *testing.T) {
	const short, long = "slow-20s", "slow-3m"
	const pause = 40 * time.Second
	before := map[string]map[string]types.UID{}
	uids := map[string]types.UID{}
	f := features.New("a controller that observes the patch late").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for _, ns := range []string{short, long} {
				seedScenario(ctx, t, cfg, ns)
				before[ns] = harness.MarkClaims(ctx, t, cs, ns)
				uids[ns] = podUID(ctx, t, cs, ns, "web-0")
			}
			return ctx
		}).
		Assess("--wait=20s: the result says the controller never observed the patch; nothing deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			paused := pauseControllerManager(t)
			start := time.Now()
			r := stsdiagRun(t, cfg, "fix", "-n", short, "--yes", "--wait=20s", "-o", "json")
			elapsed := time.Since(start)
			res := decodeFix(t, r)
			// Premise, on the real controller: the patch is still unobserved.
			set, err := cs.AppsV1().StatefulSets(short).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || set.Generation != 2 || set.Status.ObservedGeneration != 1 {
				t.Fatalf("premise: generation %d observed %d, want 2 and 1 (%v)", set.Generation, set.Status.ObservedGeneration, err)
			}
			time.Sleep(time.Until(paused.Add(pause)))
			resumeControllerManager(t)
			t.Logf("fix --wait=20s took %s with kube-controller-manager paused", elapsed.Round(100*time.Millisecond))
			if r.code != 1 || res.Rollout != "not observed" || len(res.Actions) != 2 {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			if res.Actions[0].Action != apiv1.PatchImage || res.Actions[0].Result != apiv1.ResultDone {
				t.Errorf("patch %+v", res.Actions[0])
			}
			want := "the StatefulSet controller did not observe the patch within the --wait budget (status.observedGeneration 1, patched generation 2); nothing deleted"
			if d := res.Actions[1]; d.Action != apiv1.DeletePod || d.Pod != "web-0" || d.Result != apiv1.ResultSkipped || !strings.HasPrefix(d.Message, want) {
				t.Errorf("delete %+v, want skipped with %q", d, want)
			}
			if elapsed < 20*time.Second || elapsed > 35*time.Second {
				t.Errorf("fix took %s, want the 20s budget", elapsed)
			}
			assertPodUID(ctx, t, cfg, short, "web-0", uids[short])
			harness.ClaimsKept(ctx, t, cs, short, before[short])
			return ctx
		}).
		Assess("--wait=3m: completes once the controller resumes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			paused := pauseControllerManager(t)
			done := make(chan result, 1)
			start := time.Now()
			go func() { done <- stsdiagRun(t, cfg, "fix", "-n", long, "--yes", "--wait=3m", "-o", "json") }()
			time.Sleep(time.Until(paused.Add(pause)))
			// Premise, on the real controller: 40 s after the patch it is still unobserved.
			set, err := cs.AppsV1().StatefulSets(long).Get(ctx, "web", metav1.GetOptions{})
			resumeControllerManager(t)
			if err != nil || set.Generation != 2 || set.Status.ObservedGeneration != 1 {
				t.Fatalf("premise: generation %d observed %d, want 2 and 1 (%v)", set.Generation, set.Status.ObservedGeneration, err)
			}
			r := <-done
			elapsed := time.Since(start)
			t.Logf("fix --wait=3m took %s, kube-controller-manager paused for the first %s", elapsed.Round(100*time.Millisecond), pause)
			res := decodeFix(t, r)
			if r.code != 0 || res.Rollout != "complete" || len(res.Actions) != 2 || res.Actions[1].Result != apiv1.ResultDone || res.Actions[1].Pod != "web-0" {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			if elapsed < pause {
				t.Errorf("fix completed in %s, while the controller was paused", elapsed)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, long, "web")
			harness.ClaimsKept(ctx, t, cs, long, before[long])
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// pauseControllerManager pauses kube-controller-manager until resumeControllerManager or the
// end of the test, and returns when.
func pauseControllerManager(t *testing.T) time.Time {
	t.Helper()
	if err := local.PauseControllerManager(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.ResumeControllerManager() })
	return time.Now()
}

func resumeControllerManager(t *testing.T) {
	t.Helper()
	if err := local.ResumeControllerManager(); err != nil {
		t.Fatal(err)
	}
}
