package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

type fixResult struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	DryRun     string         `json:"dryRun"`
	Actions    []apiv1.Action `json:"actions"`
	Rollout    string         `json:"rollout"`
}

func decodeFix(t *testing.T, r result) fixResult {
	t.Helper()
	var res fixResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Kind != "FixResult" || res.APIVersion != "stsdiag/v1" {
		t.Fatalf("stdout is not a FixResult (%v):\n%s", err, r.stdout)
	}
	return res
}

// TestFixStuckRollout: kubernetes#67250 repaired end to end, PVCs untouched, RBAC as shipped.
func TestFixStuckRollout(t *testing.T) {
	const ns = "fix-stuck"
	var before map[string]types.UID
	var stuckUID types.UID
	f := features.New("fix kubernetes#67250").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if err := scenario.StuckRollout(ctx, cs, ns, "web", 3); err != nil {
				t.Fatal(err)
			}
			before = harness.MarkClaims(ctx, t, cs, ns)
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stuckUID = pod.UID
			return ctx
		}).
		Assess("no terminal and no --yes: plan only, exit 1, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns)
			if r.code != 1 || !strings.Contains(r.stdout, "delete pod/web-0 -n "+ns) || !strings.Contains(r.stdout, "--yes") {
				t.Fatalf("exit %d\n%s", r.code, r.stdout)
			}
			assertPodUID(ctx, t, cfg, ns, "web-0", stuckUID)
			return ctx
		}).
		Assess("--dry-run=server: exit 0, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--dry-run=server", "-o", "json")
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Actions[0].Result != apiv1.ResultDone || res.DryRun != "server" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			assertPodUID(ctx, t, cfg, ns, "web-0", stuckUID)
			return ctx
		}).
		Assess("read-only user: forbidden line, exit 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "fix-reader", loadRole(t, "../deploy/check-clusterrole.yaml").Rules)
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--kubeconfig", kubeconfig)
			if r.code != 1 || !strings.Contains(r.stdout, "forbidden: needs delete pods") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			assertPodUID(ctx, t, cfg, ns, "web-0", stuckUID)
			return ctx
		}).
		Assess("fix --yes --wait as the shipped fix role: all Ready, PVCs kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := tokenKubeconfig(ctx, t, cfg, ns, "fixer", loadRole(t, "../deploy/fix-clusterrole.yaml").Rules)
			start := time.Now()
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--wait=2m", "-o", "json", "--kubeconfig", kubeconfig)
			res := decodeFix(t, r)
			if r.code != 0 || len(res.Actions) != 1 || res.Actions[0].Result != apiv1.ResultDone || res.Actions[0].UID != string(stuckUID) || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v\n%s", r.code, res, r.stderr)
			}
			if !strings.Contains(r.stderr, "rollout complete") {
				t.Errorf("no rollout progress lines on stderr: %s", r.stderr)
			}
			t.Logf("fix --yes --wait took %s", time.Since(start).Round(100*time.Millisecond))
			cs := clientset(t, cfg)
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
			harness.ClaimsKept(ctx, t, cs, ns, before)
			if after := harness.Claims(ctx, t, cs, ns); len(after) != 3 {
				t.Errorf("claims %v, want 3 (web-1 and web-2 created theirs)", after)
			}
			check := stsdiagRun(t, cfg, "check", "-n", ns)
			if check.code != 0 {
				t.Errorf("check after fix: exit %d", check.code)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func assertPodUID(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name string, uid types.UID) {
	t.Helper()
	pod, err := clientset(t, cfg).CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || pod.UID != uid || pod.DeletionTimestamp != nil {
		t.Fatalf("pod %s changed: %v", name, err)
	}
}

func loadRole(t *testing.T, path string) rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	return role
}

// TestFixWaitTimeout: the stuck pod is replaced, but the new template is broken too: --wait
// gives up at its deadline with exit 3.
func TestFixWaitTimeout(t *testing.T) {
	const ns = "fix-timeout"
	f := features.New("fix --wait timeout").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", scenario.BadImage, 1, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitPodReason(ctx, cs, ns, "web-0", "ImagePullBackOff", time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := scenario.SetImage(ctx, cs, ns, "web", "nginx:another-typo"); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("exit 3 when the rollout does not complete in time", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--wait=6s")
			if r.code != 3 || !strings.Contains(r.stderr, "timed out") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if elapsed := time.Since(start); elapsed > 20*time.Second {
				t.Errorf("took %s for a 6s wait", elapsed)
			}
			check := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			if rep := decodeReport(t, check); len(rep.Findings) != 1 || rep.Findings[0].Code != "CurrentRevisionFailing" {
				t.Errorf("after the fix the new template's failure is what remains: %v", harness.Codes(rep))
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
