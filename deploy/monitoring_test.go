package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stsdiag/stsdiag/deploy/internal/monitoringsrc"
)

// TestMonitoringFromOneSource: every file made from deploy/internal/monitoringsrc's templates —
// the alerts and dashboard of deploy/monitoring (one cluster) and deploy/monitoring/multicluster
// (many, by the label cluster), their plain rule files, the Grafana ConfigMaps and the Helm
// chart's rules — is what the templates render now. -update rewrites them.
func TestMonitoringFromOneSource(t *testing.T) {
	files, err := monitoringsrc.Files()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths) < 10 {
		t.Fatalf("only %d generated files: %v", len(paths), paths)
	}
	for _, p := range paths {
		if *update {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, files[p], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, files[p]) {
			t.Errorf("deploy/%s is not what deploy/internal/monitoringsrc renders (%v): %s", p, err, monitoringsrc.Regenerate)
		}
	}
}

// TestClusterLabelIsChecked: a label that is not a Prometheus label name, or one stsdiag's
// series already carry, is refused rather than rendered into rules that cannot work.
func TestClusterLabelIsChecked(t *testing.T) {
	for _, bad := range []string{"", "k8s-cluster", "1cluster", "__name__", "namespace", "statefulset"} {
		if _, err := monitoringsrc.Groups(bad); bad != "" && err == nil {
			t.Errorf("cluster label %q accepted", bad)
		}
		if err := monitoringsrc.CheckLabel(bad); err == nil {
			t.Errorf("CheckLabel(%q) = nil", bad)
		}
	}
	for _, good := range []string{"cluster", "k8s_cluster", "tenant_cluster"} {
		if err := monitoringsrc.CheckLabel(good); err != nil {
			t.Errorf("CheckLabel(%q) = %v", good, err)
		}
	}
}
