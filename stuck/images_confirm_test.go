package stuck_test

import (
	"reflect"
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

const (
	d1          = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	shopMyapp   = "image-registry.openshift-image-registry.svc:5000/shop/myapp@" + d1
	shopTools   = "image-registry.openshift-image-registry.svc:5000/shop/tools@" + d1
	otherMyapp  = "image-registry.openshift-image-registry.svc:5000/other/myapp:9.9"
	tagFormShop = "image-registry.openshift-image-registry.svc:5000/shop/myapp:1.0.1"
)

func admissionSnapshot(t *testing.T) *stuck.Objects {
	t.Helper()
	s, err := stuck.LoadFile("../testdata/admission/objects.yaml", snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestQuestions: one question per predicted rewrite, whatever the number of StatefulSets using
// the image; none for names admission leaves or namespaces it skips.
func TestQuestions(t *testing.T) {
	got := stuck.Questions(admissionSnapshot(t))
	want := []stuck.AdmissionQuestion{
		{Namespace: "other", Image: "myapp:9.9"},
		{Namespace: "shop", Image: "myapp:1.0.1"},
		{Namespace: "shop", Image: "tools:2"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("questions\n%+v\nwant\n%+v", got, want)
	}
	s := admissionSnapshot(t)
	s.OpenShift = false
	if q := stuck.Questions(s); len(q) != 0 {
		t.Errorf("off OpenShift: %+v", q)
	}
}

// finding returns the finding about a StatefulSet's container.
func finding(t *testing.T, findings []stuck.Finding, set, container string) stuck.Finding {
	t.Helper()
	for _, f := range findings {
		if f.StatefulSet == set && f.Container == container {
			return f
		}
	}
	t.Fatalf("no finding for %s container %s", set, container)
	return stuck.Finding{}
}

// TestAnswers: what the resolver makes of each kind of answer: the prediction confirmed; another
// image written (trusted: resolvedImage and patch); the image left as it is (no patch); no answer.
func TestAnswers(t *testing.T) {
	forbidden := `pods "stsdiag-probe-" is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "other"`
	s := admissionSnapshot(t)
	s.Admission = map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{
		{Namespace: "shop", Image: "myapp:1.0.1"}:                            {Written: shopMyapp},
		{Namespace: "shop", Image: "tools:2"}:                                {Written: "tools:2"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"}: {Written: tagFormShop},
		{Namespace: "other", Image: "myapp:9.9"}:                             {Error: forbidden},
	}
	findings := imageDiagnosis(s)
	cases := []struct {
		set, container string
		code           apiv1.Code
		resolved       string
		admission      apiv1.AdmissionCheck
		patch          *stuck.ImagePatch
	}{
		{"web", "app", apiv1.UnresolvedImageReference, shopMyapp,
			apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: shopMyapp, Written: shopMyapp},
			&stuck.ImagePatch{Path: "/spec/template/spec/containers/0/image", From: "myapp:1.0.1", To: shopMyapp}},
		{"db", "db", apiv1.UnresolvedImageReference, shopMyapp,
			apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: shopMyapp, Written: shopMyapp},
			&stuck.ImagePatch{Path: "/spec/template/spec/containers/0/image", From: "myapp:1.0.1", To: shopMyapp}},
		{"db", "init", apiv1.UnresolvedImageReference, "",
			apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: shopTools, Written: "tools:2"}, nil},
		{"forced", "app", apiv1.UnresolvedImageReference, tagFormShop,
			apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: shopMyapp, Written: tagFormShop},
			&stuck.ImagePatch{Path: "/spec/template/spec/containers/0/image", From: "quay.io/team/myapp:1.0.1", To: tagFormShop}},
		{"managed", "app", apiv1.ImageResolutionSkipped, shopMyapp,
			apiv1.AdmissionCheck{Result: apiv1.AdmissionConfirmed, Predicted: shopMyapp, Written: shopMyapp}, nil},
		{"next", "app", apiv1.ImageStreamTagNotFound, otherMyapp,
			apiv1.AdmissionCheck{Result: apiv1.AdmissionUnconfirmed, Predicted: otherMyapp, Error: forbidden}, nil},
	}
	for _, c := range cases {
		f := finding(t, findings, c.set, c.container)
		if f.Code != c.code || f.ResolvedImage != c.resolved {
			t.Errorf("%s/%s: %s resolved %q, want %s %q", c.set, c.container, f.Code, f.ResolvedImage, c.code, c.resolved)
		}
		if f.Details.Admission == nil || *f.Details.Admission != c.admission {
			t.Errorf("%s/%s: admission %+v, want %+v", c.set, c.container, f.Details.Admission, c.admission)
		}
		if c.patch != nil {
			c.patch.Admission = &c.admission
		}
		if !reflect.DeepEqual(f.Patch, c.patch) {
			t.Errorf("%s/%s: patch %+v, want %+v", c.set, c.container, f.Patch, c.patch)
		}
		if c.patch != nil && (f.Details.Patch == nil || f.Details.Patch.To != c.patch.To) {
			t.Errorf("%s/%s: details.patch %+v, want to %s", c.set, c.container, f.Details.Patch, c.patch.To)
		}
	}
	// Not asked: the prediction stands and says nothing of admission.
	f := finding(t, imageDiagnosis(admissionSnapshot(t)), "forced", "app")
	if f.Details.Admission != nil || f.ResolvedImage != shopMyapp || f.Patch.To != shopMyapp {
		t.Errorf("without answers: admission %+v, resolved %s, patch %+v", f.Details.Admission, f.ResolvedImage, f.Patch)
	}
}
