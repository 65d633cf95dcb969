package gather_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
)

// TestTriageDeepNamespacesHoldWholeStatefulSets: the cluster-wide LIST keeps of each StatefulSet
// only what the triage decides on, so a namespace read deep gets its StatefulSets again, whole
// (diagnosis compares a template the controller has not observed with its revisions'), while a
// settled namespace's sets carry no pod spec.
func TestTriageDeepNamespacesHoldWholeStatefulSets(t *testing.T) {
	whole := func(s *appsv1.StatefulSet) *appsv1.StatefulSet {
		s.Spec.Template.Spec.Containers[0].Args = []string{"serve"}
		s.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{InitialDelaySeconds: 7}
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{}}
		s.Spec.VolumeClaimTemplates[0].Name = "data"
		return s
	}
	unobserved := whole(governed("deep", "web", "web"))
	unobserved.Generation = 2 // the controller has not observed it: unsettled
	beside := whole(governed("deep", "db", "db"))
	settled := whole(governed("quiet", "cache", "cache"))
	settled.Spec.Replicas = ptr.To[int32](0)
	kube := fake.NewClientset(unobserved, beside, settled,
		service("deep", "web", corev1.ClusterIPNone, nil), service("deep", "db", corev1.ClusterIPNone, nil), service("quiet", "cache", corev1.ClusterIPNone, nil))
	got := map[string]*stuck.Objects{}
	settledNS := map[string]bool{}
	_, err := gather.Triage(context.Background(), gather.Clients{Clients: read.Clients{Kube: kube}}, gather.Scope{}, func(snap *stuck.Objects, isSettled bool) error {
		got[snap.StatefulSets[0].Namespace], settledNS[snap.StatefulSets[0].Namespace] = snap, isSettled
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if settledNS["deep"] || !settledNS["quiet"] {
		t.Fatalf("settled: %v, want deep read deep and quiet settled", settledNS)
	}
	for _, want := range []*appsv1.StatefulSet{beside, unobserved} { // the LIST's order
		var found *appsv1.StatefulSet
		for i := range got["deep"].StatefulSets {
			if s := &got["deep"].StatefulSets[i]; s.Name == want.Name {
				found = s
			}
		}
		if found == nil {
			t.Fatalf("deep namespace lacks StatefulSet %s", want.Name)
		}
		if !equality.Semantic.DeepEqual(found.Spec.Template.Spec.Containers[0].ReadinessProbe, want.Spec.Template.Spec.Containers[0].ReadinessProbe) ||
			len(found.Spec.VolumeClaimTemplates) != 1 || len(found.Spec.Template.Spec.Containers[0].Args) != 1 {
			t.Errorf("deep namespace's StatefulSet %s is not whole: template %+v, claim templates %d", want.Name, found.Spec.Template.Spec, len(found.Spec.VolumeClaimTemplates))
		}
	}
	q := got["quiet"].StatefulSets[0]
	if len(q.Spec.Template.Spec.Containers) != 0 || q.Spec.VolumeClaimTemplates != nil || q.Spec.Template.Labels["app"] != "cache" {
		t.Errorf("settled namespace's StatefulSet kept %+v, claim templates %v, labels %v; want no pod spec, no claim templates, the template's labels", q.Spec.Template.Spec, q.Spec.VolumeClaimTemplates, q.Spec.Template.Labels)
	}
}
