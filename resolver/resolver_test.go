package resolver_test

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/resolver"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/snapshot/snapshottest"
)

// TestScenarios runs every folder of testdata/resolver: one per rule of OpenShift's image lookup.
func TestScenarios(t *testing.T) {
	snapshottest.Run(t, "../testdata/resolver", func(s *snapshot.Snapshot) ([]apiv1.Finding, []apiv1.StatefulSetSummary) {
		return resolver.Diagnose(s, "oc"), nil
	})
}

func TestParse(t *testing.T) {
	cases := []struct {
		in            string
		registry, ns  string
		name, tag     string
		digest        string
		local, forced bool
	}{
		{in: "myapp", name: "myapp", local: true, forced: true},
		{in: "myapp:1.0.1", name: "myapp", tag: "1.0.1", local: true, forced: true},
		{in: "team/myapp:1", ns: "team", name: "myapp", tag: "1", local: false, forced: true},
		{in: "quay.io/team/myapp:1", registry: "quay.io", ns: "team", name: "myapp", tag: "1"},
		{in: "localhost/myapp", registry: "localhost", name: "myapp"},
		{in: "registry:5000/myapp", registry: "registry:5000", name: "myapp"},
		{in: "docker.io/library/myapp:1", registry: "docker.io", ns: "library", name: "myapp", tag: "1"},
		{in: "myapp@sha256:" + sha, name: "myapp", digest: "sha256:" + sha},
		{in: "a/b/c:1", ns: "a/b", name: "c", tag: "1"},
	}
	for _, c := range cases {
		r, err := resolver.Parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if r.Registry != c.registry || r.Namespace != c.ns || r.Name != c.name || r.Tag != c.tag || r.Digest != c.digest {
			t.Errorf("%s: parsed %+v", c.in, r)
		}
		if r.Local(false) != c.local || r.Local(true) != c.forced {
			t.Errorf("%s: local %v/%v, want %v/%v", c.in, r.Local(false), r.Local(true), c.local, c.forced)
		}
		if r.Exact() != c.in {
			t.Errorf("%s: Exact() = %s", c.in, r.Exact())
		}
	}
	for _, bad := range []string{"", "MyApp", "my app", "myapp:", ":tag", "myapp@sha256:short"} {
		if _, err := resolver.Parse(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
