package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
)

// canaryUnsteppedFeature: a canary declared by annotation, its partition parked at spec.replicas
// (as watch leaves it between rollouts), then a template change while no watch runs. The real
// controller moves no pod (it updates only ordinals at or above the partition); check must not say
// Complete: RolloutBlocked, reason CanaryNotStarted, once the new revision is a minute old.
func canaryUnsteppedFeature() features.Feature {
	const ns = "canary-unstepped"
	var before map[string]podState
	var changed time.Time
	return features.New("a declared canary nobody steps").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readySet(ctx, t, cs, ns, 2, false)
			park := fmt.Sprintf(`{"metadata":{"annotations":{%q:"1,50%%"}},"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}`, apiv1.AnnotationCanarySteps)
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(park), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			before = podStates(ctx, t, cs, ns)
			image := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, goodImage2)
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(image), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			changed = time.Now()
			return ctx
		}).
		Assess("premise: the controller saw the new revision and moves no pod (30s)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				return err == nil && set.Status.ObservedGeneration >= set.Generation && set.Status.UpdateRevision != set.Status.CurrentRevision, nil
			}); err != nil {
				t.Fatalf("the controller never observed the new template: %v", err)
			}
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				st := set.Status
				if st.ObservedGeneration < set.Generation || st.UpdateRevision == st.CurrentRevision || st.UpdatedReplicas != 0 {
					return fmt.Errorf("not the premise: generation %d observed %d, current %s update %s, updated %d",
						set.Generation, st.ObservedGeneration, st.CurrentRevision, st.UpdateRevision, st.UpdatedReplicas)
				}
				return belowCanaryUnchanged(before, podStates(ctx, t, cs, ns), "changed")
			})
			return ctx
		}).
		Assess("check: RolloutBlocked CanaryNotStarted once the revision is a minute old", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if left := time.Until(changed.Add(70 * time.Second)); left > 0 {
				time.Sleep(left)
			}
			r := stsdiagRun(t, cfg, "check", "--openshift", "never", "-n", ns, "-o", "json")
			rep := decodeReport(t, r)
			f := harness.FindingOf(rep, apiv1.RolloutBlocked, "")
			if r.code != 1 || f == nil || f.Reason != "CanaryNotStarted" || len(harness.Errors(rep)) != 1 {
				t.Fatalf("exit %d findings %v:\n%s", r.code, harness.Codes(rep), r.stdout)
			}
			if d := harness.Details(*f); d["waitingFor"] != "CanaryStep" {
				t.Errorf("details %v", d)
			}
			if len(rep.StatefulSets) != 1 || rep.StatefulSets[0].Status != apiv1.StatusStuck {
				t.Errorf("statefulSets %+v, want web Stuck", rep.StatefulSets)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			_ = clientset(t, cfg).CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			return ctx
		}).Feature()
}
