package resolver_test

import (
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/resolver"
)

func ExampleParse() {
	for _, image := range []string{"myapp:1.0.1", "team/myapp", "quay.io/team/myapp:2", "python3.9:v1", "myapp@sha256:" + sha} {
		ref, _ := resolver.Parse(image)
		fmt.Printf("%-20.20s registry=%q name=%q local=%v local-with-annotation=%v\n", image, ref.Registry, ref.Name, ref.Local(false), ref.Local(true))
	}
	// Output:
	// myapp:1.0.1          registry="" name="myapp" local=true local-with-annotation=true
	// team/myapp           registry="" name="myapp" local=false local-with-annotation=true
	// quay.io/team/myapp:2 registry="quay.io" name="myapp" local=false local-with-annotation=true
	// python3.9:v1         registry="python3.9:v1" name="" local=false local-with-annotation=false
	// myapp@sha256:9f86d08 registry="" name="myapp" local=false local-with-annotation=false
}

func ExampleAdmission_Resolve() {
	stream := &imagev1.ImageStream{
		ObjectMeta: metav1.ObjectMeta{Name: "myapp", Namespace: "shop"},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
			Tags: []imagev1.TagReference{{Name: "1.0.1", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}}}},
		Status: imagev1.ImageStreamStatus{
			DockerImageRepository: "image-registry.openshift-image-registry.svc:5000/shop/myapp",
			Tags: []imagev1.NamedTagEventList{{Tag: "1.0.1", Items: []imagev1.TagEvent{{
				DockerImageReference: "quay.io/team/myapp@sha256:" + sha, Image: "sha256:" + sha}}}},
		},
	}
	adm := &resolver.Admission{Stream: func(ns, name string) *imagev1.ImageStream {
		if ns == "shop" && name == "myapp" {
			return stream
		}
		return nil
	}}
	for _, image := range []string{"myapp:1.0.1", "myapp:2.0", "quay.io/team/myapp:1.0.1"} {
		res := adm.Resolve(image, "shop", false)
		fmt.Printf("%s %q\n", res.Outcome, res.Image)
	}
	forced := adm.Resolve("quay.io/team/myapp:1.0.1", "shop", true)
	fmt.Printf("%s %q\n", forced.Outcome, forced.Image)
	// Output:
	// Resolved "image-registry.openshift-image-registry.svc:5000/shop/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	// TagNotFound "image-registry.openshift-image-registry.svc:5000/shop/myapp:2.0"
	// NotLocal ""
	// Resolved "image-registry.openshift-image-registry.svc:5000/shop/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
}
