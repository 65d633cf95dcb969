package resolver_test

import (
	"fmt"

	imagev1 "github.com/openshift/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/resolver"
)

func ExampleParse() {
	for _, image := range []string{"myapp:1.0.1", "team/myapp", "quay.io/team/myapp:2", "myapp@sha256:" + sha} {
		ref, _ := resolver.Parse(image)
		fmt.Printf("%-28.28s local=%v local-with-annotation=%v tag=%s\n", image, ref.Local(false), ref.Local(true), ref.TagOrLatest())
	}
	// Output:
	// myapp:1.0.1                  local=true local-with-annotation=true tag=1.0.1
	// team/myapp                   local=false local-with-annotation=true tag=latest
	// quay.io/team/myapp:2         local=false local-with-annotation=false tag=2
	// myapp@sha256:9f86d081884c7d6 local=false local-with-annotation=false tag=latest
}

func ExampleResolve() {
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
	fmt.Println(resolver.Resolve(stream, "1.0.1").Image)
	fmt.Println(resolver.Resolve(stream, "2.0").Image, resolver.Resolve(stream, "2.0").TagMissing)
	// Output:
	// image-registry.openshift-image-registry.svc:5000/shop/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
	// image-registry.openshift-image-registry.svc:5000/shop/myapp:2.0 true
}
