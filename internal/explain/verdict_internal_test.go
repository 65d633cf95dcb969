package explain

import "testing"

// TestOneLine: a multi-line PromQL query on one line, its comments dropped, a # inside a
// string kept.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# web at web-7d\nsum(rate(x[1m]))\n  / sum(rate(y[1m]))", "sum(rate(x[1m])) / sum(rate(y[1m]))"},
		{`sum(x{path="/a#b"}) # the ratio`, `sum(x{path="/a#b"})`},
		{`sum(x{path="a\"#"}) by (pod)`, `sum(x{path="a\"#"}) by (pod)`},
		{"sum(x)", "sum(x)"},
	} {
		if got := promQLLine(tc.in); got != tc.want {
			t.Errorf("promQLLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
