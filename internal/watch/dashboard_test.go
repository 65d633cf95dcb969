package watch

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// exportedLabels are the label names of each series watch's registry exports (histogram
// buckets add le), read from the registry's descriptions.
func exportedLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	m := NewMetrics()
	descs := make(chan *prometheus.Desc, 256)
	go func() { m.Registry.Describe(descs); close(descs) }()
	desc := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string]map[string]bool{}
	for d := range descs {
		match := desc.FindStringSubmatch(d.String())
		if match == nil {
			continue
		}
		labels := map[string]bool{}
		for _, l := range strings.Split(match[2], ",") {
			if l != "" {
				labels[l] = true
			}
		}
		out[match[1]] = labels
	}
	for name := range exportedSeries(t) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && out[base] != nil {
				labels := map[string]bool{}
				for l := range out[base] {
					labels[l] = true
				}
				if suffix == "_bucket" {
					labels["le"] = true
				}
				out[name] = labels
			}
		}
	}
	if len(out["stsdiag_repairs_total"]) != 3 || !out["stsdiag_findings"]["code"] {
		t.Fatalf("labels not read from the registry: %v", out)
	}
	return out
}

var (
	grafanaVar   = regexp.MustCompile(`\$\{?[a-zA-Z_]+\}?`)
	selector     = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	groupLabels  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValues  = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{([^}]*)\})?\s*,\s*([a-zA-Z_]+)\s*\)$`)
)

// dashboards are the shipped dashboards by the cluster label their queries also group by: one
// cluster's, and the one for a store of many clusters' series (a cluster variable).
var dashboards = map[string]string{"": "../../deploy/monitoring/dashboard.json", "cluster": "../../deploy/monitoring/multicluster/dashboard.json"}

// dashboardQueries are the PromQL expressions of a dashboard's panels and the label_values
// queries of its variables, with the variables' names.
func dashboardQueries(t *testing.T, path string) (exprs []string, variables []string, names []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	if dash.UID == "" || len(dash.Panels) < 8 {
		t.Fatalf("uid %q, %d panels", dash.UID, len(dash.Panels))
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			variables = append(variables, s)
			names = append(names, v.Name)
		}
	}
	return exprs, variables, names
}

// TestDashboardQueries: every query of the Grafana dashboards selects only series watch
// exports, filters and groups only by labels those series carry, and names only finding codes;
// the variables read label values watch sets. In the multi-cluster dashboard the cluster label
// (Prometheus' external label, not watch's) is a variable, and every query filters and groups
// by it.
func TestDashboardQueries(t *testing.T) {
	for cluster, path := range dashboards {
		t.Run(path, func(t *testing.T) { checkDashboard(t, path, cluster) })
	}
}

func checkDashboard(t *testing.T, path, cluster string) {
	series := exportedSeries(t)
	labels := exportedLabels(t)
	has := func(metric, label string) bool { return labels[metric][label] || (cluster != "" && label == cluster) }
	exprs, variables, names := dashboardQueries(t, path)
	for _, q := range append([]string{`sum by (stsdiag) (up{jobb="x"})`}, exprs...) {
		bad := q == `sum by (stsdiag) (up{jobb="x"})` // the test's own canary: must be refused
		var problems []string
		e := grafanaVar.ReplaceAllString(q, "5m")
		names := metricNames(e)
		if len(names) == 0 {
			problems = append(problems, "names no metric")
		}
		for _, n := range names {
			if !series[n] {
				problems = append(problems, n+" is not a metric watch exports")
			}
		}
		selectors := selector.FindAllStringSubmatch(quoted.ReplaceAllString(e, `""`), -1)
		for _, m := range selectors {
			for _, l := range matcherLabel.FindAllStringSubmatch(m[2], -1) {
				if !has(m[1], l[1]) {
					problems = append(problems, m[1]+" has no label "+l[1])
				}
			}
			if cluster != "" && !bad && !strings.HasPrefix(m[2], cluster+`=~""`) {
				problems = append(problems, m[1]+" is not filtered by the "+cluster+" variable first")
			}
		}
		if cluster != "" && !bad && len(selectors) < len(names) {
			problems = append(problems, "a metric without the "+cluster+" filter")
		}
		for _, g := range groupLabels.FindAllStringSubmatch(e, -1) {
			if cluster != "" && !bad && !strings.HasPrefix(strings.TrimSpace(g[1]), cluster+",") {
				problems = append(problems, g[0]+" does not group by "+cluster)
			}
			for _, l := range strings.Split(g[1], ",") {
				l = strings.TrimSpace(l)
				for _, n := range names {
					if l != "" && !has(n, l) {
						problems = append(problems, n+" has no label "+l+" to group by")
					}
				}
			}
		}
		for _, m := range codeMatch.FindAllStringSubmatch(e, -1) {
			for _, code := range strings.Split(m[1], "|") {
				if !codes[code] {
					problems = append(problems, code+" is not a finding code")
				}
			}
		}
		if bad != (len(problems) > 0) {
			t.Errorf("%s: %v", q, problems)
		}
	}
	if len(variables) == 0 {
		t.Error("no namespace variable")
	}
	for _, v := range variables {
		m := labelValues.FindStringSubmatch(v)
		if m == nil || !has(m[1], m[3]) {
			t.Errorf("variable query %q: not label_values of a label watch sets", v)
		}
	}
	if cluster != "" && (len(names) < 2 || names[0] != cluster || names[1] != "namespace") {
		t.Errorf("variables %v: want %s, then namespace", names, cluster)
	}
	// Every metric watch exports is on the dashboard.
	seen := map[string]bool{}
	for _, q := range exprs {
		for _, n := range metricNames(grafanaVar.ReplaceAllString(q, "5m")) {
			seen[strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count")] = true
		}
	}
	var missing []string
	for _, want := range []string{"stsdiag_findings", "stsdiag_statefulset_findings", "stsdiag_findings_total", "stsdiag_repairs_total", "stsdiag_diagnosis_duration_seconds"} {
		if !seen[want] {
			missing = append(missing, want)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("not on the dashboard: %v", missing)
	}
}
