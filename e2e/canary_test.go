package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/e2e/internal/harness"
	"github.com/stsdiag/stsdiag/e2e/internal/scenario"
)

// GoodImage2 is a second image the simulated registry serves: the canary's new template.
const goodImage2 = "registry.k8s.io/nginx-slim:0.28"

// stsdiag canary on the real controller (issue 25): a good template stepped 1, 50%, 100%; a bad
// one rolled back by itself (and left alone with --no-rollback); --image with a bad image; a
// concurrent partition edit that stops it; and watch driving the annotated good and bad cases
// unattended (canary_watch_test.go), and wait following a canary watch steps to its end
// (canary_watch_wait_test.go). One parallel test, its features at once: the suite's
// parallel slots (-parallel = GOMAXPROCS) see one ~50 s test, the 30 s premises overlapping.
func TestCanary(t *testing.T) {
	t.Parallel() // isolated namespaces; runs after the serial tests (TestWatch restarts kube-apiserver)
	testenv.TestInParallel(t, canaryGoodFeature(), canaryBadFeature(), canaryBadImageFeature(), canaryConcurrentEditFeature(),
		canaryWatchGoodFeature(), canaryWatchBadFeature(), canaryUnsteppedFeature(), canaryWatchWaitFeature())
}

// partitionLog records, from a watch of the StatefulSet (not from stsdiag's output), each
// partition value in the order the API server stored them, and the most pods the controller
// reported updated under each.
type partitionLog struct {
	mu         sync.Mutex
	partitions []int32
	maxUpdated map[int32]int32
	// reconciling lists the Reconciling condition's reasons while True, in order.
	reconciling []string
}

func (l *partitionLog) reconcilingReasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reconciling...)
}

func (l *partitionLog) values() ([]int32, map[int32]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[int32]int32{}
	for k, v := range l.maxUpdated {
		m[k] = v
	}
	return append([]int32(nil), l.partitions...), m
}

// recordPartitions watches the StatefulSet until ctx ends (re-watching from the last
// resourceVersion when the server closes the watch).
func recordPartitions(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) *partitionLog {
	t.Helper()
	l := &partitionLog{maxUpdated: map[int32]int32{}}
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record := func(s *appsv1.StatefulSet) {
		p := int32(0)
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			p = *ru.Partition
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if n := len(l.partitions); n == 0 || l.partitions[n-1] != p {
			l.partitions = append(l.partitions, p)
		}
		if s.Status.ObservedGeneration >= s.Generation && s.Status.UpdatedReplicas > l.maxUpdated[p] {
			l.maxUpdated[p] = s.Status.UpdatedReplicas
		}
		for _, c := range s.Status.Conditions {
			if c.Type == "Reconciling" && c.Status == "True" && (len(l.reconciling) == 0 || l.reconciling[len(l.reconciling)-1] != c.Reason) {
				l.reconciling = append(l.reconciling, c.Reason)
			}
		}
	}
	record(set)
	rv := set.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := cs.AppsV1().StatefulSets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if s, ok := ev.Object.(*appsv1.StatefulSet); ok {
					record(s)
					rv = s.ResourceVersion
				}
			}
			w.Stop()
		}
	}()
	return l
}

type canaryDocument struct {
	Kind string `json:"kind"`
	apiv1.CanaryResult
}

func decodeCanary(t *testing.T, r result) apiv1.CanaryResult {
	t.Helper()
	var doc canaryDocument
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Kind != "CanaryResult" {
		t.Fatalf("stdout is not a CanaryResult (%v):\n%s", err, r.stdout)
	}
	return doc.CanaryResult
}

// readySet creates a StatefulSet of replicas on GoodImage and waits until its rollout is complete.
func readySet(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, replicas int32, withClaims bool) {
	t.Helper()
	if err := scenario.Namespace(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	if withClaims {
		if err := scenario.Volumes(ctx, cs, ns, int(replicas)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, scenario.StatefulSet(ns, "web", scenario.GoodImage, replicas, withClaims), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitRolloutComplete(ctx, cs, ns, "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

type podState struct {
	UID      types.UID
	Restarts int32
	Revision string
	Ready    bool
}

// belowCanaryUnchanged fails when a pod below the canary (web-0..2 of the 4-replica set) is not
// the same object in the same state as before: UID, restarts, revision and readiness.
func belowCanaryUnchanged(before, now map[string]podState, verb string) error {
	for _, p := range []string{"web-0", "web-1", "web-2"} {
		if now[p] != before[p] {
			return fmt.Errorf("%s %s: %+v → %+v", p, verb, before[p], now[p])
		}
	}
	return nil
}

func podStates(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[string]podState {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		s := podState{UID: p.UID, Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey], Ready: harness.PodReady(&p)}
		for _, c := range p.Status.ContainerStatuses {
			s.Restarts += c.RestartCount
		}
		out[p.Name] = s
	}
	return out
}

func partitionOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) (*appsv1.StatefulSet, int32) {
	t.Helper()
	set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set, *set.Spec.UpdateStrategy.RollingUpdate.Partition
}

func canaryGoodFeature() features.Feature {
	const ns = "canary-good"
	return features.New("canary: a good template stepped 1, 50%, 100% (partitions 3, 2, 0), complete").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			readySet(ctx, t, clientset(t, cfg), ns, 4, false)
			return ctx
		}).
		Assess("exit 0, Complete; the watch saw partitions 0, 3, 2, 0 with 1, 2, 4 pods updated", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			log := recordPartitions(wctx, t, cs, ns, "web")
			// Consent first: with no terminal and no --yes nothing is written (exit 1);
			// --dry-run=server prints the plan, the API server accepts the first step's patch, and
			// nothing persists (exit 0). The partitions the watch records below prove no write.
			plan := []string{"canary", "web", "-n", ns, "--image", "web=" + goodImage2, "--steps", "1,50%,100%"}
			for _, c := range []struct {
				args []string
				code int
				want string
			}{
				{plan, 1, "no terminal to confirm on"},
				{append(slices.Clone(plan), "--dry-run=server"), 0, "The API server accepted the first step's patch (server-side dry run, nothing persisted)."},
			} {
				r := stsdiagRun(t, cfg, c.args...)
				out := r.stdout + r.stderr
				if r.code != c.code || !strings.Contains(out, c.want) || !strings.Contains(out, "step 50%: partition 2, 2 of 4 pods on the update revision") {
					t.Errorf("%v: exit %d, want %d, the plan and %q:\n%s", c.args[8:], r.code, c.code, c.want, out)
				}
			}
			start := time.Now()
			r := stsdiagRun(t, cfg, "canary", "web", "-n", ns, "--yes", "--image", "web="+goodImage2, "--steps", "1,50%,100%", "--hold", "5s", "-o", "json")
			t.Logf("canary (good) took %s", time.Since(start).Round(100*time.Millisecond))
			doc := decodeCanary(t, r)
			if r.code != 0 || doc.Result != apiv1.WaitComplete {
				t.Fatalf("exit %d result %s: %s", r.code, doc.Result, doc.Message)
			}
			wantSteps := []apiv1.CanaryStep{{Step: "1", Pods: 1, Partition: 3, Result: apiv1.StepPassed}, {Step: "50%", Pods: 2, Partition: 2, Result: apiv1.StepPassed}, {Step: "100%", Pods: 4, Partition: 0, Result: apiv1.StepPassed}}
			if !reflect.DeepEqual(doc.Steps, wantSteps) || doc.PartitionBefore != 0 {
				t.Errorf("steps %+v partitionBefore %d", doc.Steps, doc.PartitionBefore)
			}
			time.Sleep(time.Second) // the last status write reaches the watch
			partitions, updated := log.values()
			if !reflect.DeepEqual(partitions, []int32{0, 3, 2, 0}) {
				t.Errorf("partitions observed %v, want [0 3 2 0]", partitions)
			}
			// under partition 3 the controller never had more than web-3 on the new revision, under 2 never more than two
			if updated[3] != 1 || updated[2] != 2 || updated[0] != 4 {
				t.Errorf("most pods updated per partition %v, want 3:1 2:2 0:4", updated)
			}
			for _, want := range []string{"step 1: partition 3 and the new template", "step 1 passed", "step 50%: partition 2", "step 100%: partition 0"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			set, _ := partitionOf(ctx, t, cs, ns)
			if set.Spec.Template.Spec.Containers[0].Image != goodImage2 || set.Status.CurrentRevision != set.Status.UpdateRevision {
				t.Errorf("image %s, current %s, update %s", set.Spec.Template.Spec.Containers[0].Image, set.Status.CurrentRevision, set.Status.UpdateRevision)
			}
			harness.AllReadyOnUpdateRevision(ctx, t, cs, ns, "web")
			return ctx
		}).Feature()
}

func canaryBadFeature() features.Feature {
	const ns = "canary-bad"
	var good string
	var before map[string]podState
	var claims map[string]types.UID
	return features.New("canary: a bad template rolled back by itself, the three others untouched").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readySet(ctx, t, cs, ns, 4, true)
			claims = harness.MarkClaims(ctx, t, cs, ns)
			before = podStates(ctx, t, cs, ns)
			set, _ := partitionOf(ctx, t, cs, ns)
			good = set.Status.CurrentRevision
			// the partition held at 3 and the bad image, as a user stepping by hand would
			patch := fmt.Sprintf(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":3}},"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, scenario.BadImage)
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitObserved(ctx, cs, ns, "web"); err != nil {
				t.Fatal(err)
			}
			if err := scenario.WaitPodReason(ctx, cs, ns, "web-3", "ImagePullBackOff", 90*time.Second); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("premise: web-3 never Ready on the new revision for 30s, web-0..2 Ready on the old one", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			harness.HoldsFor(ctx, t, 30*time.Second, func(ctx context.Context) error {
				set, _ := partitionOf(ctx, t, cs, ns)
				now := podStates(ctx, t, cs, ns)
				if set.Status.CurrentRevision != good || set.Status.UpdateRevision == good || now["web-3"].Revision != set.Status.UpdateRevision || now["web-3"].Ready {
					return fmt.Errorf("moved: current %s update %s web-3 %+v", set.Status.CurrentRevision, set.Status.UpdateRevision, now["web-3"])
				}
				return belowCanaryUnchanged(before, now, "changed")
			})
			return ctx
		}).
		Assess("--no-rollback: exit 1 Stuck naming web-3, nothing changed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			stuckPod := podStates(ctx, t, cs, ns)["web-3"]
			r := stsdiagRun(t, cfg, "canary", "web", "-n", ns, "--yes", "--steps", "1,50%", "--hold", "5s", "--no-rollback", "-o", "json")
			doc := decodeCanary(t, r)
			if r.code != 1 || doc.Result != apiv1.WaitStuck || !strings.Contains(doc.Message, "step 1 failed: web-3 CurrentRevisionFailing") ||
				!strings.Contains(doc.Message, "--no-rollback: stopped, the partition stays 3") || len(doc.Actions) != 0 {
				t.Fatalf("exit %d result %s: %s", r.code, doc.Result, doc.Message)
			}
			set, partition := partitionOf(ctx, t, cs, ns)
			if partition != 3 || set.Spec.Template.Spec.Containers[0].Image != scenario.BadImage || podStates(ctx, t, cs, ns)["web-3"].UID != stuckPod.UID {
				t.Errorf("--no-rollback changed something: partition %d image %s", partition, set.Spec.Template.Spec.Containers[0].Image)
			}
			return ctx
		}).
		Assess("exit 1 RolledBack naming web-3; web-3 Ready on the old revision; web-0..2 and the PVCs the same objects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			start := time.Now()
			r := stsdiagRun(t, cfg, "canary", "web", "-n", ns, "--yes", "--steps", "1,50%", "--hold", "5s", "-o", "json")
			t.Logf("canary (bad) took %s", time.Since(start).Round(100*time.Millisecond))
			doc := decodeCanary(t, r)
			if r.code != 1 || doc.Result != apiv1.WaitRolledBack || !strings.Contains(doc.Message, "step 1 failed: web-3 CurrentRevisionFailing") {
				t.Fatalf("exit %d result %s: %s", r.code, doc.Result, doc.Message)
			}
			if len(doc.RolledBack) != 1 || doc.RolledBack[0].Revision != good || doc.PartitionBefore != 3 || doc.Steps[0].Result != apiv1.StepFailed || doc.Steps[1].Result != apiv1.StepPending {
				t.Errorf("rolledBack %+v partitionBefore %d steps %+v", doc.RolledBack, doc.PartitionBefore, doc.Steps)
			}
			var deleted []string
			for _, a := range doc.Actions {
				if a.Action == apiv1.DeletePod {
					deleted = append(deleted, a.Pod)
				}
			}
			if !reflect.DeepEqual(deleted, []string{"web-3"}) {
				t.Errorf("deleted %v, want [web-3]", deleted)
			}
			set, partition := partitionOf(ctx, t, cs, ns)
			if set.Spec.Template.Spec.Containers[0].Image != scenario.GoodImage || set.Status.UpdateRevision != good || set.Status.CurrentRevision != good || partition != 3 {
				t.Errorf("image %s update %s current %s partition %d; want %s, %s, 3", set.Spec.Template.Spec.Containers[0].Image, set.Status.UpdateRevision, set.Status.CurrentRevision, partition, scenario.GoodImage, good)
			}
			now := podStates(ctx, t, cs, ns)
			if w3 := now["web-3"]; !w3.Ready || w3.Revision != good || w3.UID == before["web-3"].UID {
				t.Errorf("web-3 %+v: want a new pod Ready on %s", w3, good)
			}
			if err := belowCanaryUnchanged(before, now, "was touched"); err != nil {
				t.Error(err)
			}
			harness.ClaimsKept(ctx, t, cs, ns, claims)
			return ctx
		}).Feature()
}

// canaryBadImageFeature: --image with a bad image, rolled back; the partition restored to its value
// before the canary (0) once nothing can move. The premise is proven during the canary's 35 s
// hold, from the test's own reads: the bad-revision web-3 is never Ready for 30 s.
func canaryBadImageFeature() features.Feature {
	const ns = "canary-bad-image"
	var before map[string]podState
	return features.New("canary --image with a bad image: rolled back, partition restored").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			readySet(ctx, t, cs, ns, 4, false)
			before = podStates(ctx, t, cs, ns)
			return ctx
		}).
		Assess("exit 1 RolledBack; partitions 0, 3, 0; the bad web-3 never Ready for 30s; web-0..2 untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			set, _ := partitionOf(ctx, t, cs, ns)
			good := set.Status.CurrentRevision
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			log := recordPartitions(wctx, t, cs, ns, "web")
			// the premise, read by the test every second: how long web-3 ran the new revision, never Ready
			var mu sync.Mutex
			var badSince, badLast time.Time
			badReady := false
			go func() {
				for wctx.Err() == nil {
					pod, err := cs.CoreV1().Pods(ns).Get(wctx, "web-3", metav1.GetOptions{})
					if err == nil && pod.Labels[appsv1.ControllerRevisionHashLabelKey] != good && pod.DeletionTimestamp == nil {
						mu.Lock()
						if badSince.IsZero() {
							badSince = time.Now()
						}
						badLast = time.Now()
						badReady = badReady || harness.PodReady(pod)
						mu.Unlock()
					}
					time.Sleep(time.Second)
				}
			}()
			r := stsdiagRun(t, cfg, "canary", "web", "-n", ns, "--yes", "--image", "web="+scenario.BadImage, "--steps", "1,50%", "--hold", "35s", "-o", "json")
			doc := decodeCanary(t, r)
			if r.code != 1 || doc.Result != apiv1.WaitRolledBack || !strings.Contains(doc.Message, "step 1 failed: web-3 CurrentRevisionFailing") ||
				!strings.Contains(doc.Message, "partition restored to 0") || doc.PartitionBefore != 0 {
				t.Fatalf("exit %d result %s: %s", r.code, doc.Result, doc.Message)
			}
			mu.Lock()
			stuckFor, ready := badLast.Sub(badSince), badReady
			mu.Unlock()
			if ready || stuckFor < 30*time.Second {
				t.Errorf("premise: web-3 on the new revision for %s, ready %v; want never Ready for 30s or more", stuckFor.Round(time.Second), ready)
			}
			time.Sleep(time.Second)
			if partitions, _ := log.values(); !reflect.DeepEqual(partitions, []int32{0, 3, 0}) {
				t.Errorf("partitions observed %v, want [0 3 0]", partitions)
			}
			set, partition := partitionOf(ctx, t, cs, ns)
			if partition != 0 || set.Spec.Template.Spec.Containers[0].Image != scenario.GoodImage || set.Status.UpdateRevision != good || set.Status.CurrentRevision != good {
				t.Errorf("partition %d image %s update %s current %s", partition, set.Spec.Template.Spec.Containers[0].Image, set.Status.UpdateRevision, set.Status.CurrentRevision)
			}
			now := podStates(ctx, t, cs, ns)
			if err := belowCanaryUnchanged(before, now, "was touched"); err != nil {
				t.Error(err)
			}
			if w3 := now["web-3"]; !w3.Ready || w3.Revision != good {
				t.Errorf("web-3 %+v: want Ready on %s", w3, good)
			}
			return ctx
		}).Feature()
}

func canaryConcurrentEditFeature() features.Feature {
	const ns = "canary-edit"
	return features.New("canary: someone else lowers the partition during a hold; canary stops, their value kept").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			readySet(ctx, t, clientset(t, cfg), ns, 4, false)
			return ctx
		}).
		Assess("exit 1 Stopped naming the change; partition 1 stays", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			cs := clientset(t, cfg)
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			log := recordPartitions(wctx, t, cs, ns, "web")
			done := make(chan result, 1)
			go func() {
				done <- stsdiagRun(t, cfg, "canary", "web", "-n", ns, "--yes", "--image", "web="+goodImage2, "--steps", "1,50%", "--hold", "2m", "-o", "json")
			}()
			// during step 1's hold: partition 3, web-3 Ready on the new revision
			err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				set, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil || set.Spec.UpdateStrategy.RollingUpdate == nil || set.Spec.UpdateStrategy.RollingUpdate.Partition == nil || *set.Spec.UpdateStrategy.RollingUpdate.Partition != 3 {
					return false, nil
				}
				s := podStates(ctx, t, cs, ns)["web-3"]
				return s.Ready && s.Revision == set.Status.UpdateRevision && set.Status.UpdateRevision != set.Status.CurrentRevision, nil
			})
			if err != nil {
				t.Fatalf("step 1 never held: %v", err)
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				t.Fatal("canary did not stop within a minute of the edit")
			}
			doc := decodeCanary(t, r)
			want := fmt.Sprintf("someone else changed the partition of statefulset %s/web from 3 to 1", ns)
			if r.code != 1 || doc.Result != apiv1.CanaryStopped || !strings.Contains(doc.Message, want) || !strings.Contains(doc.Message, "nothing overwritten") {
				t.Fatalf("exit %d result %s: %s", r.code, doc.Result, doc.Message)
			}
			time.Sleep(2 * time.Second)
			if _, partition := partitionOf(ctx, t, cs, ns); partition != 1 {
				t.Errorf("partition %d, want the other writer's 1", partition)
			}
			if partitions, _ := log.values(); !reflect.DeepEqual(partitions, []int32{0, 3, 1}) {
				t.Errorf("partitions observed %v, want [0 3 1]", partitions)
			}
			return ctx
		}).Feature()
}
