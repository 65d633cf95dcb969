// Command monitoring writes stsdiag's multi-cluster alerts and dashboard for a cluster label
// other than `cluster` (deploy/monitoring/multicluster's): a plain rule file, a PrometheusRule
// and the Grafana dashboard, rendered from deploy/internal/monitoringsrc.
//
//	cd deploy && go run ./cmd/monitoring -cluster-label k8s_cluster -o /tmp/stsdiag-monitoring
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stsdiag/stsdiag/deploy/internal/monitoringsrc"
)

func main() {
	label := flag.String("cluster-label", monitoringsrc.DefaultClusterLabel, "the label every series carries in the store of many clusters")
	out := flag.String("o", ".", "directory to write stsdiag.rules.yaml, prometheusrule.yaml and dashboard.json to")
	flag.Parse()
	if err := run(*label, *out); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run(label, dir string) error {
	if err := monitoringsrc.CheckLabel(label); err != nil || label == monitoringsrc.HelmClusterLabel {
		return fmt.Errorf("-cluster-label: %v", err)
	}
	files, err := monitoringsrc.ForLabel(label)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(dir, name))
	}
	return nil
}
