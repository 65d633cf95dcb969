package gather

import (
	"sort"
	"testing"
)

// TestNamespaceBefore: the API server's key order, <prefix>/<namespace>/<name>, is not the
// namespaces' own order when one name prefixes another.
func TestNamespaceBefore(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a", "b", true},
		{"b", "a", false},
		{"a", "a", false},
		{"a-b", "a", true}, // "a-b/" < "a/": '-' < '/'
		{"a", "a-b", false},
		{"a", "a0", true}, // "a/" < "a0/": '/' < '0'
		{"a0", "a", false},
		{"a", "ab", true},
		{"kube-system", "kube", true},
		{"default", "kube-system", true},
	}
	for _, tc := range cases {
		if got := namespaceBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("namespaceBefore(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// The same order as sorting the keys themselves.
	names := []string{"a", "a-b", "a0", "ab", "b", "a-", "a--", "z9", "z-9", "z"}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = n + "/"
	}
	sort.Strings(keys)
	sort.Slice(names, func(i, j int) bool { return namespaceBefore(names[i], names[j]) })
	for i := range names {
		if names[i]+"/" != keys[i] {
			t.Fatalf("namespaces in order %q, keys %q", names, keys)
		}
	}
}
