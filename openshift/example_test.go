package openshift_test

import (
	"context"
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	imagefake "github.com/openshift/client-go/image/clientset/versioned/fake"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stsdiag/stsdiag/openshift"
)

const digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// Resolve the image a StatefulSet names by its ImageStream's local name, then pin the template to
// that digest; a patch made on a StatefulSet someone changed meanwhile is refused.
func Example() {
	ctx := context.Background()
	repo := "image-registry.openshift-image-registry.svc:5000/demo/myapp"
	images := imagefake.NewClientset(&imagev1.ImageStream{
		ObjectMeta: metav1.ObjectMeta{Name: "myapp", Namespace: "demo"},
		Spec:       imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}},
		Status: imagev1.ImageStreamStatus{DockerImageRepository: repo, Tags: []imagev1.NamedTagEventList{{
			Tag: "1.0.1", Items: []imagev1.TagEvent{{DockerImageReference: repo + "@" + digest, Image: digest}}}}},
	})
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", UID: "web-uid"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "myapp:1.0.1"}}}}}}
	kube := fake.NewClientset(set)

	r, err := openshift.Resolve(ctx, images, "demo", "myapp:1.0.1", false)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Outcome, r.Image)

	patched, err := openshift.PatchDigest(ctx, kube, set, "app", r.Image, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(patched.Spec.Template.Spec.Containers[0].Image)

	// set still says myapp:1.0.1: the patch's test fails and nothing is overwritten.
	if _, err := openshift.PatchDigest(ctx, kube, set, "app", "myapp:2.0", false); err != nil {
		fmt.Println("refused")
	}
	// Output:
	// Resolved image-registry.openshift-image-registry.svc:5000/demo/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
	// image-registry.openshift-image-registry.svc:5000/demo/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
	// refused
}
