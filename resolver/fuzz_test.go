package resolver_test

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
	imagev1 "github.com/openshift/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stsdiag/stsdiag/resolver"
)

// FuzzResolve checks that the parser never panics, accepts what Docker's grammar
// (github.com/distribution/reference) accepts apart from two known differences, round-trips
// through Exact, and that what admission writes for any input is a valid reference that is never
// an empty or bare digest. Seeds: f.Add below and testdata/fuzz/FuzzResolve.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"myapp", "myapp:1.0.1", "ns/myapp:tag", "quay.io/a/b@sha256:" + sha, "localhost:5000/x", "a/b/c/d",
		"UPPER", "x@y", "python3.9:v1", "localhost-app", "app:1@sha256:" + sha, "app"} {
		f.Add(s)
	}
	stream := &imagev1.ImageStream{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
			Tags: []imagev1.TagReference{{Name: "1", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}}}},
		Status: imagev1.ImageStreamStatus{DockerImageRepository: "image-registry.openshift-image-registry.svc:5000/ns/app",
			Tags: []imagev1.NamedTagEventList{{Tag: "1", Items: []imagev1.TagEvent{{Image: "sha256:" + sha}}},
				{Tag: "latest", Items: []imagev1.TagEvent{{DockerImageReference: "quay.io/x/app:latest"}}}}},
	}
	adm := &resolver.Admission{Stream: func(ns, name string) *imagev1.ImageStream {
		if ns == "ns" && name == "app" {
			return stream
		}
		return nil
	}}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := resolver.Parse(s)
		_, dockerErr := reference.Parse(s)
		// Known grammar differences: Docker's newer grammar accepts IPv6 hosts, and library-go's
		// digest check accepts upper-case hex.
		if (err == nil) != (dockerErr == nil) && !strings.Contains(s, "[") && !(err == nil && strings.ContainsAny(r.ID, "ABCDEF")) {
			t.Fatalf("%q: library-go grammar says %v, Docker's %v", s, err, dockerErr)
		}
		for _, forced := range []bool{false, true} {
			res := adm.Resolve(s, "ns", forced)
			if res.Image != "" {
				w, err := resolver.Parse(res.Image)
				if err != nil || w.Name == "" || strings.HasSuffix(res.Image, "@") {
					t.Fatalf("%q (forced %v): admission writes %q (%v)", s, forced, res.Image, err)
				}
			}
		}
		if err != nil {
			return
		}
		if r.Name == "" {
			if r.Registry != s || r.Exact() != "" {
				t.Fatalf("%q: registry-only but %+v", s, r)
			}
			return
		}
		if r.Local(true) && (r.ID != "" || strings.Contains(r.Name, "/")) || r.Local(false) && (r.Registry != "" || r.Namespace != "") {
			t.Fatalf("%q: local but %+v", s, r)
		}
		exact := r.Exact()
		if r.Tag == "" || r.ID == "" {
			if exact != s {
				t.Fatalf("%q round-trips to %q", s, exact)
			}
		} else {
			r.Tag = "" // the digest wins: name:tag@digest is written name@digest
		}
		if again, err := resolver.Parse(exact); err != nil || again != r {
			t.Fatalf("%q: Exact %q reparses to %+v, want %+v (%v)", s, exact, again, r, err)
		}
	})
}
