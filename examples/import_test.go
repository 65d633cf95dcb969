// Package examples is a module of its own that imports stsdiag's public packages as any other
// project would (a replace directive points at this checkout): proof that the rule engine, the
// image lookup model and the OpenShift verbs are usable from outside the module.
package examples

import (
	"context"
	"os"
	"testing"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/openshift"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// TestDiagnoseAScenario: kubernetes#67250 from testdata, through the public rule engine.
func TestDiagnoseAScenario(t *testing.T) {
	f, err := os.Open("../testdata/stuck/stale-revision-stuck-1-replica/objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := stuck.Load(f, now)
	if err != nil {
		t.Fatal(err)
	}
	res := stuck.Diagnose(objs, stuck.DefaultOptions())
	if !res.Stuck() || len(res.Findings) != 1 {
		t.Fatalf("findings %+v", res.Findings)
	}
	got := res.Findings[0]
	stale, ok := got.Facts.(facts.StaleStuck)
	if got.Code != apiv1.StaleRevisionStuck || got.Pod != "web-0" || !ok || stale.Startup.Reason != "ImagePullBackOff" || got.Target == nil {
		t.Errorf("finding %s %s %+v", got.Code, got.Pod, got.Facts)
	}
}

// TestDiagnoseImages: the OpenShift 4.8 case from testdata, through the public rule engine, which
// applies OpenShift's image lookup when the objects say OpenShift.
func TestDiagnoseImages(t *testing.T) {
	objs, err := stuck.LoadFile("../testdata/resolver/seed/objects.yaml", now)
	if err != nil {
		t.Fatal(err)
	}
	var found []stuck.Finding
	for _, f := range stuck.Diagnose(objs, stuck.DefaultOptions()).Findings {
		if f.Code == apiv1.UnresolvedImageReference {
			found = append(found, f)
		}
	}
	if len(found) != 1 || found[0].Code != apiv1.UnresolvedImageReference || found[0].Patch == nil ||
		found[0].Patch.To != "image-registry.openshift-image-registry.svc:5000/demo/statefulset-issue-demo@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
		t.Fatalf("findings %+v", found)
	}
}

// TestResolveAndPatch: the image lookup model, then the OpenShift verbs on fake clientsets.
func TestResolveAndPatch(t *testing.T) {
	const digest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	repo := "image-registry.openshift-image-registry.svc:5000/shop/db"
	stream := imagev1.ImageStream{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
		Spec:       imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}},
		Status: imagev1.ImageStreamStatus{DockerImageRepository: repo, Tags: []imagev1.NamedTagEventList{{
			Tag: "16", Items: []imagev1.TagEvent{{DockerImageReference: repo + "@" + digest, Image: digest}}}}},
	}
	if r := resolver.Resolve("db:16", "shop", []imagev1.ImageStream{stream}, false); r.Outcome != resolver.Resolved || r.Image != repo+"@"+digest {
		t.Fatalf("resolver.Resolve: %+v", r)
	}
	ctx := context.Background()
	images := imagefake.NewClientset(&stream)
	if ok, err := openshift.Detect(images.Discovery()); err != nil || ok {
		// The fake serves no discovery document for the image API.
		t.Logf("Detect on the fake: %t %v", ok, err)
	}
	r, err := openshift.Resolve(ctx, images, "shop", "db:16", false)
	if err != nil || r.Image != repo+"@"+digest {
		t.Fatalf("openshift.Resolve: %+v %v", r, err)
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "db-uid"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "db", Image: "db:16"}}}}}}
	kube := fake.NewClientset(set)
	patched, err := openshift.PatchDigest(ctx, kube, set, "db", r.Image, false)
	if err != nil || patched.Spec.Template.Spec.Containers[0].Image != repo+"@"+digest || patched.Spec.Template.Spec.InitContainers[0].Image != "busybox:1" {
		t.Fatalf("PatchDigest: %v %+v", err, patched)
	}
	if _, err := openshift.PatchDigest(ctx, kube, set, "db", "db:17", false); err == nil {
		t.Error("a patch from a stale read overwrote the digest")
	}
}
