package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/cluster"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// parallelStalls says, per release the suite runs on, whether a Parallel StatefulSet whose pods
// all fail on an old revision stalls after the template fix (kubernetes#137409): only where
// MaxUnavailableStatefulSet is on by default without 1.37's two-phase fix (v1.35.0-v1.35.3).
// Written from the upstream sources (kube_features.go and stateful_set_control.go of each tag),
// not from stsdiag's model.
var parallelStalls = map[string]bool{"v1.33.13": false, "v1.35.3": true, "v1.35.4": false, "v1.36.3": false, "v1.37.2": false}

// TestControllerVersion: the verdict on a Parallel set follows the release of the real
// controller it runs against (run the suite with K8S_VERSION=v1.35.3 and v1.33.13 too:
// make e2e-versions).
func TestControllerVersion(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	const ns, name = "parallel-version", "web"
	stalls, known := parallelStalls[cluster.KubernetesVersion]
	if !known {
		t.Skipf("no expectation written for %s", cluster.KubernetesVersion)
	}
	f := features.New("Parallel set failing on an old revision, on "+cluster.KubernetesVersion).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := scenario.Namespace(ctx, cs, ns); err != nil {
				t.Fatal(err)
			}
			set := scenario.StatefulSet(ns, name, scenario.BadImage, 2, false)
			set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, pod := range []string{"web-0", "web-1"} {
				if err := scenario.WaitPodReason(ctx, cs, ns, pod, "ImagePullBackOff", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			if err := scenario.SetImage(ctx, cs, ns, name, scenario.GoodImage); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, name); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise on the real controller", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if !stalls {
				if err := scenario.WaitRolloutComplete(ctx, cs, ns, name, 90*time.Second); err != nil {
					t.Fatalf("%s should replace the old pods by itself: %v", cluster.KubernetesVersion, err)
				}
				return ctx
			}
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if set.Status.UpdatedReplicas != 0 || set.Status.ReadyReplicas != 0 {
					return fmt.Errorf("the rollout moved: %d updated, %d ready", set.Status.UpdatedReplicas, set.Status.ReadyReplicas)
				}
				return nil
			})
			return ctx
		}).
		Assess("check follows the controller's release", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			if rep.Server == nil || rep.Server.Version != cluster.KubernetesVersion {
				t.Errorf("server %+v, want version %s", rep.Server, cluster.KubernetesVersion)
			}
			if !stalls {
				if r.code != 0 || len(rep.Findings) != 0 {
					t.Fatalf("the controller recovered the set: exit %d findings %v", r.code, harness.Codes(rep))
				}
				return ctx
			}
			if r.code != 1 || len(rep.Findings) != 2 {
				t.Fatalf("exit %d findings %v", r.code, harness.Codes(rep))
			}
			for _, f := range rep.Findings {
				if f.Code != apiv1.StaleRevisionStuck || !strings.Contains(f.Message, "Kubernetes v1.35.3 with MaxUnavailableStatefulSet on") ||
					!strings.Contains(f.Message, "kubernetes#137409") {
					t.Errorf("finding %+v", f)
				}
			}
			if !rep.Server.AssumedFeatureGates["MaxUnavailableStatefulSet"] {
				t.Errorf("assumed gates %v", rep.Server.AssumedFeatureGates)
			}
			off := stsdiagRun(t, cfg, "check", "-n", ns, "-o", "json", "--feature-gates", "MaxUnavailableStatefulSet=false")
			if rep := decodeReport(t, off); off.code != 0 || len(rep.Findings) != 0 || rep.Server.AssumedFeatureGates["MaxUnavailableStatefulSet"] {
				t.Errorf("with the gate said off: exit %d findings %v", off.code, harness.Codes(rep))
			}
			return ctx
		}).
		Assess("fix repairs the stalled set", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !stalls {
				return ctx
			}
			r := stsdiagRun(t, cfg, "fix", "-n", ns, "--yes", "--wait=90s", "-o", "json")
			if res := decodeFix(t, r); r.code != 0 || len(res.Actions) != 2 || res.Rollout != "complete" {
				t.Fatalf("exit %d %+v", r.code, res)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, clientset(t, cfg), ns, name)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
