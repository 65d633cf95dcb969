package stuck_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/report"
	"github.com/stsdiag/stsdiag/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
)

// testNow is the clock of every scenario in testdata/stuck.
var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

type expectation struct {
	StatefulSets []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"statefulSets"`
	Findings []map[string]any `json:"findings"`
}

// TestScenarios runs every folder of testdata/stuck: objects.yaml is the snapshot,
// expected.yaml the findings (every listed field must match; details are a subset) and the
// rollout state of each StatefulSet. The number of findings must match exactly.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/stuck/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			snap, err := snapshot.LoadFile(filepath.Join(dir, "objects.yaml"), testNow)
			if err != nil {
				t.Fatal(err)
			}
			var want expectation
			data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(data, &want); err != nil {
				t.Fatalf("expected.yaml: %v", err)
			}
			got := stuck.Diagnose(snap, stuck.DefaultOptions())
			gotFindings := toMaps(t, got.Findings)
			if len(gotFindings) != len(want.Findings) {
				t.Fatalf("got %d findings, want %d:\n%s", len(gotFindings), len(want.Findings), dump(got.Findings))
			}
			for i, w := range want.Findings {
				if !matches(w, gotFindings[i]) {
					t.Errorf("finding %d:\n got %s\nwant %s", i, dump(gotFindings[i]), dump(w))
				}
			}
			states := map[string]string{}
			for _, s := range got.StatefulSets {
				states[s.Name] = s.Status
			}
			for _, s := range want.StatefulSets {
				if states[s.Name] != s.Status {
					t.Errorf("statefulset %s: status %q, want %q", s.Name, states[s.Name], s.Status)
				}
			}
		})
	}
}

func toMaps(t *testing.T, findings []report.Finding) []map[string]any {
	data, err := json.Marshal(findings)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// matches reports whether every key of want is in got with an equal value (maps recursively).
func matches(want, got map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		wm, wIsMap := w.(map[string]any)
		gm, gIsMap := g.(map[string]any)
		if wIsMap && gIsMap {
			if !matches(wm, gm) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(normalize(w), normalize(g)) {
			return false
		}
	}
	return true
}

func normalize(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func dump(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}
