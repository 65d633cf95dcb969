package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// TestReliability: wait and watch under time-based rules, partial permissions and a lost leader.
func TestReliability(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, unschedulableWaitFeature(), noEventsPermissionFeature(), twoLeadersFeature(), fleetFeature())
}

// unschedulableWaitFeature: a pod that can never be scheduled becomes a finding only after the
// 10 s settle time, and nothing else changes then: wait must wake up by itself.
func unschedulableWaitFeature() features.Feature {
	const ns = "wait-unschedulable"
	var created time.Time
	var res result
	var took time.Duration
	return features.New("wait on an unschedulable pod started right after the rollout").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 1, false)
			set.Spec.Template.Spec.NodeSelector = map[string]string{"disktype": "nvme"}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			created = time.Now()
			start := time.Now()
			res = stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--stuck-grace", "5s", "--timeout", "2m", "-o", "json")
			took = time.Since(start)
			return ctx
		}).
		Assess("premise: web-0 stays unschedulable for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			time.Sleep(time.Until(created.Add(time.Second)))
			harness.HoldsFor(ctx, t, time.Until(created.Add(30*time.Second)), func(ctx context.Context) error {
				pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if pod.Spec.NodeName != "" {
					return fmt.Errorf("web-0 was scheduled to %s", pod.Spec.NodeName)
				}
				return nil
			})
			return ctx
		}).
		Assess("wait exits 1 with PodUnschedulable within settle + grace + 10s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := decodeWait(t, res)
			if res.code != 1 || w.Result != apiv1.WaitStuck || len(w.Findings) != 1 || w.Findings[0].Code != apiv1.PodUnschedulable {
				t.Fatalf("exit %d %+v", res.code, w)
			}
			if took > 25*time.Second {
				t.Errorf("wait took %s, want ≤ 10s settle + 5s grace + 10s", took.Round(100*time.Millisecond))
			}
			t.Logf("wait on an unschedulable pod: exit 1 after %s", took.Round(100*time.Millisecond))
			return ctx
		}).Feature()
}

// noEventsPermissionFeature: a CI ServiceAccount that may not list events (nor StorageClasses)
// still gets its verdict, with one warning, long before --timeout.
func noEventsPermissionFeature() features.Feature {
	const ns = "wait-no-events"
	return features.New("wait without permission to list events").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 1); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: web-0 stays on the old revision for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.ProvenStuck(ctx, t, clientset(t, cfg), ns, "web", 30*time.Second)
			return ctx
		}).
		Assess("one warning, the verdict, no hang", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			rules := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"namespaces", "pods", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"apps"}, Resources: []string{"statefulsets", "controllerrevisions"}, Verbs: []string{"get", "list", "watch"}},
			}
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "no-events", rules)
			start := time.Now()
			r := stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--openshift", "never", "--stuck-grace", "3s", "--timeout", "90s", "--kubeconfig", kubeconfig)
			took := time.Since(start)
			if r.code != 1 || !strings.Contains(r.stdout, "StaleRevisionStuck") || strings.Count(r.stderr, "Warning: ") != 1 ||
				!strings.Contains(r.stderr, "Warning: findings carry no pod events") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			if took > 20*time.Second {
				t.Errorf("took %s", took)
			}
			return ctx
		}).Feature()
}

// twoLeadersFeature: two watch --leader-elect replicas; one leads, and when it is killed (no
// chance to release the Lease) the other takes over within the Lease duration (15 s).
func twoLeadersFeature() features.Feature {
	const ns = "watch-leaders"
	return features.New("two watch --leader-elect replicas").
		Assess("one leads; killed, the other takes over within the Lease duration", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			args := []string{"-n", ns, "--leader-elect", "--leader-elect-namespace", ns}
			a := startWatch(t, cfg.KubeconfigFile(), args...)
			b := startWatch(t, cfg.KubeconfigFile(), args...)
			leader := func() string {
				lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "stsdiag-watch", metav1.GetOptions{})
				if err != nil || lease.Spec.HolderIdentity == nil {
					return ""
				}
				return *lease.Spec.HolderIdentity
			}
			var first string
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				first = leader()
				return first != "", nil
			}); err != nil {
				t.Fatal("nobody took the Lease")
			}
			leading, standby := a, b
			if !strings.HasSuffix(first, fmt.Sprintf("_%d", a.cmd.Process.Pid)) {
				leading, standby = b, a
			}
			time.Sleep(3 * time.Second)
			if n := strings.Count(a.log.String()+b.log.String(), " leads (Lease"); n != 1 {
				t.Fatalf("%d replicas lead", n)
			}
			killed := time.Now()
			if err := leading.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 40*time.Second, true, func(context.Context) (bool, error) {
				h := leader()
				return h != "" && h != first, nil
			}); err != nil {
				t.Fatalf("the standby never took over:\n%s", standby.log.String())
			}
			took := time.Since(killed)
			// The standby may take the Lease once it has seen no renewal for the Lease duration
			// (15 s, counted from its own last observation, up to one 2 s retry late), then on its
			// next 2 s retry; a loaded 2-core machine adds seconds of latency.
			if took > 25*time.Second {
				t.Errorf("takeover took %s, want within the 15s Lease duration plus two 2s retries and load latency", took.Round(100*time.Millisecond))
			}
			t.Logf("leader killed → standby leads after %s", took.Round(100*time.Millisecond))
			_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			return ctx
		}).Feature()
}
