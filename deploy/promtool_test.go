package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is Prometheus' own rule checker and unit tester, from Debian's prometheus package
// (e2e/prometheus.sh installs it; make unit runs that first).
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: e2e/prometheus.sh installs Debian's prometheus package (needs root and apt-get)")
	}
	return path
}

// TestPromtoolChecksRules: Prometheus' own parser accepts every shipped rule file.
func TestPromtoolChecksRules(t *testing.T) {
	bin := promtool(t)
	files, err := filepath.Glob("monitoring/rules/*.rules.yaml")
	if err != nil || len(files) != 2 {
		t.Fatalf("rule files %v (%v): want one cluster's and the multi-cluster ones", files, err)
	}
	if out, err := exec.Command(bin, append([]string{"check", "rules"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolUnitTestsRules runs the rules' unit tests (deploy/monitoring/tests): per
// StatefulSet and per cluster, their for:, a leader handoff, WatchDown per cluster, and
// stsdiag's alerts beside kubernetes-mixin's KubeStatefulSetUpdateNotRolledOut.
func TestPromtoolUnitTestsRules(t *testing.T) {
	bin := promtool(t)
	tests, err := filepath.Glob("monitoring/tests/*.test.yaml")
	if err != nil || len(tests) < 3 {
		t.Fatalf("rule tests %v (%v)", tests, err)
	}
	out, err := exec.Command(bin, append([]string{"test", "rules"}, tests...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "SUCCESS"); n != len(tests) {
		t.Errorf("%d of %d rule test files succeeded:\n%s", n, len(tests), out)
	}
}

// grafanaVariables are what Grafana puts for the dashboards' variables when it queries.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__range", "6h", "$namespace", ".*", "$cluster", ".*", "${datasource}", "")

// labelValuesQuery is a variable's label_values(SELECTOR, LABEL).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_]+\)$`)

// TestPromtoolParsesDashboardQueries: every query of both dashboards, and the selector of every
// variable, with Grafana's variables filled in, is PromQL Prometheus' parser accepts (as
// recording rules handed to promtool check rules).
func TestPromtoolParsesDashboardQueries(t *testing.T) {
	bin := promtool(t)
	for _, path := range []string{"monitoring/dashboard.json", "monitoring/multicluster/dashboard.json"} {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var dash struct {
				Panels []struct {
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
				Templating struct {
					List []struct {
						Query any `json:"query"`
					} `json:"list"`
				} `json:"templating"`
			}
			if err := json.Unmarshal(data, &dash); err != nil {
				t.Fatal(err)
			}
			var exprs []string
			for _, p := range dash.Panels {
				for _, tg := range p.Targets {
					exprs = append(exprs, tg.Expr)
				}
			}
			for _, v := range dash.Templating.List {
				if q, ok := v.Query.(map[string]any); ok {
					m := labelValuesQuery.FindStringSubmatch(fmt.Sprint(q["query"]))
					if m == nil {
						t.Fatalf("variable query %v is not label_values(SELECTOR, LABEL)", q["query"])
					}
					exprs = append(exprs, m[1])
				}
			}
			type rule struct {
				Record string `json:"record"`
				Expr   string `json:"expr"`
			}
			var rules []rule
			for i, e := range append(exprs, "sum by (code) (stsdiag_findings{namespace=~\".*\"}"+")"+")") {
				rules = append(rules, rule{Record: fmt.Sprintf("stsdiag:dashboard:%d", i), Expr: grafanaVariables.Replace(e)})
			}
			check := func(rules []rule) ([]byte, error) {
				file := filepath.Join(t.TempDir(), "dashboard.rules.yaml")
				data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return exec.Command(bin, "check", "rules", file).CombinedOutput()
			}
			// The last rule is the test's own canary, an unbalanced parenthesis: refused.
			if out, err := check(rules); err == nil || !strings.Contains(string(out), "stsdiag:dashboard:"+fmt.Sprint(len(rules)-1)) {
				t.Fatalf("promtool accepted a broken query, or refused another (%v):\n%s", err, out)
			}
			if out, err := check(rules[:len(rules)-1]); err != nil {
				t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", len(rules)-1, err, out)
			}
		})
	}
}
