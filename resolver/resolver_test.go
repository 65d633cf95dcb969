package resolver_test

import (
	"testing"

	imagev1 "github.com/openshift/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stsdiag/stsdiag/resolver"
)

// TestParse covers what upstream's table does not: the names of issue 11 and the local-name test.
func TestParse(t *testing.T) {
	cases := []struct {
		in            string
		want          resolver.Ref
		local, forced bool
		exact         string
	}{
		{in: "myapp", want: resolver.Ref{Name: "myapp"}, local: true, forced: true, exact: "myapp"},
		{in: "myapp:1.0.1", want: resolver.Ref{Name: "myapp", Tag: "1.0.1"}, local: true, forced: true, exact: "myapp:1.0.1"},
		{in: "team/myapp:1", want: resolver.Ref{Namespace: "team", Name: "myapp", Tag: "1"}, forced: true, exact: "team/myapp:1"},
		{in: "quay.io/team/app:v1", want: resolver.Ref{Registry: "quay.io", Namespace: "team", Name: "app", Tag: "v1"}, forced: true, exact: "quay.io/team/app:v1"},
		// A single segment with '.' or a localhost prefix is a registry without a name.
		{in: "python3.9:v1", want: resolver.Ref{Registry: "python3.9:v1"}},
		{in: "localhostapp:v1", want: resolver.Ref{Registry: "localhostapp:v1"}},
		{in: "localhost-app:1", want: resolver.Ref{Registry: "localhost-app:1"}},
		{in: "my.app:1@sha256:" + sha, want: resolver.Ref{Registry: "my.app:1@sha256:" + sha, ID: "sha256:" + sha}},
		// A name with a '/' never resolves, forced or not.
		{in: "a/b/c:1", want: resolver.Ref{Namespace: "a", Name: "b/c", Tag: "1"}, exact: "a/b/c:1"},
		// The digest wins over the tag in what admission writes.
		{in: "app:1@sha256:" + sha, want: resolver.Ref{Name: "app", Tag: "1", ID: "sha256:" + sha}, exact: "app@sha256:" + sha},
		// Upper-case hex passes library-go's digest check.
		{in: "app@sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
			want:  resolver.Ref{Name: "app", ID: "sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"},
			exact: "app@sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"},
	}
	for _, c := range cases {
		r, err := resolver.Parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if r != c.want {
			t.Errorf("%s: parsed %+v, want %+v", c.in, r, c.want)
		}
		if r.Local(false) != c.local || r.Local(true) != c.forced {
			t.Errorf("%s: local %v/%v, want %v/%v", c.in, r.Local(false), r.Local(true), c.local, c.forced)
		}
		if r.Exact() != c.exact {
			t.Errorf("%s: Exact() = %q, want %q", c.in, r.Exact(), c.exact)
		}
	}
	for _, bad := range []string{"", "MyApp", "my app", "myapp:", ":tag", "myapp@sha256:short", "app@md5:" + sha[:32], "[::1]:5000/app"} {
		if _, err := resolver.Parse(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// TestAdmitRequests covers the request rules the upstream tables leave untested on a local name
// that resolves: controller owners, resources without a rule, updates.
func TestAdmitRequests(t *testing.T) {
	stream := &imagev1.ImageStream{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"},
		Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true}},
		Status: imagev1.ImageStreamStatus{Tags: []imagev1.NamedTagEventList{{Tag: "1", Items: []imagev1.TagEvent{
			{DockerImageReference: "quay.io/team/app:1", Image: "sha256:" + sha}}}}}}
	adm := &resolver.Admission{Stream: func(ns, name string) *imagev1.ImageStream {
		if ns == "shop" && name == "app" {
			return stream
		}
		return nil
	}}
	const resolved = "quay.io/team/app@sha256:" + sha
	sts := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	cases := []struct {
		name string
		req  resolver.Request
		want string
	}{
		{"create", resolver.Request{Resource: sts}, resolved},
		{"controller owner (imagepolicy.go:198-205)", resolver.Request{Resource: sts, ControllerOwned: true}, "app:1"},
		{"no rule for podtemplates (imagepolicy.go:194-196)", resolver.Request{Resource: schema.GroupResource{Resource: "podtemplates"}}, "app:1"},
		{"update, image unchanged (pods.go:221-273)", resolver.Request{Resource: sts, Update: true, HasOld: true, OldImage: "app:1"}, "app:1"},
		{"update, image changed", resolver.Request{Resource: sts, Update: true, HasOld: true, OldImage: "app:0"}, resolved},
		{"update, container new", resolver.Request{Resource: sts, Update: true}, resolved},
		{"update, resolve-names added", resolver.Request{Resource: sts, Update: true, HasOld: true, OldImage: "app:1", Forced: true}, resolved},
		{"update of a job (imagepolicy.go:478-494)", resolver.Request{Resource: schema.GroupResource{Group: "batch", Resource: "jobs"}, Update: true}, "app:1"},
	}
	for _, c := range cases {
		c.req.Namespace, c.req.Image = "shop", "app:1"
		if got := adm.Admit(c.req); got != c.want {
			t.Errorf("%s: admission writes %q, want %q", c.name, got, c.want)
		}
	}
}
