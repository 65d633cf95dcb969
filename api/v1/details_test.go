package v1

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// detailKeys are the public keys of details: scripts read them, so they change only additively.
var detailKeys = []string{
	"admission", "admissionError", "applyError", "blockedBy", "blocks", "cause", "causes", "checks", "claim", "claimEvents", "clusterIP", "currentOwnerUID", "currentUID", "events", "expected", "expectedBy",
	"failingPods", "fieldPath", "finalizers", "from", "holder", "imageStream", "initContainer", "kind",
	"lastExitCode", "lastExitMessage", "lastExitReason", "lease", "logs", "maxUnavailable", "missing", "missingFor", "missingKey", "newOwnerRevisions", "node",
	"nodeCondition", "nodeReady", "nodeReadySince", "nodeReason", "nodeReasons", "notRenewedFor", "object", "ordinal", "overdue", "ownerKind",
	"ownerName", "ownerUID", "partition", "patch", "podLabels", "podResourceVersion", "podRevision", "podUID", "pods", "policy", "quota",
	"readinessGate", "readinessGateStatus", "reason", "registry", "registryAnswer", "renewTime", "replicas", "restartCount", "reusedBy", "revision",
	"revisions", "rollback", "runningFor", "savedCopy", "selector", "service", "serviceAccount", "shortBy", "skipped", "storageClass", "tag",
	"targetRevision", "templateImage",
	"terminatingFor", "trigger", "uid", "unavailablePods", "updateRevision", "volume", "waitedFor", "waitingFor",
}

func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, key)
	}
	return keys
}

// TestDetailKeys: the declared keys are exactly the public ones, in byte order, so a document
// prints its details sorted by key as it did when details were a map.
func TestDetailKeys(t *testing.T) {
	keys := jsonKeys(reflect.TypeFor[FindingDetails]())
	if !slices.Equal(keys, detailKeys) {
		t.Errorf("keys\n%q\nwant\n%q", keys, detailKeys)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys are not declared in byte order: %q", keys)
	}
	if patch := jsonKeys(reflect.TypeFor[ImagePatchDetails]()); !slices.Equal(patch, []string{"from", "path", "to"}) {
		t.Errorf("patch keys %q", patch)
	}
	if adm := jsonKeys(reflect.TypeFor[AdmissionCheck]()); !slices.Equal(adm, []string{"error", "predicted", "result", "written"}) {
		t.Errorf("admission keys %q", adm)
	}
}

// TestDetailsDocumented: every field of FindingDetails and ImagePatchDetails has a doc comment
// that starts with its name.
func TestDetailsDocumented(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "details.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || (spec.Name.Name != "FindingDetails" && spec.Name.Name != "ImagePatchDetails" && spec.Name.Name != "AdmissionCheck") {
			return true
		}
		for _, field := range spec.Type.(*ast.StructType).Fields.List {
			name := field.Names[0].Name
			seen++
			if field.Doc == nil || !strings.HasPrefix(field.Doc.Text(), name+" ") {
				t.Errorf("%s.%s has no doc comment starting with its name", spec.Name.Name, name)
			}
		}
		return false
	})
	if seen != len(detailKeys)+3+4 {
		t.Errorf("checked %d fields, want %d", seen, len(detailKeys)+3+4)
	}
}

// TestDetailsPrint: zero values print where a code sets them, nothing prints when nothing is
// set, and a Service without selector prints null.
func TestDetailsPrint(t *testing.T) {
	zero, empty := 0, ""
	cases := []struct {
		name string
		f    Finding
		want string
	}{
		{"no details", Finding{}, `{"code":"","severity":"","namespace":"","statefulSet":"","message":""}`},
		{"zero values set", Finding{Details: FindingDetails{Ordinal: &zero, TargetRevision: &empty, Node: &empty}},
			`{"code":"","severity":"","namespace":"","statefulSet":"","message":"","details":{"node":"","ordinal":0,"targetRevision":""}}`},
		{"null selector", Finding{Details: FindingDetails{Selector: new(map[string]string), Service: "web"}},
			`{"code":"","severity":"","namespace":"","statefulSet":"","message":"","details":{"selector":null,"service":"web"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(c.f)
			if err != nil || string(got) != c.want {
				t.Errorf("got %s (%v)\nwant %s", got, err, c.want)
			}
		})
	}
}

func TestDetailsDeepCopy(t *testing.T) {
	one := 1
	labels := map[string]string{"app": "web"}
	d := FindingDetails{Blocks: []string{"web-1 (not created)"}, Ordinal: &one, Selector: &labels,
		PodLabels: map[string]string{"app": "web"}, Patch: &ImagePatchDetails{To: "a"}, Admission: &AdmissionCheck{Written: "a"}}
	c := d.DeepCopy()
	c.Blocks[0], *c.Ordinal, (*c.Selector)["app"], c.PodLabels["app"], c.Patch.To, c.Admission.Written = "x", 2, "x", "x", "b", "b"
	if d.Blocks[0] != "web-1 (not created)" || *d.Ordinal != 1 || labels["app"] != "web" || d.PodLabels["app"] != "web" || d.Patch.To != "a" ||
		d.Admission.Written != "a" {
		t.Errorf("the copy shares memory with the original: %+v", d)
	}
}
