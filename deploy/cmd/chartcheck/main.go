// Command chartcheck is make vet's check of what deploy/ ships: `helm lint --strict` of the chart
// with each documented combination of values (Helm's own lint action), and every manifest a user
// applies — the chart rendered with those values, the kustomizations, the plain files — written
// to -out, one file each, for kubeconform to validate against the Kubernetes schemas
// (deploy/schemas). Run from deploy/.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const chartDir = "helm/stsdiag"

// combinations are the chart's documented value combinations (docs/integrations.md), as
// deploy/helm_test.go renders them.
var combinations = map[string]map[string]any{
	"defaults":   nil,
	"fix":        {"fix": map[string]any{"enabled": true}},
	"openshift":  {"openshift": map[string]any{"enabled": true}, "fix": map[string]any{"enabled": true}},
	"monitoring": {"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
	"openshift-monitoring": {"openshift": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true}},
	"insecure-metrics": {"metrics": map[string]any{"insecure": true}, "serviceMonitor": map[string]any{"enabled": true}},
	"single":           {"replicas": 1, "leaderElection": map[string]any{"enabled": false}, "allNamespaces": false},
}

var kustomizations = []string{"watch", "watch-fix", "monitoring", "openshift/watch", "openshift/watch-fix", "openshift/monitoring"}

var plainFiles = []string{"check-clusterrole.yaml", "fix-clusterrole.yaml", "confirm-clusterrole.yaml"}

func main() {
	out := flag.String("out", "", "directory to write the manifests to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(combinations))
	for name := range combinations {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		values := combinations[name]
		if err := lint(name, values); err != nil {
			return err
		}
		manifest, err := render(values)
		if err != nil {
			return fmt.Errorf("helm template (%s): %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, "chart-"+name+".yaml"), []byte(manifest), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("helm lint --strict %s: %d value combinations, no finding\n", chartDir, len(names))
	for _, dir := range kustomizations {
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			return fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		y, err := m.AsYaml()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "kustomize-"+strings.ReplaceAll(dir, "/", "-")+".yaml"), y, 0o644); err != nil {
			return err
		}
	}
	for _, f := range plainFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "file-"+f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// lint is `helm lint --strict` with values: a warning or an error fails, as the CLI's --strict;
// INFO messages are printed.
func lint(name string, values map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.KubeVersion = kubeVersion
	res := l.Run([]string{chartDir}, values)
	var msgs []string
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			msgs = append(msgs, m.Error())
		} else if name == "defaults" {
			fmt.Println("helm lint:", m.Error())
		}
	}
	for _, err := range res.Errors {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) > 0 {
		return fmt.Errorf("helm lint --strict %s (%s):\n  %s", chartDir, name, strings.Join(msgs, "\n  "))
	}
	return nil
}

// kubeVersion: client only, Helm assumes Kubernetes v1.20 (its built-in default); the chart needs >= 1.27.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}

func render(values map[string]any) (string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly = true, true
	install.ReleaseName, install.Namespace = "stsdiag", "stsdiag"
	install.KubeVersion = kubeVersion
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range releaseutil.SplitManifests(rel.Manifest) {
		b.WriteString("---\n" + d + "\n")
	}
	return b.String(), nil
}
