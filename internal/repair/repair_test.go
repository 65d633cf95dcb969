package repair_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/stuck"
)

const digestImage = "image-registry.openshift-image-registry.svc:5000/shop/myapp@sha256:0000000000000000000000000000000000000000000000000000000000000000"

func objects() []runtime.Object {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "set-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "myapp:1"}}}}}}
	set.Status.ObservedGeneration = 2
	pods := []runtime.Object{set}
	for _, name := range []string{"web-0", "web-1"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "5"}})
	}
	return append(pods, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-0", Namespace: "shop"}})
}

func stuckReport(pods ...string) *model.Report {
	var findings []stuck.Finding
	for _, pod := range pods {
		findings = append(findings, stuck.Finding{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: pod}, Target: &stuck.PodRef{Name: pod, UID: types.UID("uid-" + pod)}})
	}
	return model.NewReport(false, nil, findings)
}

func unresolvedReport(from string) *model.Report {
	return model.NewReport(true, nil, []stuck.Finding{
		{Finding: apiv1.Finding{Code: apiv1.UnresolvedImageReference, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Container: "app", Image: from, ResolvedImage: digestImage}, FailingPods: []string{"web-0"}, Patch: &stuck.ImagePatch{Path: "/spec/template/spec/containers/0/image", From: from, To: digestImage}},
		{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "web", Pod: "web-0", Container: "app", Image: from}},
	})
}

func snap() *stuck.Objects {
	s := &stuck.Objects{}
	for _, o := range objects() {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			s.StatefulSets = append(s.StatefulSets, *o)
		case *corev1.Pod:
			s.Pods = append(s.Pods, *o)
		}
	}
	return s
}

// planOf plans with the policy and returns the plan's two lists.
func planOf(policy plan.Policy, rep *model.Report, s *stuck.Objects) ([]model.Action, []stuck.Finding) {
	p := plan.Planner{Policy: policy}.Plan(rep, s)
	return p.Actions, p.Unrepaired
}

// onlySafeWrites fails if the client was asked to write anything but a StatefulSet patch or a
// pod delete.
func onlySafeWrites(t *testing.T, kube *fake.Clientset) {
	t.Helper()
	for _, a := range kube.Actions() {
		verb, resource := a.GetVerb(), a.GetResource().Resource
		switch {
		case verb == "get" || verb == "list" || verb == "watch":
		case verb == "patch" && resource == "statefulsets":
		case verb == "delete" && resource == "pods":
		default:
			t.Errorf("unsafe request: %s %s", verb, resource)
		}
	}
}

func TestPlan(t *testing.T) {
	actions, unrepaired := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	if len(actions) != 2 || actions[0].Kind() != apiv1.PatchImage || actions[1].Kind() != apiv1.DeletePod || !actions[1].AfterPatch {
		t.Fatalf("actions %+v", actions)
	}
	if actions[0].UID != "set-uid" || actions[0].From != "myapp:1" || actions[0].To != digestImage {
		t.Errorf("patch %+v", actions[0])
	}
	if len(unrepaired) != 0 {
		t.Errorf("the failing pod is repaired by patch + delete: unrepaired %v", unrepaired)
	}
	rep := model.NewReport(false, nil, []stuck.Finding{
		{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing, Severity: apiv1.SeverityError, Pod: "web-0"}},
		{Finding: apiv1.Finding{Code: apiv1.VolumeClaimPending, Severity: apiv1.SeverityError, Pod: "web-1"}},
		{Finding: apiv1.Finding{Code: apiv1.OnDeleteStale, Severity: apiv1.SeverityInfo}},
	})
	actions, unrepaired = planOf(plan.Policy{}, rep, snap())
	if len(actions) != 0 || len(unrepaired) != 2 {
		t.Errorf("CurrentRevisionFailing and VolumeClaimPending have no safe repair: actions %v unrepaired %v", actions, unrepaired)
	}
}

func TestDeleteWithPreconditions(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	actions, _ := planOf(plan.Policy{}, stuckReport("web-0"), snap())
	done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone}).Apply(context.Background(), actions)
	if err != nil || len(done) != 1 || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	del := kube.Actions()[0].(k8stesting.DeleteAction)
	// The UID is the precondition; the resourceVersion is not (kubelet back-off churn changes it).
	if pre := del.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || string(*pre.UID) != "uid-web-0" || pre.ResourceVersion != nil {
		t.Errorf("want a UID-only precondition: %+v", del.GetDeleteOptions())
	}
	onlySafeWrites(t, kube)
}

func TestPodReplacedBetweenDiagnosisAndDelete(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("Precondition failed: UID in precondition: uid-web-0, UID in object meta: new"))
	})
	done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone}).Apply(context.Background(), mustPlan(stuckReport("web-0")))
	if err != nil || done[0].Result != apiv1.ResultSkipped || !strings.Contains(done[0].Message, "nothing deleted") {
		t.Fatalf("%+v %v", done, err)
	}
}

func TestForbiddenDeleteIsReportedAndOthersGoOn(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "web-0" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("no"))
		}
		return false, nil, nil
	})
	done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone}).Apply(context.Background(), mustPlan(stuckReport("web-0", "web-1")))
	if err != nil || len(done) != 2 {
		t.Fatalf("%+v %v", done, err)
	}
	if done[0].Result != apiv1.ResultFailed || !strings.Contains(done[0].Message, "forbidden: needs delete pods") || done[1].Result != apiv1.ResultDone {
		t.Errorf("results %+v", done)
	}
}

func TestAPIGoneIsUnavailable(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &url.Error{Op: "Delete", URL: "https://127.0.0.1:6443", Err: errors.New("connect: connection refused")}
	})
	_, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone}).Apply(context.Background(), mustPlan(stuckReport("web-0", "web-1")))
	var unavailable *repair.UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("want UnavailableError, got %v", err)
	}
}

func TestPatchTestsTheDiagnosedImage(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
		return model.NewReport(true, nil, nil), snap(), nil
	}}
	actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
	done, err := exec.Apply(context.Background(), actions[:1])
	if err != nil || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	set, _ := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if got := set.Spec.Template.Spec.Containers[0].Image; got != digestImage {
		t.Errorf("image %s", got)
	}
	patch := string(kube.Actions()[0].(k8stesting.PatchAction).GetPatch())
	for _, want := range []string{`{"op":"test","path":"/metadata/uid","value":"set-uid"}`, `{"op":"test","path":"/spec/template/spec/containers/0/image","value":"myapp:1"}`} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch %s lacks %s", patch, want)
		}
	}
	onlySafeWrites(t, kube)
}

func TestStatefulSetChangedBeforePatch(t *testing.T) {
	invalid := apierrors.NewGenericServerResponse(422, "patch", schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web", "testing value /spec/template/spec/containers/0/image failed", 0, false)
	for name, tc := range map[string]struct {
		fresh      *model.Report
		wantResult apiv1.ActionResult
		patches    int
	}{
		"no longer needed":      {fresh: model.NewReport(true, nil, nil), wantResult: apiv1.ResultSkipped, patches: 1},
		"needed with new value": {fresh: unresolvedReport("myapp:2"), wantResult: apiv1.ResultFailed, patches: 2},
	} {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(objects()...)
			var sent []string
			kube.PrependReactor("patch", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sent = append(sent, string(a.(k8stesting.PatchAction).GetPatch()))
				return true, nil, invalid
			})
			diagnosed := 0
			exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
				diagnosed++
				return tc.fresh, snap(), nil
			}}
			actions, _ := planOf(plan.Policy{}, unresolvedReport("myapp:1"), snap())
			done, err := exec.Apply(context.Background(), actions)
			if err != nil || done[0].Result != tc.wantResult || len(sent) != tc.patches || diagnosed != 1 {
				t.Fatalf("result %+v patches %d diagnoses %d err %v", done[0], len(sent), diagnosed, err)
			}
			if tc.patches == 2 && !strings.Contains(sent[1], `"value":"myapp:2"`) {
				t.Errorf("retry must test the fresh value: %s", sent[1])
			}
			if done[1].Result != apiv1.ResultSkipped {
				t.Errorf("pods of an unpatched StatefulSet must not be deleted: %+v", done[1])
			}
			onlySafeWrites(t, kube)
		})
	}
}

func TestDryRunServer(t *testing.T) {
	kube := fake.NewClientset(objects()...)
	done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunServer}).Apply(context.Background(), mustPlan(stuckReport("web-0")))
	if err != nil || done[0].Result != apiv1.ResultDone {
		t.Fatalf("%+v %v", done, err)
	}
	if opts := kube.Actions()[0].(k8stesting.DeleteAction).GetDeleteOptions(); len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
		t.Errorf("server dry run must send dryRun=All: %+v", opts)
	}
}

func mustPlan(rep *model.Report) []model.Action {
	actions, _ := planOf(plan.Policy{}, rep, snap())
	return actions
}
