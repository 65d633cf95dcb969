package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// fleetFeature: check --contexts over two contexts of the local cluster (two "clusters", each
// with its own default namespace) and an unreachable one gives one report naming each context.
// It runs in TestReliability's parallel group.
func fleetFeature() features.Feature {
	return features.New("check --contexts").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			for _, ns := range []string{"fleet-east", "fleet-west"} {
				if err := scenario.Namespace(ctx, cs, ns); err != nil {
					t.Fatal(err)
				}
			}
			if err := scenario.StuckRollout(ctx, cs, "fleet-east", "web", 1); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.AppsV1().StatefulSets("fleet-west").Create(ctx, scenario.StatefulSet("fleet-west", "db", scenario.GoodImage, 1, false), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitRolloutComplete(ctx, cs, "fleet-west", "db", time.Minute); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: web-0 in fleet-east stays on the old revision for 30s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.ProvenStuck(ctx, t, clientset(t, cfg), "fleet-east", "web", 30*time.Second)
			return ctx
		}).
		Assess("one report, each finding with its context; an unreachable context is a warning, exit 2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			raw, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
			if err != nil {
				t.Fatal(err)
			}
			base := raw.Contexts[raw.CurrentContext]
			for name, ns := range map[string]string{"east": "fleet-east", "west": "fleet-west"} {
				c := *base
				c.Namespace = ns
				raw.Contexts[name] = &c
			}
			kubeconfig := filepath.Join(t.TempDir(), "fleet.kubeconfig")
			if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
				t.Fatal(err)
			}
			r := stsdiagRun(t, cfg, "check", "--kubeconfig", kubeconfig, "--contexts", "east,west", "-o", "json")
			rep := decodeReport(t, r)
			if r.code != 1 || len(rep.Findings) != 1 || rep.Findings[0].Context != "east" || rep.Findings[0].Code != apiv1.StaleRevisionStuck {
				t.Fatalf("exit %d findings %+v", r.code, rep.Findings)
			}
			if len(rep.StatefulSets) != 2 || rep.StatefulSets[0].Context != "east" || rep.StatefulSets[0].Status != apiv1.StatusStuck ||
				rep.StatefulSets[1].Context != "west" || rep.StatefulSets[1].Name != "db" || rep.StatefulSets[1].Status != apiv1.StatusComplete {
				t.Errorf("statefulSets %+v", rep.StatefulSets)
			}
			table := stsdiagRun(t, cfg, "check", "--kubeconfig", kubeconfig, "--contexts", "east,west")
			if !strings.Contains(table.stdout, "CONTEXT") || !strings.Contains(table.stdout, "east") {
				t.Errorf("table without the context column:\n%s", table.stdout)
			}

			w := stsdiagRun(t, cfg, "wait", "--kubeconfig", kubeconfig, "--contexts", "east,west", "-l", "app in (web,db)", "--stuck-grace", "3s", "--timeout", "90s", "-o", "json")
			if res := decodeWait(t, w); w.code != 1 || res.Result != apiv1.WaitStuck || len(res.Findings) != 1 || res.Findings[0].Context != "east" ||
				!strings.HasPrefix(res.Message, "east: Stuck:") {
				t.Errorf("wait --contexts: exit %d %+v", w.code, res)
			}

			// A third context whose server does not answer.
			raw.Clusters["gone"] = raw.Clusters[base.Cluster].DeepCopy()
			raw.Clusters["gone"].Server = "https://127.0.0.1:1"
			gone := *base
			gone.Cluster = "gone"
			raw.Contexts["gone"] = &gone
			if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
				t.Fatal(err)
			}
			r = stsdiagRun(t, cfg, "check", "--kubeconfig", kubeconfig, "--contexts", "east,west,gone", "-o", "json", "--request-timeout", "5s")
			rep = decodeReport(t, r)
			if r.code != 2 || len(rep.Findings) != 1 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "context gone:") {
				t.Errorf("exit %d findings %v warnings %v", r.code, harness.Codes(rep), rep.Warnings)
			}
			all := stsdiagRun(t, cfg, "check", "--kubeconfig", kubeconfig, "--all-contexts", "-o", "json", "--request-timeout", "5s")
			if rep := decodeReport(t, all); all.code != 2 || len(rep.Findings) != 1 {
				t.Errorf("--all-contexts: exit %d findings %v", all.code, harness.Codes(rep))
			}
			_ = os.Remove(kubeconfig)
			return ctx
		}).Feature()
}
