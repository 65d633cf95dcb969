package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// canaryWatchWaitFeature: a CI gate (wait) right after the template change of a StatefulSet whose
// canary watch steps. At step 1 (partition 3 of 4, web-3 updated and Ready) the real controller's
// status, partition respected, is complete — what kubectl rollout status calls "partitioned roll
// out complete" — while the canary holds for 20 s before its next step: wait must keep waiting
// (TimedOut, exit 3, not Complete) and check calls the rollout Progressing; once watch has
// stepped to every replica, wait says Complete.
func canaryWatchWaitFeature() features.Feature {
	const ns = "canary-watch-wait"
	return features.New("wait: a canary watch steps is not Complete at a step's partition").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			annotatedSet(ctx, t, cfg, ns, "20s", false)
			if err := scenario.SetImage(ctx, clientset(t, cfg), ns, "web", goodImage2); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: at step 1 the controller's status, partition respected, says complete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			waitSet(ctx, t, clientset(t, cfg), ns, "web", 60*time.Second, "step 1 complete by the controller's status", func(s *appsv1.StatefulSet) bool {
				st := s.Status
				return partitionIs(3)(s) && st.ObservedGeneration >= s.Generation && st.UpdatedReplicas >= 1 && st.ReadyReplicas == 4 &&
					st.AvailableReplicas == 4 && st.CurrentRevision != st.UpdateRevision
			})
			return ctx
		}).
		Assess("wait keeps waiting at the step, check says Progressing; wait says Complete at the end", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			r := stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--openshift", "never", "--timeout", "8s", "-o", "json")
			if res := decodeWait(t, r); r.code != 3 || res.Result != apiv1.WaitTimedOut {
				t.Errorf("wait at step 1: exit %d, %s (%s); want exit 3, TimedOut", r.code, res.Result, res.Message)
			}
			rep := decodeReport(t, stsdiagRun(t, cfg, "check", "-n", ns, "--openshift", "never", "-o", "json"))
			if len(rep.StatefulSets) != 1 || rep.StatefulSets[0].Status != apiv1.StatusProgressing || len(rep.Findings) != 0 {
				t.Errorf("check at step 1: %+v, findings %+v; want web Progressing, no finding", rep.StatefulSets, rep.Findings)
			}
			// Both answers were given at the step, not after it: the partition is still 3.
			if set, p := partitionOf(ctx, t, cs, ns); p != 3 || set.Status.CurrentRevision == set.Status.UpdateRevision {
				t.Fatalf("the canary moved on during the step's checks (partition %d): the premise did not hold while they ran", p)
			}
			r = stsdiagRun(t, cfg, "wait", "web", "-n", ns, "--openshift", "never", "--timeout", "2m", "-o", "json")
			if res := decodeWait(t, r); r.code != 0 || res.Result != apiv1.WaitComplete {
				t.Fatalf("wait to the end: exit %d, %s (%s); want exit 0, Complete", r.code, res.Result, res.Message)
			}
			set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if st := set.Status; st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != 4 {
				t.Errorf("Complete while the canary was not at every replica: current %s update %s, updated %d", st.CurrentRevision, st.UpdateRevision, st.UpdatedReplicas)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			_ = clientset(t, cfg).CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			return ctx
		}).Feature()
}
