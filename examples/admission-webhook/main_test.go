package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// review posts an UPDATE of StatefulSet web, its image changed as asked, to the webhook serving
// the scenario's objects.
func review(t *testing.T, scenario string, image string) *admissionv1.AdmissionResponse {
	t.Helper()
	objs, err := stuck.LoadFile("../../testdata/stuck/"+scenario+"/objects.yaml", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	all := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}
	for i := range objs.StatefulSets {
		all = append(all, &objs.StatefulSets[i])
	}
	for i := range objs.Pods {
		all = append(all, &objs.Pods[i])
	}
	for i := range objs.Revisions {
		all = append(all, &objs.Revisions[i])
	}
	before := objs.StatefulSets[0].DeepCopy()
	after := before.DeepCopy()
	after.Spec.Template.Spec.Containers[0].Image = image
	old, _ := json.Marshal(before)
	updated, _ := json.Marshal(after)
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u1", Operation: admissionv1.Update, Namespace: "shop", Name: before.Name,
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
			OldObject: runtime.RawExtension{Raw: old}, Object: runtime.RawExtension{Raw: updated}}})
	srv := httptest.NewServer(&webhook{clients: read.Clients{Kube: fake.NewClientset(all...)}})
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Response == nil {
		t.Fatalf("%+v %v", got, err)
	}
	return got.Response
}

// TestWarnsWhenAPodBlocksTheUpdate: web-0 is stuck on an old revision under OrderedReady
// (kubernetes#67250): the next template will not roll out either; the update is allowed, with a
// warning naming the pod and the delete.
func TestWarnsWhenAPodBlocksTheUpdate(t *testing.T) {
	r := review(t, "stale-revision-stuck-1-replica", "app:2")
	if !r.Allowed || r.UID != "u1" || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "web-0 is stuck at startup (ImagePullBackOff)") ||
		!strings.Contains(r.Warnings[0], "kubectl delete pod web-0 -n shop") {
		t.Fatalf("%+v", r)
	}
}

// TestSilentOnAHealthySet: nothing blocks the update: no warning.
func TestSilentOnAHealthySet(t *testing.T) {
	if r := review(t, "healthy-ordered-ready", "app:2"); !r.Allowed || len(r.Warnings) != 0 {
		t.Fatalf("%+v", r)
	}
}
