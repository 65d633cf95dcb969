package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// watch drives the canary declared by annotations, unattended (issue 25; run by TestCanary): the
// good template stepped 3, 2, 0 across a restart of watch; the bad one rolled back by itself.

// annotatedSet creates a 4-replica StatefulSet on GoodImage with a canary declared, waits for its
// rollout, starts watch on the namespace (with deploy/watch-fix's permissions) and waits until
// watch parked the partition at 4.
func annotatedSet(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, hold string, withClaims bool) (*watchProcess, *partitionLog) {
	t.Helper()
	cs := clientset(t, cfg)
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if withClaims {
		if err := scenario.Volumes(ctx, cs, ns, 4); err != nil {
			t.Fatal(err)
		}
	}
	set := scenario.StatefulSet(ns, "web", scenario.GoodImage, 4, withClaims)
	set.Annotations = map[string]string{"stsdiag.io/canary-steps": "1,50%", "stsdiag.io/canary-hold": hold}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	log := recordPartitions(ctx, t, cs, ns, "web")
	// as the ServiceAccount of deploy/watch-fix, with exactly its permissions
	w := startWatch(t, applyDeployRBAC(ctx, t, cfg), "-n", ns, "--hold", "5s")
	waitSet(ctx, t, cs, ns, "web", 20*time.Second, "parked at partition 4", partitionIs(4))
	return w, log
}

func partitionIs(p int32) func(*appsv1.StatefulSet) bool {
	return func(s *appsv1.StatefulSet) bool {
		ru := s.Spec.UpdateStrategy.RollingUpdate
		return ru != nil && ru.Partition != nil && *ru.Partition == p
	}
}

// settledOn: the rollout is complete on the revision with the given image and watch parked the
// partition again.
func settledOn(image string) func(*appsv1.StatefulSet) bool {
	return func(s *appsv1.StatefulSet) bool {
		return partitionIs(4)(s) && s.Spec.Template.Spec.Containers[0].Image == image && s.Status.ObservedGeneration >= s.Generation &&
			s.Status.CurrentRevision == s.Status.UpdateRevision && s.Status.ReadyReplicas == 4 && s.Status.UpdatedReplicas == 4
	}
}

func eventReasons(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, e := range stsdiagEvents(ctx, t, cs, ns, "web") {
		out[e.Reason] += max(e.Count, 1)
	}
	return out
}

func canaryWatchGoodFeature() features.Feature {
	const ns = "canary-watch-good"
	var w *watchProcess
	var log *partitionLog
	return features.New("watch: a declared canary steps a good template 3, 2, 0 unattended, across a restart").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, log = annotatedSet(ctx, t, cfg, ns, "5s", false)
			return ctx
		}).
		Assess("partitions 0, 4, 3, 2, 0, 4 from a watch of the set; Events, metric, Reconciling while it ran", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			start := time.Now()
			if err := scenario.SetImage(ctx, cs, ns, "web", goodImage2); err != nil {
				t.Fatal(err)
			}
			// watch restarted mid-canary: the partition is the state, the new process resumes
			waitSet(ctx, t, cs, ns, "web", 30*time.Second, "at step 1 (partition 3)", partitionIs(3))
			_ = w.cmd.Process.Kill()
			<-w.done
			w = startWatch(t, applyDeployRBAC(ctx, t, cfg), "-n", ns, "--hold", "5s")
			waitSet(ctx, t, cs, ns, "web", 90*time.Second, "complete on the new image and parked", settledOn(goodImage2))
			t.Logf("watch canary (good) took %s", time.Since(start).Round(100*time.Millisecond))
			time.Sleep(time.Second)
			partitions, updated := log.values()
			if !reflect.DeepEqual(partitions, []int32{0, 4, 3, 2, 0, 4}) {
				t.Errorf("partitions observed %v, want [0 4 3 2 0 4] (parked, the steps, parked)", partitions)
			}
			if updated[3] != 1 || updated[2] != 2 {
				t.Errorf("most pods updated per partition %v, want 3:1 2:2", updated)
			}
			if reasons := log.reconcilingReasons(); len(reasons) == 0 || reasons[0] != "CanaryStep" {
				t.Errorf("Reconciling=True reasons while it ran: %v, want CanaryStep", reasons)
			}
			set, _ := partitionOf(ctx, t, cs, ns)
			for _, c := range set.Status.Conditions {
				if c.Type == "Reconciling" && (c.Status != "False" || c.Reason != "CanaryIdle") {
					t.Errorf("Reconciling at the end: %+v", c)
				}
			}
			if kstatus := kstatusOf(t, set); kstatus.Status != "Current" {
				t.Errorf("kstatus at the end: %s %s", kstatus.Status, kstatus.Message)
			}
			if ev := eventReasons(ctx, t, cs, ns); ev["CanaryStep"] != 3 || ev["CanaryParked"] < 1 {
				t.Errorf("events %v, want 3 CanaryStep and a CanaryParked", ev)
			}
			// the restarted process made steps 50% and 100%
			if n := w.metric(t, "stsdiag_canary_steps_total", map[string]string{"result": "advanced", "namespace": ns}); n != 2 {
				t.Errorf("stsdiag_canary_steps_total{advanced} = %v, want 2 (after the restart)", n)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
			return ctx
		}).Feature()
}

func canaryWatchBadFeature() features.Feature {
	const ns = "canary-watch-bad"
	var w *watchProcess
	var before map[string]podState
	var claims map[string]types.UID
	var good string
	return features.New("watch: a declared canary rolls a bad template back unattended").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// a 40s hold: the premise (web-3 stuck for 30s) is proven before watch may act
			w, _ = annotatedSet(ctx, t, cfg, ns, "40s", true)
			cs := clientset(t, cfg)
			claims = harness.MarkClaims(ctx, t, cs, ns)
			before = podStates(ctx, t, cs, ns)
			set, _ := partitionOf(ctx, t, cs, ns)
			good = set.Status.CurrentRevision
			if err := scenario.SetImage(ctx, cs, ns, "web", scenario.BadImage); err != nil {
				t.Fatal(err)
			}
			waitSet(ctx, t, cs, ns, "web", 30*time.Second, "at step 1 (partition 3)", partitionIs(3))
			if err := scenario.WaitPodReason(ctx, cs, ns, "web-3", "ImagePullBackOff", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: web-3 never Ready on the new revision for 30s, web-0..2 untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, partition := partitionOf(ctx, t, cs, ns)
				now := podStates(ctx, t, cs, ns)
				if partition != 3 || set.Status.UpdateRevision == good || now["web-3"].Revision != set.Status.UpdateRevision || now["web-3"].Ready {
					return fmt.Errorf("moved: partition %d update %s web-3 %+v", partition, set.Status.UpdateRevision, now["web-3"])
				}
				return belowCanaryUnchanged(before, now, "changed")
			})
			return ctx
		}).
		Assess("rolled back: web-3 Ready on the old revision, web-0..2 and the PVCs the same objects, Event and metric", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			start := time.Now()
			waitSet(ctx, t, cs, ns, "web", 90*time.Second, "rolled back and parked", settledOn(scenario.GoodImage))
			t.Logf("watch rollback done %s after the premise", time.Since(start).Round(100*time.Millisecond))
			set, _ := partitionOf(ctx, t, cs, ns)
			if set.Status.UpdateRevision != good {
				t.Errorf("update revision %s, want the old %s", set.Status.UpdateRevision, good)
			}
			now := podStates(ctx, t, cs, ns)
			if w3 := now["web-3"]; !w3.Ready || w3.Revision != good || w3.UID == before["web-3"].UID {
				t.Errorf("web-3 %+v: want a new pod Ready on %s", w3, good)
			}
			if err := belowCanaryUnchanged(before, now, "was touched"); err != nil {
				t.Error(err)
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			if ev := eventReasons(ctx, t, cs, ns); ev["CanaryRolledBack"] != 1 || ev["CanaryStep"] != 1 {
				t.Errorf("events %v, want 1 CanaryStep and 1 CanaryRolledBack", ev)
			}
			if n := w.metric(t, "stsdiag_canary_steps_total", map[string]string{"result": "rolledback", "namespace": ns}); n != 1 {
				t.Errorf("stsdiag_canary_steps_total{rolledback} = %v, want 1", n)
			}
			return ctx
		}).Feature()
}
