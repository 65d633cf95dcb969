// Package monitoringsrc is the one source of stsdiag's alerts and Grafana dashboard: two
// templates (rules.yaml.tmpl, dashboard.json.tmpl) rendered for one cluster, or for a store
// that holds many clusters' series (Thanos, Mimir, federation, ACM observability) where every
// series carries a cluster label and every rule and query also aggregates by it, the
// kubernetes-mixin's convention (its config.libsonnet: clusterLabel, default "cluster").
// Files lists every file shipped from them (kustomize, Helm, plain rule files);
// deploy/monitoring_test.go keeps the committed files equal to it.
package monitoringsrc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

//go:embed rules.yaml.tmpl
var rulesTemplate string

//go:embed dashboard.json.tmpl
var dashboardTemplate string

// DefaultClusterLabel is the label the multi-cluster files aggregate by, as kubernetes-mixin's
// default clusterLabel.
const DefaultClusterLabel = "cluster"

// HelmClusterLabel stands for the cluster label in the Helm chart's multi-cluster rules; the
// chart's template replaces it with .Values.prometheusRule.clusterLabel.
const HelmClusterLabel = "__STSDIAG_CLUSTER_LABEL__"

// Regenerate is the command that rewrites the generated files.
const Regenerate = "cd deploy && go test . -run TestMonitoringFromOneSource -update"

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// CheckLabel reports whether label is a Prometheus label name stsdiag may aggregate by.
func CheckLabel(label string) error {
	if !labelName.MatchString(label) || strings.HasPrefix(label, "__") && label != HelmClusterLabel {
		return fmt.Errorf("cluster label %q: want a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", label)
	}
	switch label {
	case "namespace", "statefulset", "code", "reason", "action", "result", "phase", "le":
		return fmt.Errorf("cluster label %q: stsdiag's metrics already use that label", label)
	}
	return nil
}

// render fills a template for cluster ("": one cluster). dashboard selects the JSON-escaped
// form of the cluster matcher.
func render(name, text, cluster string, dashboard bool) ([]byte, error) {
	if cluster != "" {
		if err := CheckLabel(cluster); err != nil {
			return nil, err
		}
	}
	funcs := template.FuncMap{
		// by prefixes a grouping list with the cluster label.
		"by": func(labels string) string {
			if cluster == "" {
				return labels
			}
			return cluster + ", " + labels
		},
		// in is the words that name the alert's cluster.
		"in": func() string {
			if cluster == "" {
				return ""
			}
			return " in cluster {{ $labels." + cluster + " }}"
		},
		// sel starts a selector's matchers with the dashboard's cluster variable; only is a
		// selector of that variable alone.
		"sel": func() string {
			if cluster == "" {
				return ""
			}
			return cluster + `=~\"$` + cluster + `\", `
		},
		"only": func() string {
			if cluster == "" {
				return ""
			}
			return `{` + cluster + `=~\"$` + cluster + `\"}`
		},
	}
	if !dashboard {
		delete(funcs, "sel")
		delete(funcs, "only")
	}
	t, err := template.New(name).Delims("[[", "]]").Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, struct{ Cluster string }{cluster}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Groups renders the rule groups (a Prometheus rule file: `groups:`) for cluster.
func Groups(cluster string) ([]byte, error) {
	out, err := render("rules", rulesTemplate, cluster, false)
	if err != nil {
		return nil, err
	}
	var check struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(out, &check); err != nil || len(check.Groups) == 0 {
		return nil, fmt.Errorf("rules for cluster label %q are not a rule file: %v", cluster, err)
	}
	return out, nil
}

// Dashboard renders the Grafana dashboard for cluster: with a cluster, a variable of that name
// selects the clusters and every query filters and groups by it.
func Dashboard(cluster string) ([]byte, error) {
	out, err := render("dashboard", dashboardTemplate, cluster, true)
	if err != nil {
		return nil, err
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("dashboard for cluster label %q is not JSON", cluster)
	}
	return out, nil
}

// rulesHeader says what the rule files hold and where they come from.
func rulesHeader(cluster, by string) string {
	h := `# Generated from deploy/internal/monitoringsrc/rules.yaml.tmpl by ` + "`" + by + "`" + `; do not edit.
# Alerts on the metrics of ` + "`stsdiag watch`" + ` (internal/watch/metrics.go):
# stsdiag_statefulset_findings{namespace,statefulset,code,reason} (findings present now, one series
# per StatefulSet with a finding, exported by the leader), stsdiag_repairs_total{action,result,namespace},
# the canary counters and stsdiag_diagnosis_duration_seconds. watch reports a finding only once it is
# diagnosed; the ` + "`for:`" + ` below is how long it must then hold. Every expression is checked against
# the metrics watch exports by internal/watch/alerts_test.go, parsed by promtool, and the
# alerts' behaviour unit-tested (deploy/monitoring/tests, deploy/promtool_test.go).
`
	if cluster != "" {
		h += `# For a store holding many clusters' series (each Prometheus' external_labels, then federation,
# Thanos, Mimir or ACM observability): every rule also aggregates by the label ` + cluster + `, and
# StsdiagWatchDown fires per cluster. Another label: ` + "`cd deploy && go run ./cmd/monitoring -cluster-label NAME`" + `.
`
	}
	return h
}

// prometheusRule wraps rule groups in a monitoring.coreos.com/v1 PrometheusRule.
func prometheusRule(name, cluster, by string, groups []byte) []byte {
	var b strings.Builder
	b.WriteString(rulesHeader(cluster, by))
	b.WriteString("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: " + name +
		"\n  namespace: stsdiag\n  labels: {app.kubernetes.io/name: stsdiag}\nspec:\n")
	for _, line := range strings.SplitAfter(string(groups), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

// dashboardConfigMap is the Grafana sidecar's ConfigMap of a dashboard (label
// grafana_dashboard: "1", kube-prometheus-stack's default).
func dashboardConfigMap(name, source string, dashboard []byte) ([]byte, error) {
	cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "stsdiag",
			Labels: map[string]string{"grafana_dashboard": "1", "app.kubernetes.io/name": "stsdiag"}},
		Data: map[string]string{"stsdiag.json": string(dashboard)}}
	out, err := yaml.Marshal(cm)
	if err != nil {
		return nil, err
	}
	header := "# Generated from " + source + " by `" + Regenerate + "`; do not edit.\n"
	return append([]byte(header), out...), nil
}

// Files are the files generated from the templates, by path relative to deploy/: for one
// cluster (kustomize's deploy/monitoring and its Grafana ConfigMap, the Helm chart, a plain rule
// file) and for many (deploy/monitoring/multicluster, the chart's multi-cluster rules with the
// label left to the chart, a plain rule file).
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, flavour := range []struct {
		cluster, dir, suffix string
	}{{"", "monitoring", ""}, {DefaultClusterLabel, "monitoring/multicluster", "-multicluster"}} {
		groups, err := Groups(flavour.cluster)
		if err != nil {
			return nil, err
		}
		dashboard, err := Dashboard(flavour.cluster)
		if err != nil {
			return nil, err
		}
		files[flavour.dir+"/prometheusrule.yaml"] = prometheusRule("stsdiag"+flavour.suffix, flavour.cluster, Regenerate, groups)
		files["monitoring/rules/stsdiag"+flavour.suffix+".rules.yaml"] = append([]byte(rulesHeader(flavour.cluster, Regenerate)), groups...)
		files[flavour.dir+"/dashboard.json"] = dashboard
		cmPath := "monitoring/grafana/dashboard-configmap.yaml"
		if flavour.cluster != "" {
			cmPath = flavour.dir + "/dashboard-configmap.yaml"
		}
		if files[cmPath], err = dashboardConfigMap("stsdiag-dashboard"+flavour.suffix, "deploy/"+flavour.dir+"/dashboard.json", dashboard); err != nil {
			return nil, err
		}
	}
	files["helm/stsdiag/files/prometheusrule.yaml"] = files["monitoring/prometheusrule.yaml"]
	helmGroups, err := Groups(HelmClusterLabel)
	if err != nil {
		return nil, err
	}
	files["helm/stsdiag/files/prometheusrule-multicluster.yaml"] = prometheusRule("stsdiag-multicluster", HelmClusterLabel, Regenerate, helmGroups)
	return files, nil
}

// ForLabel are the multi-cluster files for another cluster label than the shipped one's:
// stsdiag.rules.yaml (a plain rule file), prometheusrule.yaml and dashboard.json.
func ForLabel(cluster string) (map[string][]byte, error) {
	groups, err := Groups(cluster)
	if err != nil {
		return nil, err
	}
	dashboard, err := Dashboard(cluster)
	if err != nil {
		return nil, err
	}
	by := "cd deploy && go run ./cmd/monitoring -cluster-label " + cluster
	return map[string][]byte{
		"stsdiag.rules.yaml":  append([]byte(rulesHeader(cluster, by)), groups...),
		"prometheusrule.yaml": prometheusRule("stsdiag-multicluster", cluster, by, groups),
		"dashboard.json":      dashboard,
	}, nil
}
