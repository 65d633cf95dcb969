package probe_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stsdiag/stsdiag/internal/probe"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
)

const (
	d1        = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	shopMyapp = "image-registry.openshift-image-registry.svc:5000/shop/myapp@" + d1
)

// admission answers dry-run creates of pods as a reactor: it records each request and rewrites
// images with rewrite (nil: leaves them), or refuses with refuse.
type admission struct {
	mu       sync.Mutex
	requests []*corev1.Pod
	dryRun   [][]string
	rewrite  map[string]string
	refuse   func(ns string) error
}

func (a *admission) client() *fake.Clientset {
	kube := fake.NewClientset()
	kube.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create := action.(k8stesting.CreateActionImpl)
		pod := create.GetObject().(*corev1.Pod).DeepCopy()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.requests = append(a.requests, pod.DeepCopy())
		a.dryRun = append(a.dryRun, create.CreateOptions.DryRun)
		if a.refuse != nil {
			if err := a.refuse(create.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		pod.Name = pod.GenerateName + "x7k2p"
		for _, list := range []*[]corev1.Container{&pod.Spec.InitContainers, &pod.Spec.Containers} {
			for i := range *list {
				if to, ok := a.rewrite[(*list)[i].Image]; ok {
					(*list)[i].Image = to
				}
			}
		}
		return true, pod, nil
	})
	return kube
}

// TestProbePod: the probe is a pod admission resolves and nothing else refuses: no owner, no
// volumes, no token, restricted-compliant, one container and the other images as init containers.
func TestProbePod(t *testing.T) {
	pod := probe.Pod("shop", true, []string{"myapp:1.0.1", "tools:2"})
	if pod.GenerateName != "stsdiag-probe-" || pod.Name != "" || pod.Namespace != "shop" || len(pod.OwnerReferences) != 0 {
		t.Errorf("metadata %+v", pod.ObjectMeta)
	}
	if pod.Annotations["alpha.image.policy.openshift.io/resolve-names"] != "*" {
		t.Errorf("forced probe without resolve-names: %v", pod.Annotations)
	}
	if p := probe.Pod("shop", false, []string{"a"}); p.Annotations != nil {
		t.Errorf("unforced probe with annotations %v", p.Annotations)
	}
	if len(pod.Spec.Volumes) != 0 || pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("volumes %v, automount %v", pod.Spec.Volumes, pod.Spec.AutomountServiceAccountToken)
	}
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", sc)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "image-0" || pod.Spec.Containers[0].Image != "myapp:1.0.1" ||
		len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "image-1" || pod.Spec.InitContainers[0].Image != "tools:2" {
		t.Errorf("containers %+v init %+v", pod.Spec.Containers, pod.Spec.InitContainers)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		s := c.SecurityContext
		if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation || s.Capabilities == nil ||
			!reflect.DeepEqual(s.Capabilities.Drop, []corev1.Capability{"ALL"}) || c.Resources.Requests != nil || len(c.VolumeMounts) != 0 {
			t.Errorf("container %s: %+v", c.Name, c)
		}
	}
}

// TestAskBatches: one dry-run create per namespace and resolve-names setting, however many
// questions; each answer is the image admission wrote in the container of that image.
func TestAskBatches(t *testing.T) {
	adm := &admission{rewrite: map[string]string{"myapp:1.0.1": shopMyapp, "quay.io/team/myapp:1.0.1": shopMyapp}}
	questions := []snapshot.AdmissionQuestion{
		{Namespace: "other", Image: "myapp:9.9"},
		{Namespace: "shop", Image: "myapp:1.0.1"},
		{Namespace: "shop", Image: "tools:2"},
		{Namespace: "shop", Image: "myapp:1.0.1"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"},
	}
	answers, warnings := probe.Ask(context.Background(), adm.client(), questions)
	want := map[snapshot.AdmissionQuestion]snapshot.AdmissionAnswer{
		{Namespace: "other", Image: "myapp:9.9"}:                             {Written: "myapp:9.9"},
		{Namespace: "shop", Image: "myapp:1.0.1"}:                            {Written: shopMyapp},
		{Namespace: "shop", Image: "tools:2"}:                                {Written: "tools:2"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"}: {Written: shopMyapp},
	}
	if !reflect.DeepEqual(answers, want) || len(warnings) != 0 {
		t.Errorf("answers %+v\nwant %+v\nwarnings %q", answers, want, warnings)
	}
	if len(adm.requests) != 3 {
		t.Fatalf("%d creates, want 3 (other; shop; shop forced)", len(adm.requests))
	}
	probes := map[string][]string{}
	for i, pod := range adm.requests {
		if !reflect.DeepEqual(adm.dryRun[i], []string{"All"}) {
			t.Errorf("create %d without dryRun=All: %v", i, adm.dryRun[i])
		}
		key := pod.Namespace
		if pod.Annotations["alpha.image.policy.openshift.io/resolve-names"] == "*" {
			key += " forced"
		}
		for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
			probes[key] = append(probes[key], c.Image)
		}
	}
	wantProbes := map[string][]string{"other": {"myapp:9.9"}, "shop": {"myapp:1.0.1", "tools:2"}, "shop forced": {"quay.io/team/myapp:1.0.1"}}
	if !reflect.DeepEqual(probes, wantProbes) {
		t.Errorf("probes %v, want %v", probes, wantProbes)
	}
	if a, w := probe.Ask(context.Background(), adm.client(), nil); len(a) != 0 || len(w) != 0 {
		t.Errorf("no questions: %v %v", a, w)
	}
}

// TestAskRefused: a refusal answers every image of the probe with the server's words, and is a
// warning; only the authorizer's refusal names the permission (a quota's is a 403 too).
func TestAskRefused(t *testing.T) {
	rbac := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
		errorString(`User "alice" cannot create resource "pods" in API group "" in the namespace "shop"`))
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "stsdiag-probe-x7k2p",
		errorString(`exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`))
	adm := &admission{rewrite: map[string]string{"myapp:1.0.1": shopMyapp}, refuse: func(ns string) error {
		switch ns {
		case "shop":
			return rbac
		case "full":
			return quota
		}
		return nil
	}}
	answers, warnings := probe.Ask(context.Background(), adm.client(), []snapshot.AdmissionQuestion{
		{Namespace: "full", Image: "myapp:1.0.1"}, {Namespace: "ok", Image: "myapp:1.0.1"},
		{Namespace: "shop", Image: "myapp:1.0.1"}, {Namespace: "shop", Image: "tools:2"},
	})
	want := map[snapshot.AdmissionQuestion]snapshot.AdmissionAnswer{
		{Namespace: "full", Image: "myapp:1.0.1"}: {Error: `pods "stsdiag-probe-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`},
		{Namespace: "ok", Image: "myapp:1.0.1"}:   {Written: shopMyapp},
		{Namespace: "shop", Image: "myapp:1.0.1"}: {Error: `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "shop"`},
		{Namespace: "shop", Image: "tools:2"}:     {Error: `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "shop"`},
	}
	if !reflect.DeepEqual(answers, want) {
		t.Errorf("answers %+v\nwant %+v", answers, want)
	}
	wantWarnings := []string{
		`image predictions not confirmed with admission: a server-side dry run of a probe pod in namespace "full" failed: pods "stsdiag-probe-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`,
		`image predictions not confirmed with admission: a server-side dry run of a probe pod in namespace "shop" failed: pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "shop" (needs create pods there: deploy/confirm-clusterrole.yaml)`,
	}
	if !reflect.DeepEqual(warnings, wantWarnings) {
		t.Errorf("warnings\n%q\nwant\n%q", warnings, wantWarnings)
	}
}

// source is a gather.Source of one snapshot.
type source struct{ snap *snapshot.Snapshot }

func (s source) Snapshot(context.Context) (*snapshot.Snapshot, []string, error) {
	return s.snap, []string{"events not listed"}, nil
}

// TestSource: the snapshot carries admission's answers to the resolver's questions about it,
// asked with one probe per namespace and resolve-names setting.
func TestSource(t *testing.T) {
	snap, err := snapshot.LoadFile("../../testdata/admission/objects.yaml", snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	adm := &admission{rewrite: map[string]string{"myapp:1.0.1": shopMyapp}}
	got, warnings, err := probe.Source{Source: source{snap}, Kube: adm.client()}.Snapshot(context.Background())
	if err != nil || !reflect.DeepEqual(warnings, []string{"events not listed"}) {
		t.Fatalf("%v %q", err, warnings)
	}
	if len(adm.requests) != 3 || len(got.Admission) != 4 {
		t.Errorf("%d probes, %d answers; want 3 probes (other, shop, shop forced), 4 answers", len(adm.requests), len(got.Admission))
	}
	if a := got.Admission[snapshot.AdmissionQuestion{Namespace: "shop", Image: "myapp:1.0.1"}]; a.Written != shopMyapp {
		t.Errorf("shop myapp:1.0.1: %+v", a)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
