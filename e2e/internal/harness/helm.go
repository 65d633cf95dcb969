package harness

import (
	"fmt"
	"sort"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Helm renders a chart directory as `helm install RELEASE DIR -n NAMESPACE --dry-run` does
// without a cluster (Helm's own install action, client only), in Helm's install order.
func Helm(dir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	manifests, err := HelmManifests(dir, release, namespace, values)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, m := range manifests {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
			return nil, fmt.Errorf("helm template %s: %w", dir, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out, nil
}

// HelmManifests is Helm's rendered manifest, one YAML document per object, in install order.
func HelmManifests(dir, release, namespace string, values map[string]any) ([]string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("helm: loading %s: %w", dir, err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly = true, true
	install.ReleaseName, install.Namespace = release, namespace
	// Client only, Helm assumes Kubernetes v1.20 (its built-in default); the chart needs >= 1.27.
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, fmt.Errorf("helm install %s %s --dry-run: %w", release, dir, err)
	}
	// The manifest is in Helm's install order (kinds: Namespace, ServiceAccount, RBAC, ...).
	split := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, split[k])
	}
	return out, nil
}
