package probe_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/fix"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/probe"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/read"
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
	questions := []stuck.AdmissionQuestion{
		{Namespace: "other", Image: "myapp:9.9"},
		{Namespace: "shop", Image: "myapp:1.0.1"},
		{Namespace: "shop", Image: "tools:2"},
		{Namespace: "shop", Image: "myapp:1.0.1"},
		{Namespace: "shop", Forced: true, Image: "quay.io/team/myapp:1.0.1"},
	}
	answers, warnings := probe.Ask(context.Background(), adm.client(), questions)
	want := map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{
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
	answers, warnings := probe.Ask(context.Background(), adm.client(), []stuck.AdmissionQuestion{
		{Namespace: "full", Image: "myapp:1.0.1"}, {Namespace: "ok", Image: "myapp:1.0.1"},
		{Namespace: "shop", Image: "myapp:1.0.1"}, {Namespace: "shop", Image: "tools:2"},
	})
	want := map[stuck.AdmissionQuestion]stuck.AdmissionAnswer{
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
type source struct{ snap *stuck.Objects }

func (s source) Snapshot(context.Context) (*stuck.Objects, []string, error) {
	return s.snap, []string{"events not listed"}, nil
}

// TestSource: the snapshot carries admission's answers to the resolver's questions about it,
// asked with one probe per namespace and resolve-names setting.
func TestSource(t *testing.T) {
	snap, err := stuck.LoadFile("../../testdata/admission/objects.yaml", snapshottest.Now)
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
	if a := got.Admission[stuck.AdmissionQuestion{Namespace: "shop", Image: "myapp:1.0.1"}]; a.Written != shopMyapp {
		t.Errorf("shop myapp:1.0.1: %+v", a)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestSourceFor: a fresh LIST of the scope, asking admission only when told to.
func TestSourceFor(t *testing.T) {
	for _, admission := range []bool{false, true} {
		src := gather.SourceFor(gather.Clients{}, gather.Scope{Namespace: "shop"}, admission)
		_, asks := src.(probe.Source)
		lister, lists := src.(gather.Lister)
		if asks != admission || lists == admission {
			t.Errorf("admission %v: source %T", admission, src)
		}
		if lists && lister.Scope.Namespace != "shop" {
			t.Errorf("the LIST reads namespace %q, want shop", lister.Scope.Namespace)
		}
	}
}

// TestFixTrustsAdmission: fix with Admission (reading through probe.Source) patches what admission wrote (here the
// tag form, not the digest the model predicts), says so in the action, and asks admission with one
// probe per diagnosis.
func TestFixTrustsAdmission(t *testing.T) {
	const tagForm = "image-registry.openshift-image-registry.svc:5000/shop/myapp:1.0.1"
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "web-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "myapp:1.0.1"}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1},
	}
	stream := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "myapp", Namespace: "shop"},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}},
		Status: imagev1.ImageStreamStatus{DockerImageRepository: "image-registry.openshift-image-registry.svc:5000/shop/myapp",
			Tags: []imagev1.NamedTagEventList{{Tag: "1.0.1", Items: []imagev1.TagEvent{{Image: d1,
				DockerImageReference: "image-registry.openshift-image-registry.svc:5000/shop/myapp@" + d1}}}}}}
	adm := &admission{rewrite: map[string]string{"myapp:1.0.1": tagForm}}
	kube := adm.client()
	if _, err := kube.AppsV1().StatefulSets("shop").Create(context.Background(), set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := gather.Clients{Clients: read.Clients{Kube: kube, Image: imagefake.NewClientset(stream)}}
	scope := gather.Scope{Namespace: "shop", OpenShift: openshift.ModeAlways}
	o := fix.Options{}
	o.Clients, o.Scope, o.Diagnosis, o.DryRun = c, scope, stuck.DefaultOptions(), apiv1.DryRunNone
	o.Admission = true
	res, err := fix.Run(context.Background(), o)
	if err != nil || len(res.Actions) != 1 {
		t.Fatalf("fix: %v %+v", err, res)
	}
	a := res.Actions[0]
	wantCheck := apiv1.AdmissionCheck{Result: apiv1.AdmissionDiffers, Predicted: "image-registry.openshift-image-registry.svc:5000/shop/myapp@" + d1, Written: tagForm}
	if a.Action.Action != apiv1.PatchImage || a.To != tagForm || a.Result != apiv1.ResultDone || a.Admission == nil || *a.Admission != wantCheck {
		t.Errorf("action %+v (admission %+v)", a.Action, a.Admission)
	}
	got, err := kube.AppsV1().StatefulSets("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || got.Spec.Template.Spec.Containers[0].Image != tagForm {
		t.Errorf("stored image %q (%v), want %s", got.Spec.Template.Spec.Containers[0].Image, err, tagForm)
	}
	if len(adm.requests) == 0 {
		t.Error("admission was never asked")
	}
	for _, pod := range adm.requests {
		if len(pod.Spec.Containers)+len(pod.Spec.InitContainers) != 1 || pod.Spec.Containers[0].Image != "myapp:1.0.1" {
			t.Errorf("probe %+v", pod.Spec)
		}
	}
}
