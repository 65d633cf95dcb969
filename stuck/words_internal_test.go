package stuck

import (
	"testing"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck/facts"
)

// TestCLI: remedies name the command Options.CLI says, else oc on OpenShift and kubectl elsewhere.
func TestCLI(t *testing.T) {
	cases := []struct {
		name      string
		opts      Options
		openshift bool
		want      string
	}{
		{"default", Options{}, false, "kubectl delete pod -n shop web-1"},
		{"default on OpenShift", Options{}, true, "oc delete pod -n shop web-1"},
		{"kubectl on OpenShift", Options{CLI: "kubectl"}, true, "kubectl delete pod -n shop web-1"},
		{"oc", Options{CLI: "oc"}, false, "oc delete pod -n shop web-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Finding{Finding: apiv1.Finding{Code: apiv1.OnDeleteStale, Namespace: "shop", StatefulSet: "web"},
				Facts: facts.OnDeleteOld{Pods: []string{"web-0", "web-1"}, UpdateRevision: "web-b"}}
			f.Word(cliFor(c.opts, c.openshift))
			if f.Remedy != c.want {
				t.Errorf("remedy %q, want %q", f.Remedy, c.want)
			}
		})
	}
}

// TestNoFacts: a finding built without facts keeps its words.
func TestNoFacts(t *testing.T) {
	f := Finding{Finding: apiv1.Finding{Code: apiv1.OnDeleteStale, Message: "as written", Remedy: "by hand"}}
	f.Word("kubectl")
	if f.Message != "as written" || f.Remedy != "by hand" {
		t.Errorf("words changed: %+v", f.Finding)
	}
}
