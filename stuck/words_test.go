package stuck_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/model"
	"github.com/stsdiag/stsdiag/internal/snapshot/snapshottest"
	"github.com/stsdiag/stsdiag/stuck"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// codes are every finding code: each has a golden file.
var codes = []apiv1.Code{
	apiv1.CurrentRevisionFailing, apiv1.PodCreateFailed, apiv1.RolloutBlocked, apiv1.ImageLookupDisabled, apiv1.ImageResolutionSkipped, apiv1.ImageStreamTagNotFound,
	apiv1.ImageTriggerInvalid, apiv1.ImageTriggerStale, apiv1.OnDeleteStale, apiv1.OrphanedRevision, apiv1.PodStuckTerminating,
	apiv1.PodUnschedulable, apiv1.ServiceMissing, apiv1.StaleRevisionStuck, apiv1.StatefulSetTerminating,
	apiv1.UnresolvedImageReference, apiv1.VolumeClaimPending, apiv1.ControllerManagerNotRunning, apiv1.PodsWithoutStatefulSet,
}

// scenarioFindings diagnoses every testdata scenario as check does, by scenario name.
func scenarioFindings(t *testing.T) map[string][]stuck.Finding {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*", "*", "objects.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	out := map[string][]stuck.Finding{}
	for _, file := range files {
		dir := filepath.Dir(file)
		snap, err := stuck.LoadFile(file, snapshottest.Now)
		if err != nil {
			t.Fatal(err)
		}
		var want snapshottest.Expectation
		data, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
		if err != nil || yaml.Unmarshal(data, &want) != nil {
			t.Fatalf("%s: expected.yaml: %v", dir, err)
		}
		if want.ServerVersion != "" {
			snap.ServerVersion = want.ServerVersion
		}
		opts := stuck.DefaultOptions()
		opts.FeatureGates = want.FeatureGates
		out[filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)] = stuck.Diagnose(snap, opts).Findings
	}
	return out
}

// TestWording locks the words of every finding code: testdata/golden/findings/<Code>.txt holds
// the message, short, remedy and worded details of every finding of that code in every
// scenario. Run with -update to accept a change of wording.
func TestWording(t *testing.T) {
	byCode := map[apiv1.Code][]string{}
	all := scenarioFindings(t)
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, f := range all[name] {
			byCode[f.Code] = append(byCode[f.Code], words(name, f))
		}
	}
	for _, code := range codes {
		t.Run(string(code), func(t *testing.T) {
			if len(byCode[code]) == 0 {
				t.Fatalf("no scenario has a %s finding", code)
			}
			text := fmt.Sprintf("# %s: every finding of this code in testdata, as stuck words it.\n\n%s", code, strings.Join(byCode[code], "\n"))
			snapshottest.Golden(t, filepath.Join("findings", string(code)+".txt"), []byte(text), *update)
		})
	}
	for code := range byCode {
		if !slices.Contains(codes, code) {
			t.Errorf("code %s has no golden file", code)
		}
	}
}

func words(scenario string, f stuck.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s: %s/%s", scenario, f.Namespace, f.StatefulSet)
	if f.Pod != "" {
		fmt.Fprintf(&b, " pod %s", f.Pod)
	}
	if f.Container != "" {
		fmt.Fprintf(&b, " container %s", f.Container)
	}
	fmt.Fprintf(&b, "\nmessage: %s\n", f.Message)
	for _, line := range [][2]string{{"short", f.Short}, {"remedy", f.Remedy}, {"details.nodeCondition", f.Details.NodeCondition}, {"details.skipped", f.Details.Skipped}} {
		if line[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", line[0], line[1])
		}
	}
	if len(f.Details.Blocks) > 0 {
		fmt.Fprintf(&b, "details.blocks: %s\n", strings.Join(f.Details.Blocks, ", "))
	}
	return b.String()
}

// TestFactsMatchCode: every finding of every scenario carries facts of its own code.
func TestFactsMatchCode(t *testing.T) {
	for name, findings := range scenarioFindings(t) {
		for _, f := range findings {
			if f.Facts == nil || f.Facts.Code() != f.Code {
				t.Errorf("%s: %s %s has facts %T", name, f.Code, f.Pod, f.Facts)
			}
		}
	}
}

// TestDetailKeysWritten: the scenarios write every declared detail key but those listed here,
// so a key no rule writes any more shows up.
func TestDetailKeysWritten(t *testing.T) {
	unwritten := map[string]string{
		"admission":     "written only with admission's answers (--confirm-with-admission): TestAdmissionWording",
		"rollback":      "written by fix, not by diagnosis",
		"logs":          "written by check --logs (gather.PreviousLogs), not by diagnosis",
		"reusedBy":      "no scenario has a pod of a terminating StatefulSet's name owned by another controller",
		"templateImage": "no scenario has an image only pods use",
	}
	for _, key := range []string{"applyError", "causes", "nodeReasons", "partition", "registry", "registryAnswer", "replicas", "storageClass"} {
		unwritten[key] = "written by preflight's findings (internal/preflight/predict's tests), not by diagnosis"
	}
	seen := map[string]bool{}
	for _, findings := range scenarioFindings(t) {
		for _, key := range detailKeys(t, model.PublicFindings(findings)) {
			seen[key] = true
		}
	}
	for _, key := range declaredKeys() {
		if _, skip := unwritten[key]; seen[key] == skip {
			t.Errorf("details.%s: written by a scenario %v, listed as unwritten %v", key, seen[key], skip)
		}
	}
}

// detailKeys are the keys of the details of findings as printed in JSON.
func detailKeys(t *testing.T, findings []apiv1.Finding) []string {
	t.Helper()
	data, err := json.Marshal(findings)
	if err != nil {
		t.Fatal(err)
	}
	var printed []struct {
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(data, &printed); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range printed {
		for key := range f.Details {
			keys = append(keys, key)
		}
	}
	return keys
}

// declaredKeys are the JSON keys of apiv1.FindingDetails.
func declaredKeys() []string {
	typ := reflect.TypeFor[apiv1.FindingDetails]()
	keys := make([]string, typ.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(typ.Field(i).Tag.Get("json"), ",")
	}
	return keys
}
