package deploy_test

import (
	"flag"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite the files generated from deploy/internal/monitoringsrc (TestMonitoringFromOneSource)")

// TestDashboardFromOneSource: deploy/monitoring/grafana ships dashboard.json byte for byte as
// the ConfigMap the Grafana sidecar loads (both are generated, TestMonitoringFromOneSource), and
// the Grafana operator's GrafanaDashboard reads that same ConfigMap, key and namespace.
func TestDashboardFromOneSource(t *testing.T) {
	want, err := os.ReadFile("monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
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
