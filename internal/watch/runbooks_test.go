package watch

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const runbookBase = "https://github.com/stsdiag/stsdiag/blob/main/docs/runbooks/"

// TestRunbooks: every alert of deploy/monitoring/prometheusrule.yaml links its runbook in the
// repository, docs/runbooks/<alert>.md, which exists, names the alert and has a mitigation; so
// does the one for kube-prometheus' KubeStatefulSetUpdateNotRolledOut.
func TestRunbooks(t *testing.T) {
	data, err := os.ReadFile("../../deploy/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatal(err)
	}
	alerts := []string{"KubeStatefulSetUpdateNotRolledOut"}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if got, want := r.Annotations["runbook_url"], runbookBase+r.Alert+".md"; got != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
			}
			alerts = append(alerts, r.Alert)
		}
	}
	if len(alerts) < 13 {
		t.Fatalf("only %d alerts", len(alerts))
	}
	for _, a := range alerts {
		md, err := os.ReadFile("../../docs/runbooks/" + a + ".md")
		if err != nil {
			t.Errorf("%s: %v", a, err)
			continue
		}
		text := string(md)
		if !strings.HasPrefix(text, "# "+a+"\n") || !strings.Contains(text, "## Mitigation") || !strings.Contains(text, "stsdiag") {
			t.Errorf("%s: the runbook needs the alert as its title and a Mitigation section", a)
		}
	}
	upstream, _ := os.ReadFile("../../docs/runbooks/KubeStatefulSetUpdateNotRolledOut.md")
	for _, cmd := range []string{"kubectl stsdiag explain", "kubectl stsdiag check", "kubectl stsdiag fix"} {
		if !strings.Contains(string(upstream), cmd) {
			t.Errorf("KubeStatefulSetUpdateNotRolledOut.md does not show %s", cmd)
		}
	}
}
