package resolver_test

import (
	"strings"
	"testing"

	"github.com/stsdiag/stsdiag/resolver"
)

// FuzzResolve checks the parser never panics, round-trips what it accepts, and that a local name
// never carries a registry or digest. Seeds: f.Add below and testdata/fuzz/FuzzResolve.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"myapp", "myapp:1.0.1", "ns/myapp:tag", "quay.io/a/b@sha256:" + sha, "localhost:5000/x", "a/b/c/d", "UPPER", "x@y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := resolver.Parse(s)
		if err != nil {
			return
		}
		if r.Exact() != s {
			t.Fatalf("%q round-trips to %q", s, r.Exact())
		}
		again, err := resolver.Parse(r.Exact())
		if err != nil || again != r {
			t.Fatalf("%q: reparse %+v vs %+v (%v)", s, again, r, err)
		}
		if r.Local(true) && (r.Registry != "" || r.Digest != "" || strings.Contains(r.Namespace, "/")) {
			t.Fatalf("%q: local but %+v", s, r)
		}
		if r.Name == "" {
			t.Fatalf("%q: empty name", s)
		}
	})
}
