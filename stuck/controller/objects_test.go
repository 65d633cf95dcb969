package controller_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

func TestRevisionTemplate(t *testing.T) {
	cases := []struct {
		name, data, wantRaw, wantImage, wantErr string
	}{
		{name: "drops $patch", data: `{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"app","image":"app:1"}]}}}}`,
			wantRaw: `{"spec":{"containers":[{"name":"app","image":"app:1"}]}}`, wantImage: "app:1"},
		{name: "keeps fields this client does not know", data: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:1"}],"future":1}}}}`,
			wantRaw: `{"spec":{"containers":[{"name":"app","image":"app:1"}],"future":1}}`, wantImage: "app:1"},
		{name: "no data", wantErr: "no data"},
		{name: "no template", data: `{"spec":{}}`, wantErr: "no spec.template"},
		{name: "not JSON", data: `{`, wantErr: "unexpected end of JSON input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rev := &appsv1.ControllerRevision{}
			if c.data != "" {
				rev.Data = runtime.RawExtension{Raw: []byte(c.data)}
			}
			raw, tmpl, err := controller.RevisionTemplate(rev)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || string(raw) != c.wantRaw || tmpl.Spec.Containers[0].Image != c.wantImage {
				t.Fatalf("got %s, %+v, %v; want %s", raw, tmpl, err, c.wantRaw)
			}
		})
	}
}

func TestRunningAndReady(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	cases := []struct {
		name  string
		phase corev1.PodPhase
		conds []corev1.PodCondition
		want  bool
	}{
		{"running and ready", corev1.PodRunning, ready, true},
		{"running, not ready", corev1.PodRunning, nil, false},
		{"pending with a Ready condition", corev1.PodPending, ready, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Phase: c.phase, Conditions: c.conds}}
			if got := controller.RunningAndReady(pod); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestByController(t *testing.T) {
	owner := func(uid string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{UID: types.UID("uid-" + uid), Controller: &controller}}
	}
	s := &stuck.Objects{
		Pods: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "web-0", OwnerReferences: owner("web", true)}},
			{ObjectMeta: metav1.ObjectMeta{Name: "loose", OwnerReferences: owner("web", false)}},
			{ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: owner("web", true)}},
		},
		Revisions: []appsv1.ControllerRevision{{ObjectMeta: metav1.ObjectMeta{Name: "web-a", OwnerReferences: owner("web", true)}}},
	}
	o := controller.ByController(s.Pods, s.Revisions)
	pods := o.Pods["uid-web"]
	if len(pods) != 2 || pods[0].Name != "web-0" || pods[1].Name != "web-1" || len(o.Pods) != 1 {
		t.Errorf("pods %v", o.Pods)
	}
	if revs := o.Revisions["uid-web"]; len(revs) != 1 || revs[0].Name != "web-a" {
		t.Errorf("revisions %v", o.Revisions)
	}
}
