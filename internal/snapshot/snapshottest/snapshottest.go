// Package snapshottest runs table tests over scenario folders: objects.yaml (a snapshot) and
// expected.yaml (the findings, and the rollout state of StatefulSets).
package snapshottest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/slimpb"
	"github.com/stsdiag/stsdiag/internal/snapshot"
	"github.com/stsdiag/stsdiag/stuck"
	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Now is the clock of every scenario.
var Now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// Expectation is expected.yaml. Every listed finding field must match (details are a subset);
// the number of findings must match exactly. ServerVersion and FeatureGates say which
// controller the scenario runs against (default: the newest release modelled).
type Expectation struct {
	ServerVersion string          `json:"serverVersion,omitempty"`
	FeatureGates  map[string]bool `json:"featureGates,omitempty"`

	StatefulSets []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"statefulSets"`
	Findings []map[string]any `json:"findings"`
}

// Diagnosis turns a snapshot into findings and StatefulSet summaries, with the feature gates
// the scenario overrides.
type Diagnosis func(snap *stuck.Objects, gates map[string]bool) ([]apiv1.Finding, []apiv1.StatefulSetSummary)

// Run runs every scenario folder under root (a folder holding objects.yaml and expected.yaml).
// The objects are diagnosed as gathering reads them, three ways: through snapshot.Slim (informer
// transforms, JSON responses); in the subtest "protobuf", encoded as the API server's protobuf
// and decoded by slimpb (check's LISTs, watch's informers); and in "settled", so decoded then
// through snapshot.SlimSettled (watch -A's caches). A rule that reads a field any of them drops
// sees its zero value here as in production, and its scenario fails.
func Run(t *testing.T, root string, diagnose Diagnosis) {
	files, err := filepath.Glob(filepath.Join(root, "*", "objects.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s: %v", root, err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			check(t, dir, diagnose, slim)
			t.Run("protobuf", func(t *testing.T) { check(t, dir, diagnose, slimDecode) })
			t.Run("settled", func(t *testing.T) { check(t, dir, diagnose, SlimSettled) })
		})
	}
}

// check runs the scenario of one folder, its objects read by read.
func check(t testing.TB, dir string, diagnose Diagnosis, read func(*stuck.Objects) error) {
	snap, err := stuck.LoadFile(filepath.Join(dir, "objects.yaml"), Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := read(snap); err != nil {
		t.Fatal(err)
	}
	var want Expectation
	data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatalf("expected.yaml: %v", err)
	}
	if want.ServerVersion != "" {
		snap.ServerVersion = want.ServerVersion
	}
	findings, sets := diagnose(snap, want.FeatureGates)
	sort.SliceStable(findings, func(i, j int) bool { return apiv1.FindingLess(&findings[i], &findings[j]) })
	got := toMaps(t, findings)
	if len(got) != len(want.Findings) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want.Findings), dump(findings))
	}
	for i, w := range want.Findings {
		if !Matches(w, got[i]) {
			t.Errorf("finding %d:\n got %s\nwant %s", i, dump(got[i]), dump(w))
		}
	}
	states := map[string]string{}
	for _, s := range sets {
		states[s.Name] = string(s.Status)
	}
	for _, s := range want.StatefulSets {
		if states[s.Name] != s.Status {
			t.Errorf("statefulset %s: status %q, want %q", s.Name, states[s.Name], s.Status)
		}
	}
}

// slim applies the production transform (snapshot.Slim) to every object of the snapshot: to
// each element of each of its slices, whatever kinds it holds now or later.
func slim(snap *stuck.Objects) error {
	return eachObject(snap, func(obj any) error {
		_, err := snapshot.Slim(obj)
		return err
	})
}

// slimDecode reads every object of the snapshot as check's LISTs do: encoded as the API
// server's protobuf and decoded by slimpb, or, for kinds it does not decode (ImageStreams, read
// as JSON), through snapshot.Slim.
func slimDecode(snap *stuck.Objects) error {
	return eachObject(snap, func(obj any) error {
		if o, ok := obj.(runtime.Object); ok {
			if decoded, err := slimpb.RoundTrip(o); decoded || err != nil {
				return err
			}
		}
		_, err := snapshot.Slim(obj)
		return err
	})
}

// SlimSettled reads every object of the snapshot as watch -A's informers hold it: decoded by
// slimpb (slimDecode), then through snapshot.SlimSettled, which slims a settled StatefulSet into
// a copy (written back here).
func SlimSettled(snap *stuck.Objects) error {
	if err := slimDecode(snap); err != nil {
		return err
	}
	for i := range snap.StatefulSets {
		out, err := snapshot.SlimSettled(&snap.StatefulSets[i])
		if err != nil {
			return err
		}
		snap.StatefulSets[i] = *out.(*appsv1.StatefulSet)
	}
	return nil
}

// SayDone writes the status the StatefulSet controller writes once a rollout is over
// (controller.StatusSettled), whatever the pods do: as a stopped controller may leave it.
func SayDone(set *appsv1.StatefulSet) {
	n := controller.Replicas(set)
	st := &set.Status
	st.ObservedGeneration = max(set.Generation, 1)
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.CurrentReplicas = n, n, n, n, n
	if st.UpdateRevision == "" {
		st.UpdateRevision = set.Name + "-done"
	}
	st.CurrentRevision = st.UpdateRevision
	set.DeletionTimestamp = nil
}

// eachObject calls fn with each element of each slice of the snapshot.
func eachObject(snap *stuck.Objects, fn func(any) error) error {
	fields := reflect.ValueOf(snap).Elem()
	for i := 0; i < fields.NumField(); i++ {
		if f := fields.Field(i); f.Kind() == reflect.Slice {
			for j := 0; j < f.Len(); j++ {
				if err := fn(f.Index(j).Addr().Interface()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func toMaps(t testing.TB, findings []apiv1.Finding) []map[string]any {
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

// Matches reports whether every key of want is in got with an equal value (maps recursively).
func Matches(want, got map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			if w != nil {
				return false
			}
			continue
		}
		wm, wIsMap := w.(map[string]any)
		gm, gIsMap := g.(map[string]any)
		if wIsMap && gIsMap {
			if !Matches(wm, gm) {
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

// Golden compares got with testdata/golden/name (from a package directory); with update it
// rewrites the file first.
func Golden(t *testing.T, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join(Testdata(t), "golden", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Testdata is the module's testdata directory, found from the test's working directory (its
// package's) upwards.
func Testdata(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
