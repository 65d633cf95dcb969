package canary_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/canary"
	"github.com/stsdiag/stsdiag/internal/canary/engine"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// The canary's verdicts on a fake cluster: web, 2 replicas, rolling out revision web-b over
// web-a. Nothing moves a pod unless the test plays the controller.

var long = metav1.NewTime(time.Now().Add(-time.Hour))

func webSet(partition int32, update string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:" + update}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2,
			CurrentRevision: "web-a", UpdateRevision: "web-" + update}}
}

func revision(name string, number int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "web-uid", Controller: ptr.To(true)}}},
		Revision: number,
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"app:` +
			strings.TrimPrefix(name, "web-") + `"}]}}}}`)}}
}

// pod is web-<ordinal> on a revision: Ready for an hour, or failing to pull its image.
func pod(ordinal, rev string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + ordinal, Namespace: "shop", UID: types.UID("uid-web-" + ordinal + "-" + rev), CreationTimestamp: long,
		Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev, appsv1.StatefulSetPodNameLabel: "web-" + ordinal},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "web-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:" + strings.TrimPrefix(rev, "web-")}}}}
	if ready {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &long,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: long},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: long}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: long}}}}}
		return p
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, StartTime: &long,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: long},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: long}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "app:b"`}}}}}
	return p
}

func cluster(set *appsv1.StatefulSet, pods ...*corev1.Pod) *fake.Clientset {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set, revision("web-a", 1), revision("web-b", 2)}
	for _, p := range pods {
		objs = append(objs, p)
	}
	kube := fake.NewClientset(objs...)
	// As the API server does, a write of the spec bumps the generation; the controller observes it
	// at once.
	react := k8stesting.ObjectReaction(kube.Tracker())
	for _, verb := range []string{"patch", "update"} {
		kube.PrependReactor(verb, "statefulsets", func(action k8stesting.Action) (bool, runtime.Object, error) {
			if action.GetSubresource() != "" {
				return false, nil, nil
			}
			handled, obj, err := react(action)
			if err != nil || !handled {
				return handled, obj, err
			}
			set := obj.(*appsv1.StatefulSet).DeepCopy()
			set.Generation++
			set.Status.ObservedGeneration = set.Generation
			set.Status.UpdateRevision = "web-" + strings.TrimPrefix(set.Spec.Template.Spec.Containers[0].Image, "app:")
			return true, set, kube.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("statefulsets"), set, set.Namespace)
		})
	}
	return kube
}

func options(steps string, hold time.Duration) canary.Options {
	parsed, err := engine.ParseSteps(steps)
	if err != nil {
		panic(err)
	}
	return canary.Options{Namespace: "shop", Name: "web", Steps: parsed, Hold: hold, Diagnosis: stuck.DefaultOptions()}
}

func partitionOf(t *testing.T, kube *fake.Clientset) int32 {
	t.Helper()
	set, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *set.Spec.UpdateStrategy.RollingUpdate.Partition
}

// TestNothingToRollOut: a StatefulSet whose update revision is its current one cannot be stepped:
// Unevaluable, with the error that says so (exit 2 in cmd).
func TestNothingToRollOut(t *testing.T) {
	set := webSet(2, "a")
	kube := cluster(set, pod("0", "web-a", true), pod("1", "web-a", true))
	res, err := canary.Run(context.Background(), gather.Clients{Clients: read.Clients{Kube: kube}}, options("1", 0))
	var bad *canary.BadInputError
	want := "statefulset shop/web has nothing to roll out: its update revision is its current revision (web-a); change the template with --image, or change it with the partition held at 1 or more first"
	if !errors.As(err, &bad) || res.Result != apiv1.WaitUnevaluable || res.Message != want {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
}

// TestStepTimesOut: the first step's partition is set and nothing moves: TimedOut, naming the
// step and the budget, the step Stopped.
func TestStepTimesOut(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	o := options("1", time.Hour)
	o.Timeout = 700 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if err != nil || res.Result != apiv1.WaitTimedOut || res.Message != "timed out after 700ms in step 1" {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if len(res.Steps) != 2 || res.Steps[0].Result != apiv1.StepStopped || res.Steps[1].Result != apiv1.StepPending || res.PartitionBefore != 2 {
		t.Errorf("steps %+v, partition before %d", res.Steps, res.PartitionBefore)
	}
	if p := partitionOf(t, kube); p != 1 {
		t.Errorf("partition %d, want the first step's 1", p)
	}
	if len(res.StatefulSets) != 1 || res.StatefulSets[0].Name != "web" {
		t.Errorf("statefulSets %+v", res.StatefulSets)
	}
}

// TestStepFailsNoRollback: the canary pod fails on the new revision; with --no-rollback the
// canary stops there: Stuck, the finding named, the partition left where the step set it.
func TestStepFailsNoRollback(t *testing.T) {
	set := webSet(1, "b")
	set.Status.UpdatedReplicas, set.Status.ReadyReplicas, set.Status.AvailableReplicas, set.Status.CurrentReplicas = 1, 1, 1, 1
	kube := cluster(set, pod("0", "web-a", true), pod("1", "web-b", false))
	o := options("1", 0)
	o.NoRollback = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	want := "step 1 failed: web-1 CurrentRevisionFailing (ImagePullBackOff) held for 0s; --no-rollback: stopped, the partition stays 1"
	if err != nil || res.Result != apiv1.WaitStuck || res.Message != want {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if len(res.Findings) == 0 || res.Findings[0].Code != apiv1.CurrentRevisionFailing || len(res.Actions) != 0 || res.Steps[0].Result != apiv1.StepFailed {
		t.Errorf("findings %+v actions %+v steps %+v", res.Findings, res.Actions, res.Steps)
	}
}

// TestSomeoneElseMovesThePartition: a partition changed during a step by someone else stops the
// canary: Stopped, naming the change, nothing overwritten.
func TestSomeoneElseMovesThePartition(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			set, err := kube.AppsV1().StatefulSets("shop").Get(ctx, "web", metav1.GetOptions{})
			if err == nil && *set.Spec.UpdateStrategy.RollingUpdate.Partition == 1 {
				time.Sleep(100 * time.Millisecond) // the canary follows the step by then
				set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0)
				_, _ = kube.AppsV1().StatefulSets("shop").Update(ctx, set, metav1.UpdateOptions{})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, options("1", time.Hour))
	want := "someone else changed the partition of statefulset shop/web from 1 to 0: the canary stops and leaves it as it is; nothing overwritten"
	if err != nil || res.Result != apiv1.CanaryStopped || res.Message != want {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if p := partitionOf(t, kube); p != 0 || res.Steps[0].Result != apiv1.StepStopped {
		t.Errorf("partition %d (theirs is 0), steps %+v", p, res.Steps)
	}
}

// TestEveryStepPasses: the test plays the controller (each partition's pods to web-b, Ready);
// each step holds healthy and the canary completes.
func TestEveryStepPasses(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go playController(ctx, kube, "web-b")
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, options("1", 0))
	if err != nil || res.Result != apiv1.WaitComplete || res.Message != "canary complete: every step passed; rollout complete" {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
	if len(res.Steps) != 2 || res.Steps[0].Result != apiv1.StepPassed || res.Steps[1].Result != apiv1.StepPassed {
		t.Errorf("steps %+v", res.Steps)
	}
}

// TestStepFailsRolledBack: web-b's pod never becomes Ready: the step fails, the template is
// rolled back to web-a, the canary pod deleted and Ready on web-a again, the partition restored.
func TestStepFailsRolledBack(t *testing.T) {
	kube := cluster(webSet(2, "b"), pod("0", "web-a", true), pod("1", "web-a", true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go playController(ctx, kube)
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, options("1", 500*time.Millisecond))
	want := "step 1 failed: web-1 CurrentRevisionFailing (ImagePullBackOff) held for 500ms; rolled back to revision web-a (revision web-b failed), web-1 Ready on it again; partition restored to 2"
	if err != nil || res.Result != apiv1.WaitRolledBack || res.Message != want {
		t.Fatalf("%s %q %v %+v", res.Result, res.Message, err, res.Actions)
	}
	if len(res.RolledBack) != 1 || res.RolledBack[0].Revision != "web-a" || len(res.Findings) == 0 || res.Findings[0].Code != apiv1.CurrentRevisionFailing ||
		len(res.Actions) != 2 || res.Actions[0].Kind() != apiv1.Rollback || res.Actions[1].Pod != "web-1" || res.Steps[0].Result != apiv1.StepFailed {
		t.Errorf("rolled back %+v findings %+v actions %+v steps %+v", res.RolledBack, res.Findings, res.Actions, res.Steps)
	}
	if p := partitionOf(t, kube); p != 2 {
		t.Errorf("partition %d, want 2 restored", p)
	}
}

// playController plays the StatefulSet controller: the pods at or above the partition that are
// Ready on another revision, or missing, are created on the update revision (Ready if it is one
// of healthy, else failing to pull its image; a failing pod is never replaced, kubernetes#67250),
// and the status says so.
func playController(ctx context.Context, kube *fake.Clientset, healthy ...string) {
	healthy = append(healthy, "web-a")
	for ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		set, err := kube.AppsV1().StatefulSets("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			continue
		}
		partition, update := *set.Spec.UpdateStrategy.RollingUpdate.Partition, set.Status.UpdateRevision
		var updated, ready int32
		for i, ordinal := range []string{"0", "1"} {
			p, err := kube.CoreV1().Pods("shop").Get(ctx, "web-"+ordinal, metav1.GetOptions{})
			isReady := err == nil && p.Status.Phase == corev1.PodRunning
			onUpdate := err == nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == update
			if int32(i) >= partition && (err != nil || (!onUpdate && isReady)) {
				if err == nil {
					_ = kube.CoreV1().Pods("shop").Delete(ctx, p.Name, metav1.DeleteOptions{})
				}
				isReady, onUpdate = slices.Contains(healthy, update), true
				_, _ = kube.CoreV1().Pods("shop").Create(ctx, pod(ordinal, update, isReady), metav1.CreateOptions{})
			}
			if onUpdate {
				updated++
			}
			if isReady {
				ready++
			}
		}
		current, currentReplicas := set.Status.CurrentRevision, 2-updated
		if updated == 2 {
			current, currentReplicas = update, 2
		}
		st := set.Status
		if st.UpdatedReplicas != updated || st.CurrentReplicas != currentReplicas || st.ReadyReplicas != ready || st.AvailableReplicas != ready || st.CurrentRevision != current {
			// A patch of the status alone: an update would write back the spec as read.
			body, _ := json.Marshal(map[string]any{"status": map[string]any{"updatedReplicas": updated, "currentReplicas": currentReplicas,
				"readyReplicas": ready, "availableReplicas": ready, "currentRevision": current}})
			_, _ = kube.AppsV1().StatefulSets("shop").Patch(ctx, "web", types.MergePatchType, body, metav1.PatchOptions{}, "status")
		}
	}
}

// TestTimeoutBeforeTheCachesSync: an API server that accepts and never answers keeps the
// informers from syncing until --timeout: the canary's verdict is TimedOut, not an error (exit 3,
// not 2).
func TestTimeoutBeforeTheCachesSync(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	o := options("1", time.Second)
	o.Timeout = 500 * time.Millisecond
	res, err := canary.Run(ctx, gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if err != nil || res.Result != apiv1.WaitTimedOut {
		t.Fatalf("%s %q %v", res.Result, res.Message, err)
	}
}

// TestApproveBeforeTheFirstWrite: the plan is shown once every check passed and before anything
// is written; refused, nothing is patched (canary's question, --dry-run).
func TestApproveBeforeTheFirstWrite(t *testing.T) {
	set := webSet(2, "a")
	kube := cluster(set, pod("0", "web-a", true), pod("1", "web-a", true))
	refused := errors.New("no")
	var shown canary.Plan
	o := options("1", 0)
	o.Images = map[string]string{"app": "app:b"}
	o.Approve = func(p canary.Plan) error { shown = p; return refused }
	_, err := canary.Run(context.Background(), gather.Clients{Clients: read.Clients{Kube: kube}}, o)
	if !errors.Is(err, refused) {
		t.Fatalf("err %v, want the refusal", err)
	}
	want := "Canary of statefulset shop/web (2 replicas, partition 2 now):\n" +
		"  image of container app: app:a → app:b (with the first step's partition, one patch)\n" +
		"  step 1: partition 1, 1 of 2 pods on the update revision\n" +
		"  step 100%: partition 0, 2 of 2 pods on the update revision\n"
	if shown.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", shown.String(), want)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "update" {
			t.Errorf("refused plan, yet %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if got := partitionOf(t, kube); got != 2 {
		t.Errorf("partition %d, want 2 (unchanged)", got)
	}
}
