package resolver_test

import (
	"fmt"
	"strings"

	imagev1 "github.com/openshift/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/resolver"
)

// An ImageStream with lookupPolicy.local and tag 1.0.1 pushed: admission rewrites the local name
// to the pushed image's digest in the integrated registry — and leaves a name it does not know.
func ExampleResolve() {
	const digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	repo := "image-registry.openshift-image-registry.svc:5000/demo/myapp"
	streams := []imagev1.ImageStream{{
		ObjectMeta: metav1.ObjectMeta{Name: "myapp", Namespace: "demo"},
		Spec:       imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}},
		Status: imagev1.ImageStreamStatus{DockerImageRepository: repo, Tags: []imagev1.NamedTagEventList{{
			Tag: "1.0.1", Items: []imagev1.TagEvent{{DockerImageReference: repo + "@" + digest, Image: digest}}}}},
	}}
	for _, image := range []string{"myapp:1.0.1", "myapp:9.9", "nginx:1.25", "quay.io/team/app:v1"} {
		r := resolver.Resolve(image, "demo", streams, false)
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s %s", image, r.Outcome, r.Image)))
	}
	// Output:
	// myapp:1.0.1: Resolved image-registry.openshift-image-registry.svc:5000/demo/myapp@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
	// myapp:9.9: TagNotFound image-registry.openshift-image-registry.svc:5000/demo/myapp:9.9
	// nginx:1.25: NoStream
	// quay.io/team/app:v1: NotLocal
}
