package predict

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The expected values below were printed by the controller's own code (k8s.io/kubernetes
// v1.37.2: getPatch as in stateful_set_utils.go:552-572 over the StatefulSet typed, and
// history.NewControllerRevision) for StatefulSet web with this template, collision counts 0,
// 1 and 3 (web-687dc8f65, web-687dc8f64, web-687dc8f66). The image holds <&>, which encoding/json escapes, as the controller's marshal does.
const (
	refTemplate = `{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"registry.k8s.io/nginx-slim:0.27 \u003c\u0026\u003e","resources":{}}]}}`
	refPatch    = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"registry.k8s.io/nginx-slim:0.27 \u003c\u0026\u003e","name":"web","resources":{}}]}}}}`
)

func TestPatchAndHashAreTheControllers(t *testing.T) {
	patch, err := Patch([]byte(refTemplate))
	if err != nil || string(patch) != refPatch {
		t.Fatalf("Patch = %s, %v\nwant %s", patch, err, refPatch)
	}
	for _, c := range []struct {
		collisions int32
		want       string
	}{{0, "web-687dc8f65"}, {3, "web-687dc8f66"}} {
		if got := RevisionName("web", Hash(patch, c.collisions)); got != c.want {
			t.Errorf("collision count %d: %s, want %s", c.collisions, got, c.want)
		}
	}
	// The template as a server prints it with other spacing and key order gives the same data.
	spaced := `{ "spec": {"containers": [{"resources": {}, "image": "registry.k8s.io/nginx-slim:0.27 <&>", "name": "web"}]},
	  "metadata": {"labels": {"app": "web"}} }`
	if p, _ := Patch([]byte(spaced)); string(p) != refPatch {
		t.Errorf("reordered template: %s", p)
	}
}

func TestUpdateRevision(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "set-uid"}}
	owner := []metav1.OwnerReference{{UID: "set-uid", Controller: ptr.To(true)}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rev := func(name string, number int64, data string, owners []metav1.OwnerReference) appsv1.ControllerRevision {
		return appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, CreationTimestamp: metav1.NewTime(now)},
			Revision: number, Data: runtime.RawExtension{Raw: []byte(data)}}
	}
	cases := []struct {
		name      string
		revisions []appsv1.ControllerRevision
		count     *int32
		want      string
		existing  bool
	}{
		{name: "new set", want: "web-687dc8f65"},
		{name: "unchanged: the latest revision holds the template", revisions: []appsv1.ControllerRevision{
			rev("web-old", 1, `{"other":1}`, owner), rev("web-latest", 2, refPatch, owner)}, want: "web-latest", existing: true},
		{name: "revert: an older revision holds it and is reused", revisions: []appsv1.ControllerRevision{
			rev("web-first", 1, refPatch, owner), rev("web-second", 2, `{"other":2}`, owner)}, want: "web-first", existing: true},
		{name: "a revision of another owner with the same data is not reused", revisions: []appsv1.ControllerRevision{
			rev("web-foreign", 3, refPatch, []metav1.OwnerReference{{UID: "other", Controller: ptr.To(true)}})}, want: "web-687dc8f65"},
		{name: "the name taken by other data: the collision count is raised", revisions: []appsv1.ControllerRevision{
			rev("web-687dc8f65", 1, `{"other":1}`, owner)}, want: "web-687dc8f64"},
		{name: "status.collisionCount is where the controller starts", count: ptr.To(int32(3)), want: "web-687dc8f66"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := set.DeepCopy()
			s.Status.CollisionCount = c.count
			got, err := UpdateRevision(s, []byte(refTemplate), c.revisions)
			if err != nil || got.Name != c.want || got.Existing != c.existing || string(got.Data) != refPatch {
				t.Errorf("UpdateRevision = %+v, %v; want %s existing %v", got, err, c.want, c.existing)
			}
		})
	}
}
