package fix_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/fix"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/rollout"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// stuckCluster: web-0 on the old revision in ImagePullBackOff under OrderedReady
// (kubernetes#67250): fix deletes it, and the rollout then still has to happen.
func stuckCluster() []runtime.Object {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 1, CurrentRevision: "web-a", UpdateRevision: "web-b"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "pod-uid",
			Labels:          map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "set-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app:typo"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}},
	}
	return []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, set, pod}
}

// TestFixWaitInterruptedIsNotATimeout: Ctrl-C while fix --wait follows the rollout is an
// interruption (context.Canceled), not "timed out" (rollout.ErrTimeout, exit 3), and the result
// does not say the rollout timed out.
func TestFixWaitInterruptedIsNotATimeout(t *testing.T) {
	kube := fake.NewClientset(stuckCluster()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := fix.Options{Wait: time.Minute}
	o.Clients = gather.Clients{Clients: read.Clients{Kube: kube}}
	o.Scope = gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}
	o.Diagnosis = stuck.DefaultOptions()
	o.DryRun = apiv1.DryRunNone
	o.Progress = func(model.Action) { cancel() } // the signal arrives once the pod is deleted
	res, err := fix.Run(ctx, o)
	if res == nil || len(res.Actions) != 1 || res.Actions[0].Result != apiv1.ResultDone {
		t.Fatalf("want the delete of web-0 done first: %+v %v", res, err)
	}
	if errors.Is(err, rollout.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v: want an interruption (context.Canceled), not a timeout", err)
	}
	if res.Rollout != "" {
		t.Errorf("rollout %q: an interrupted wait says nothing of the rollout", res.Rollout)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestNotConfirmedWording: when confirmation is impossible (no terminal) every planned action
// is skipped, saying so; testdata/golden/actions/NotConfirmed.txt locks the words, as the
// executor's outcomes are locked in internal/repair.
func TestNotConfirmedWording(t *testing.T) {
	kube := fake.NewClientset(stuckCluster()...)
	o := fix.Options{}
	o.Clients = gather.Clients{Clients: read.Clients{Kube: kube}}
	o.Scope = gather.Scope{Namespace: "shop", OpenShift: openshift.ModeNever}
	o.Diagnosis = stuck.DefaultOptions()
	o.DryRun = apiv1.DryRunNone
	o.Confirm = func(*model.FixResult) (bool, error) { return false, errors.New("no terminal to ask on") }
	res, err := fix.Run(context.Background(), o)
	if err != nil || res == nil || len(res.Actions) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	a := res.Actions[0]
	for _, req := range kube.Actions() {
		if v := req.GetVerb(); v != "get" && v != "list" && v != "watch" {
			t.Errorf("not confirmed, yet %s %s was sent", v, req.GetResource().Resource)
		}
	}
	text := fmt.Sprintf("# NotConfirmed: every action outcome of this reason the executor's tests reach, as worded.\n\n"+
		"== no terminal: %s %s/%s pod %s disruption %s\nresult: %s\nmessage: %s\nline: %s\n",
		a.Kind(), a.Namespace, a.StatefulSet, a.Pod, a.Disruption, a.Result, a.Message, explain.ActionLine(a))
	snapshottest.Golden(t, filepath.Join("actions", "NotConfirmed.txt"), []byte(text), *update)
}

// TestProofsReadTheRepairedSetsOnly: fix -A reads every namespace once, to plan; each proof
// before a delete reads only the namespace of the StatefulSet repaired (as watch's fallback
// proof does), not the whole cluster again.
func TestProofsReadTheRepairedSetsOnly(t *testing.T) {
	objs := append(stuckCluster(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "other"}})
	kube := fake.NewClientset(objs...)
	o := fix.Options{}
	o.Clients = gather.Clients{Clients: read.Clients{Kube: kube}}
	o.Scope = gather.Scope{OpenShift: openshift.ModeNever}
	o.Diagnosis = stuck.DefaultOptions()
	res, err := fix.Run(context.Background(), o)
	if err != nil || len(res.Actions) != 1 || res.Actions[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", res, err)
	}
	podLists := map[string]int{}
	for _, a := range kube.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			ns := a.GetNamespace()
			if ns == "" {
				ns = "(all)"
			}
			podLists[ns]++
		}
	}
	if fmt.Sprint(podLists) != "map[(all):1 shop:1]" {
		t.Errorf("pod LISTs by namespace %v, want one of all namespaces (the plan) and one of shop (the proof)", podLists)
	}
}
