package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/check"
	"github.com/stsdiag/stsdiag/internal/gather"
	"github.com/stsdiag/stsdiag/internal/render"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

// fixed is a source that hands out one snapshot, as read.
type fixed struct{ snap *stuck.Objects }

func (f fixed) Snapshot(context.Context) (*stuck.Objects, []string, error) { return f.snap, nil, nil }

// TestLibraryIsCheck: for every testdata scenario, what the public entry says (stuck.Diagnose:
// each StatefulSet's status and message, every finding and its words) is what `check -o json`
// prints for the same objects, byte for byte.
func TestLibraryIsCheck(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "*", "objects.yaml"))
	if err != nil || len(files) < 90 {
		t.Fatalf("%d scenarios: %v", len(files), err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			var want snapshottest.Expectation
			data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
			if err != nil || yaml.Unmarshal(data, &want) != nil {
				t.Fatalf("expected.yaml: %v", err)
			}
			load := func() *stuck.Objects {
				objs, err := stuck.LoadFile(file, snapshottest.Now)
				if err != nil {
					t.Fatal(err)
				}
				if want.ServerVersion != "" {
					objs.ServerVersion = want.ServerVersion
				}
				return objs
			}
			opts := stuck.DefaultOptions()
			opts.FeatureGates = want.FeatureGates

			res := stuck.Diagnose(load(), opts)
			findings := make([]apiv1.Finding, len(res.Findings))
			for i, f := range res.Findings {
				findings[i] = f.Finding
			}
			library := marshal(t, res.StatefulSets, findings)

			rep, _, err := check.Cluster(context.Background(), gather.Clients{}, gather.Scope{Namespace: "scenario"}, check.Options{Diagnosis: opts, Source: fixed{load()}})
			if err != nil {
				t.Fatal(err)
			}
			flags := render.NewPrintFlags()
			flags.OutputFormat = "json"
			if err := flags.Validate(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := render.Report(&out, rep, flags, render.TableOptions{}); err != nil {
				t.Fatal(err)
			}
			// The document's own bytes of both arrays, compacted: what a reader of the JSON sees.
			var printed struct {
				StatefulSets json.RawMessage `json:"statefulSets"`
				Findings     json.RawMessage `json:"findings"`
			}
			if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
				t.Fatal(err)
			}
			checked := compact(t, []byte(`{"statefulSets":`+string(printed.StatefulSets)+`,"findings":`+string(printed.Findings)+`}`))
			if !bytes.Equal(library, checked) {
				t.Errorf("stuck.Diagnose:\n%s\ncheck -o json:\n%s", library, checked)
			}
		})
	}
}

// marshal is the public entry's statefulSets and findings as one compact JSON object, in the
// document's order of keys.
func marshal(t *testing.T, sets []apiv1.StatefulSetSummary, findings []apiv1.Finding) []byte {
	t.Helper()
	if sets == nil {
		sets = []apiv1.StatefulSetSummary{}
	}
	s, err := json.Marshal(sets)
	if err != nil {
		t.Fatal(err)
	}
	f, err := json.Marshal(findings)
	if err != nil {
		t.Fatal(err)
	}
	return compact(t, []byte(`{"statefulSets":`+string(s)+`,"findings":`+string(f)+`}`))
}

func compact(t *testing.T, in []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, in); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
