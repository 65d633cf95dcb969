package deploy_test

import (
	"flag"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite monitoring/grafana/dashboard-configmap.yaml from monitoring/dashboard.json")

const dashboardConfigMap = "monitoring/grafana/dashboard-configmap.yaml"

// dashboardConfigMapYAML is the sidecar's ConfigMap of dashboard.json.
func dashboardConfigMapYAML(t *testing.T, dashboard []byte) []byte {
	t.Helper()
	cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "stsdiag-dashboard", Namespace: "stsdiag",
			Labels: map[string]string{"grafana_dashboard": "1", "app.kubernetes.io/name": "stsdiag"}},
		Data: map[string]string{"stsdiag.json": string(dashboard)}}
	out, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	header := "# Generated from deploy/monitoring/dashboard.json by `cd deploy && go test . -run TestDashboardFromOneSource -update`; do not edit.\n"
	return append([]byte(header), out...)
}

// TestDashboardFromOneSource: deploy/monitoring/grafana ships dashboard.json byte for byte as
// the ConfigMap the Grafana sidecar loads (the file is generated from it), and the Grafana
// operator's GrafanaDashboard reads that same ConfigMap, key and namespace.
func TestDashboardFromOneSource(t *testing.T) {
	want, err := os.ReadFile("monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	gen := dashboardConfigMapYAML(t, want)
	if *update {
		if err := os.WriteFile(dashboardConfigMap, gen, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(dashboardConfigMap); err != nil || string(got) != string(gen) {
		t.Errorf("%s is not generated from monitoring/dashboard.json (%v): cd deploy && go test . -run TestDashboardFromOneSource -update", dashboardConfigMap, err)
	}
	for _, dir := range []string{"monitoring/grafana", "monitoring/grafana-operator"} {
		var cm corev1.ConfigMap
		find(t, render(t, dir), "ConfigMap", "stsdiag-dashboard", &cm)
		if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "stsdiag" {
			t.Errorf("%s: ConfigMap labels %v namespace %q: want grafana_dashboard=1 in stsdiag", dir, cm.Labels, cm.Namespace)
		}
		if cm.Data["stsdiag.json"] != string(want) {
			t.Errorf("%s: the ConfigMap's stsdiag.json is not dashboard.json", dir)
		}
	}
	var gd struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			InstanceSelector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"instanceSelector"`
			AllowCrossNamespaceImport bool                         `json:"allowCrossNamespaceImport"`
			ConfigMapRef              *corev1.ConfigMapKeySelector `json:"configMapRef"`
			JSON                      string                       `json:"json"`
		} `json:"spec"`
	}
	find(t, render(t, "monitoring/grafana-operator"), "GrafanaDashboard", "stsdiag", &gd)
	ref := gd.Spec.ConfigMapRef
	if gd.APIVersion != "grafana.integreatly.org/v1beta1" || ref == nil || ref.Name != "stsdiag-dashboard" || ref.Key != "stsdiag.json" ||
		gd.Metadata.Namespace != "stsdiag" || gd.Spec.JSON != "" || len(gd.Spec.InstanceSelector.MatchLabels) == 0 {
		t.Errorf("GrafanaDashboard does not read the ConfigMap stsdiag/stsdiag-dashboard key stsdiag.json: %+v", gd)
	}
}
