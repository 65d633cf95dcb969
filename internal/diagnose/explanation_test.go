package diagnose_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/diagnose"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// TestCheckAndExplainAgree: on every testdata/stuck scenario, for every StatefulSet, an ordinal
// carries a "why" exactly when check has an error finding about its pod, and whenever check
// reports an error about a pod of a live set, explain's blocking ordinal agrees: under
// OrderedReady the one the controller stops at is such a pod; under Parallel every such pod
// holds the rollout.
func TestCheckAndExplainAgree(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "stuck", "*"))
	if err != nil || len(dirs) < 50 {
		t.Fatalf("scenarios: %d (%v)", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			snap, opts := scenario(t, dir)
			rep := diagnose.Report(snap, opts)
			for _, set := range snap.StatefulSets {
				e := diagnose.Explanation(snap, set.Namespace, set.Name, opts)
				if e == nil {
					t.Fatal("no such StatefulSet")
				}
				var errPods, holdPods []string
				for _, f := range rep.Findings {
					if f.StatefulSet == set.Name && f.Namespace == set.Namespace && f.Severity == apiv1.SeverityError && f.Pod != "" {
						errPods = append(errPods, f.Pod)
						if !readyNow(snap, f.Namespace, f.Pod) {
							holdPods = append(holdPods, f.Pod)
						}
					}
				}
				var blocking *apiv1.OrdinalStep
				for i := range e.Ordinals {
					o := &e.Ordinals[i]
					if o.Holds && blocking == nil {
						blocking = o
					}
					if (o.Why != "") != slices.Contains(errPods, o.Pod) {
						t.Errorf("%s: %s why %q, check's error findings about pods %v", set.Name, o.Pod, o.Why, errPods)
					}
				}
				// A pod Running and Ready right now holds nothing, whatever check says of it: a
				// crash-looping container is Ready for the second each run lasts (kubelet >= 1.34
				// without a readiness probe), and the controller goes on in that second.
				switch {
				case len(holdPods) == 0 || set.DeletionTimestamp != nil:
				case e.PodManagementPolicy != "Parallel" && (blocking == nil || !slices.Contains(holdPods, blocking.Pod)):
					t.Errorf("%s: check reports %v, explain's blocking ordinal is %+v", set.Name, holdPods, blocking)
				case e.PodManagementPolicy == "Parallel":
					for _, pod := range holdPods {
						if i := slices.IndexFunc(e.Ordinals, func(o apiv1.OrdinalStep) bool { return o.Pod == pod }); i < 0 || !e.Ordinals[i].Holds {
							t.Errorf("%s: check reports %s, which explain does not show holding: %+v", set.Name, pod, e.Ordinals)
						}
					}
				}
			}
		})
	}
}

// scenario loads a testdata scenario as its test runs it: through the production transform,
// with its server version and feature gates.
func scenario(t *testing.T, dir string) (*stuck.Objects, stuck.Options) {
	t.Helper()
	snap, err := stuck.LoadFile(filepath.Join(dir, "objects.yaml"), snapshottest.Now)
	if err != nil {
		t.Fatal(err)
	}
	var want snapshottest.Expectation
	data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if want.ServerVersion != "" {
		snap.ServerVersion = want.ServerVersion
	}
	opts := stuck.DefaultOptions()
	opts.FeatureGates = want.FeatureGates
	return snap, opts
}

func readyNow(snap *stuck.Objects, namespace, name string) bool {
	for i := range snap.Pods {
		if p := &snap.Pods[i]; p.Namespace == namespace && p.Name == name {
			return controller.RunningAndReady(p)
		}
	}
	return false
}

// TestReportWithExplanations: check -o html's one diagnosis gives the same report as check and,
// for every StatefulSet, the same explanation as explain, on every testdata/stuck scenario.
func TestReportWithExplanations(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "stuck", "*"))
	if err != nil || len(dirs) < 50 {
		t.Fatalf("scenarios: %d (%v)", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			snap, opts := scenario(t, dir)
			rep, explanations := diagnose.ReportWithExplanations(snap, opts)
			if got, want := rep.Public(), diagnose.Report(snap, opts).Public(); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("report differs from check's:\n got %+v\nwant %+v", got, want)
			}
			if len(explanations) != len(snap.StatefulSets) {
				t.Errorf("%d explanations for %d StatefulSets", len(explanations), len(snap.StatefulSets))
			}
			for _, set := range snap.StatefulSets {
				want := diagnose.Explanation(snap, set.Namespace, set.Name, opts)
				if want == nil {
					t.Fatal("no such StatefulSet")
				}
				if got := explanations[set.Namespace+"/"+set.Name]; !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("%s/%s: explanation differs from explain's:\n got %+v\nwant %+v", set.Namespace, set.Name, got, want)
				}
			}
		})
	}
}
