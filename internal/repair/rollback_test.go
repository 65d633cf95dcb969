package repair_test

import (
	"context"
	"encoding/json"
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
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/explain"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/plan"
	"github.com/stsdiag/stsdiag/internal/repair"
	"github.com/stsdiag/stsdiag/internal/verdict"
	"github.com/stsdiag/stsdiag/stuck"
)

const (
	goodImage = "registry.k8s.io/nginx-slim:0.27"
	badImage  = "nginx:1.27-typo"
)

// rolloutSet is db, 3 replicas, rolled from revision db-good to db-bad: db-2 (the highest
// ordinal, updated first) fails on db-bad, db-0 and db-1 are Ready on db-good.
func rolloutSet(current string) (*appsv1.StatefulSet, []appsv1.ControllerRevision, []corev1.Pod) {
	labels := map[string]string{"app": "db"}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "db-uid", Generation: 4},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
				Containers:     []corev1.Container{{Name: "db", Image: badImage}, {Name: "sidecar", Image: "sidecar:1"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, CurrentRevision: current, UpdateRevision: "db-bad", ReadyReplicas: 2}}
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "db-uid", Controller: ptr.To(true)}}
	revision := func(name, image string, n int64) appsv1.ControllerRevision {
		// As the controller writes it (getPatch): the template with "$patch": "replace", and a
		// field this client does not know, which a rollback must carry over untouched.
		data := `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"db"}},"spec":{` +
			`"initContainers":[{"name":"init","image":"busybox:1","resources":{}}],` +
			`"containers":[{"name":"db","image":"` + image + `","resources":{}},{"name":"sidecar","image":"sidecar:1","resources":{}}],` +
			`"futureField":{"keep":true}}}}}`
		return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", OwnerReferences: owner},
			Data: runtime.RawExtension{Raw: []byte(data)}, Revision: n}
	}
	revs := []appsv1.ControllerRevision{revision("db-good", goodImage, 1), revision("db-bad", badImage, 2)}
	var pods []corev1.Pod
	for i, rev := range []string{current, current, "db-bad"} {
		name := "db-" + string(rune('0'+i))
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), OwnerReferences: owner,
			Labels: map[string]string{"app": "db", appsv1.ControllerRevisionHashLabelKey: rev}}}
		if rev != "db-bad" {
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		} else {
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}
		pods = append(pods, pod)
	}
	return set, revs, pods
}

func rolloutSnap(current string) *stuck.Objects {
	set, revs, pods := rolloutSet(current)
	return &stuck.Objects{StatefulSets: []appsv1.StatefulSet{*set}, Revisions: revs, Pods: pods}
}

func failingReport(pods ...string) *model.Report {
	var findings []stuck.Finding
	for _, pod := range pods {
		findings = append(findings, stuck.Finding{Finding: apiv1.Finding{Code: apiv1.CurrentRevisionFailing, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "db", Pod: pod, Container: "db", Image: badImage, Reason: "ImagePullBackOff", Remedy: "fix the template"}, Target: &stuck.PodRef{Name: pod, UID: types.UID("uid-" + pod)}})
	}
	return model.NewReport(false, nil, findings)
}

func planWithRollbacks(rep *model.Report, s *stuck.Objects) ([]model.Action, []stuck.Finding) {
	return planOf(plan.Policy{Rollback: true}, rep, s)
}

func TestPlanRollback(t *testing.T) {
	actions, unrepaired := planWithRollbacks(failingReport("db-2"), rolloutSnap("db-good"))
	if len(unrepaired) != 0 || len(actions) != 2 {
		t.Fatalf("actions %+v unrepaired %+v", actions, unrepaired)
	}
	rb, del := actions[0], actions[1]
	if rb.Kind() != apiv1.Rollback || rb.UID != "db-uid" || rb.Rollback == nil || rb.Rollback.Revision != "db-good" || rb.Rollback.FromRevision != "db-bad" ||
		rb.Guard.Generation != 4 {
		t.Fatalf("rollback %+v", rb)
	}
	if len(rb.Rollback.Images) != 1 || rb.Rollback.Images[0] != (apiv1.ImageChange{Container: "db", From: badImage, To: goodImage}) {
		t.Errorf("images %+v", rb.Rollback.Images)
	}
	wantTests := []stuck.ImagePatch{{Path: "/spec/template/spec/initContainers/0/image", From: "busybox:1"},
		{Path: "/spec/template/spec/containers/0/image", From: badImage}, {Path: "/spec/template/spec/containers/1/image", From: "sidecar:1"}}
	if len(rb.Guard.Tests) != 3 || rb.Guard.Tests[0] != wantTests[0] || rb.Guard.Tests[1] != wantTests[1] || rb.Guard.Tests[2] != wantTests[2] {
		t.Errorf("tests %+v", rb.Guard.Tests)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(rb.Guard.Template, &tmpl); err != nil || tmpl["$patch"] != nil || tmpl["spec"].(map[string]any)["futureField"] == nil {
		t.Errorf("the template must be the revision's own JSON without $patch: %s (%v)", rb.Guard.Template, err)
	}
	if del.Kind() != apiv1.DeletePod || del.Pod != "db-2" || !del.AfterPatch {
		t.Errorf("delete %+v", del)
	}
	line := explain.Action(rb)
	for _, want := range []string{"roll back statefulset/db -n shop", "from failing revision db-bad to revision db-good", `container "db" image ` + badImage + " → " + goodImage} {
		if !strings.Contains(line, want) {
			t.Errorf("plan line %q lacks %q", line, want)
		}
	}
	out, _ := json.Marshal(rb.Action)
	if !strings.Contains(string(out), `"rollback":{"revision":"db-good","fromRevision":"db-bad","images":[{"container":"db","from":"nginx:1.27-typo","to":"registry.k8s.io/nginx-slim:0.27"}]}`) ||
		strings.Contains(string(out), "futureField") {
		t.Errorf("FixResult action: %s", out)
	}
}

func TestNoRollbackWithoutAReadyEarlierRevision(t *testing.T) {
	notReady := rolloutSnap("db-good")
	for i := range notReady.Pods[:2] {
		notReady.Pods[i].Status = corev1.PodStatus{Phase: corev1.PodRunning}
	}
	unobserved := rolloutSnap("db-good")
	unobserved.StatefulSets[0].Generation = 5
	for name, tc := range map[string]struct {
		snap *stuck.Objects
		want string
	}{
		// At creation the controller makes the first revision current without any pod Ready.
		"broken since creation":      {rolloutSnap("db-bad"), "no earlier revision was Ready: db-bad is both the current and the update revision"},
		"earlier revision not Ready": {notReady, "no pod of the earlier revision db-good is Ready"},
		"template not observed":      {unobserved, "has not observed the latest template"},
	} {
		t.Run(name, func(t *testing.T) {
			actions, unrepaired := planWithRollbacks(failingReport("db-2"), tc.snap)
			if len(actions) != 0 || len(unrepaired) != 1 {
				t.Fatalf("actions %+v unrepaired %+v", actions, unrepaired)
			}
			f := unrepaired[0]
			if reason := f.Details.Rollback; !strings.Contains(reason, tc.want) || !strings.HasPrefix(f.Remedy, "not rolled back: ") ||
				!strings.HasSuffix(f.Remedy, "; fix the template") {
				t.Errorf("reason %q remedy %q", reason, f.Remedy)
			}
		})
	}
	// Without --rollback nothing changes.
	actions, unrepaired := planOf(plan.Policy{}, failingReport("db-2"), rolloutSnap("db-good"))
	if len(actions) != 0 || len(unrepaired) != 1 || unrepaired[0].Details.Rollback != "" {
		t.Errorf("Plan alone: %+v %+v", actions, unrepaired)
	}
}

func rolloutObjects(current string) []runtime.Object {
	set, revs, pods := rolloutSet(current)
	objs := []runtime.Object{set}
	for i := range revs {
		objs = append(objs, &revs[i])
	}
	for i := range pods {
		objs = append(objs, &pods[i])
	}
	return append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-2", Namespace: "shop"}})
}

// rolledBackSnap is the cluster once the controller has observed the rollback: the good
// revision is the update revision again, db-2 still runs the bad one.
func rolledBackSnap() *stuck.Objects {
	s := rolloutSnap("db-good")
	s.StatefulSets[0].Status.UpdateRevision = "db-good"
	return s
}

// afterRollback is the fresh diagnosis once the controller has observed the rollback: db-2 now
// runs an old revision and is StaleRevisionStuck.
func afterRollback() *model.Report {
	return model.NewReport(false, nil, []stuck.Finding{{Finding: apiv1.Finding{Code: apiv1.StaleRevisionStuck, Severity: apiv1.SeverityError, Namespace: "shop", StatefulSet: "db", Pod: "db-2"}, Target: &stuck.PodRef{Name: "db-2", UID: "uid-db-2"}}})
}

func TestApplyRollbackThenDeleteProven(t *testing.T) {
	kube := fake.NewClientset(rolloutObjects("db-good")...)
	diagnoses := 0
	exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
		diagnoses++
		return afterRollback(), rolledBackSnap(), nil
	}}
	actions, _ := planWithRollbacks(failingReport("db-2"), rolloutSnap("db-good"))
	done, err := exec.Apply(context.Background(), actions)
	if err != nil || len(done) != 2 || done[0].Result != apiv1.ResultDone || done[1].Result != apiv1.ResultDone || done[1].UID != "uid-db-2" {
		t.Fatalf("%+v %v", done, err)
	}
	if diagnoses != 2 {
		t.Errorf("want a fresh diagnosis after the rollback and another right before the delete, got %d", diagnoses)
	}
	patch := string(kube.Actions()[0].(k8stesting.PatchAction).GetPatch())
	for _, want := range []string{`{"op":"test","path":"/metadata/uid","value":"db-uid"}`, `{"op":"test","path":"/metadata/generation","value":4}`,
		`{"op":"test","path":"/spec/template/spec/initContainers/0/image","value":"busybox:1"}`,
		`{"op":"test","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27-typo"}`,
		`{"op":"test","path":"/spec/template/spec/containers/1/image","value":"sidecar:1"}`, `{"op":"replace","path":"/spec/template","value":{`} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch %s lacks %s", patch, want)
		}
	}
	if strings.Index(patch, `"op":"replace"`) < strings.LastIndex(patch, `"op":"test"`) {
		t.Errorf("every test must come before the replace: %s", patch)
	}
	set, _ := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "db", metav1.GetOptions{})
	if got := set.Spec.Template.Spec.Containers[0].Image; got != goodImage {
		t.Errorf("template image %s, want %s", got, goodImage)
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims("shop").Get(context.Background(), "data-db-2", metav1.GetOptions{}); err != nil {
		t.Errorf("the claim must be kept: %v", err)
	}
	onlySafeWrites(t, kube)
}

func TestRollbackRefusedByTheTestIsNeverOverwritten(t *testing.T) {
	invalid := apierrors.NewGenericServerResponse(422, "patch", schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db", "testing value /spec/template/spec/containers/0/image failed", 0, false)
	changed := rolloutSnap("db-good")
	changed.StatefulSets[0].Generation = 5
	changed.StatefulSets[0].Status.ObservedGeneration = 5
	changed.StatefulSets[0].Status.UpdateRevision = "db-third"
	for name, tc := range map[string]struct {
		fresh      *model.Report
		snap       *stuck.Objects
		wantResult apiv1.ActionResult
		patches    int
	}{
		// Someone set another template meanwhile: db-2 is an old-revision pod now, no rollback.
		"no longer called for": {fresh: afterRollback(), snap: changed, wantResult: apiv1.ResultSkipped, patches: 1},
		"still called for":     {fresh: failingReport("db-2"), snap: rolloutSnap("db-good"), wantResult: apiv1.ResultFailed, patches: 2},
	} {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset(rolloutObjects("db-good")...)
			patches := 0
			kube.PrependReactor("patch", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				return true, nil, invalid
			})
			diagnoses := 0
			exec := &repair.Executor{Kube: kube, DryRun: apiv1.DryRunNone, Prove: func(context.Context, []repair.Write) (*model.Report, *stuck.Objects, error) {
				diagnoses++
				return tc.fresh, tc.snap, nil
			}}
			actions, _ := planWithRollbacks(failingReport("db-2"), rolloutSnap("db-good"))
			done, err := exec.Apply(context.Background(), actions)
			if err != nil || done[0].Result != tc.wantResult || !strings.Contains(done[0].Message, "nothing overwritten") || patches != tc.patches || diagnoses != 1 {
				t.Fatalf("result %+v patches %d diagnoses %d err %v", done[0], patches, diagnoses, err)
			}
			if done[1].Result != apiv1.ResultSkipped {
				t.Errorf("pods of a StatefulSet not rolled back must not be deleted: %+v", done[1])
			}
			set, _ := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "db", metav1.GetOptions{})
			if set.Spec.Template.Spec.Containers[0].Image != badImage {
				t.Errorf("template changed")
			}
			onlySafeWrites(t, kube)
		})
	}
}

func TestRollbackDryRun(t *testing.T) {
	kube := fake.NewClientset(rolloutObjects("db-good")...)
	actions, _ := planWithRollbacks(failingReport("db-2"), rolloutSnap("db-good"))
	done, err := (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunClient}).Apply(context.Background(), actions)
	if err != nil || len(done) != 2 || done[0].Result != apiv1.ResultDone || len(kube.Actions()) != 0 {
		t.Fatalf("client dry run: %+v %v, requests %v", done, err, kube.Actions())
	}
	kube = fake.NewClientset(rolloutObjects("db-good")...)
	done, err = (&repair.Executor{Kube: kube, DryRun: apiv1.DryRunServer}).Apply(context.Background(), actions)
	if err != nil || done[0].Result != apiv1.ResultDone || !strings.Contains(done[0].Message, "server dry run") {
		t.Fatalf("server dry run: %+v %v", done, err)
	}
	if opts := kube.Actions()[0].(k8stesting.PatchAction); len(opts.GetPatch()) == 0 {
		t.Errorf("no patch sent")
	}
	if len(verdict.RollbacksDone(done)) != 0 {
		t.Errorf("a dry run rolled nothing back")
	}
}
