package argocd_test

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/deploy/argocd"
)

var update = flag.Bool("update", false, "regenerate argocd-cm.yaml from health.lua")

// set builds a StatefulSet (as Argo CD sees it: unstructured) from YAML fragments of its spec
// and status; the values are those of the e2e cluster's objects.
func set(t *testing.T, generation int, spec, status string) map[string]any {
	t.Helper()
	doc := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web, namespace: shop, generation: " + strconv.Itoa(generation) + "}\n" +
		"spec: " + spec + "\nstatus: " + status + "\n"
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return obj
}

const (
	rolling    = `{replicas: 2, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}}}`
	stalledMsg = `web-0: ImagePullBackOff on old revision web-7bfd4ccf47; never replaced; blocks web-1. Remedy: kubectl delete pod web-0 -n shop`
)

func TestHealth(t *testing.T) {
	cases := []struct {
		name, spec, status string
		generation         int
		want               argocd.Health
	}{
		{"kubernetes#67250 with watch's condition: Degraded with the reason and remedy", rolling,
			`{observedGeneration: 2, replicas: 1, readyReplicas: 0, currentReplicas: 1, updatedReplicas: 0, currentRevision: web-7bfd4ccf47, updateRevision: web-778c644979,
			  conditions: [{type: Stalled, status: "True", reason: StaleRevisionStuck, message: "` + stalledMsg + `"}]}`, 2,
			argocd.Health{Status: "Degraded", Message: "StaleRevisionStuck: " + stalledMsg}},
		{"kubernetes#67250 without it: Argo's rules say Progressing (argo-cd#6527)", rolling,
			`{observedGeneration: 2, replicas: 1, readyReplicas: 0, currentReplicas: 1, updatedReplicas: 0, currentRevision: web-7bfd4ccf47, updateRevision: web-778c644979}`, 2,
			argocd.Health{Status: "Progressing", Message: "Waiting for 2 pods to be ready..."}},
		{"a new spec not observed yet: Progressing even with an old Stalled", rolling,
			`{observedGeneration: 2, readyReplicas: 0, conditions: [{type: Stalled, status: "True", reason: StaleRevisionStuck, message: m}]}`, 3,
			argocd.Health{Status: "Progressing", Message: "Waiting for statefulset spec update to be observed..."}},
		{"recovered: Stalled=False, complete", rolling,
			`{observedGeneration: 2, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: web-778c644979, updateRevision: web-778c644979,
			  conditions: [{type: Stalled, status: "False", reason: NoErrorFinding, message: stsdiag finds no error}]}`, 2,
			argocd.Health{Status: "Healthy", Message: "partitioned roll out complete: 2 new pods have been updated..."}},
		{"partition 1 of 3, the pod above it not updated yet", `{replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}`,
			`{observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 0, currentRevision: a, updateRevision: b}`, 1,
			argocd.Health{Status: "Progressing", Message: "Waiting for partitioned roll out to finish: 0 out of 1 new pods have been updated..."}},
		{"partition 1 of 3 updated", `{replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}`,
			`{observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 2, updatedReplicas: 1, currentRevision: a, updateRevision: b}`, 1,
			argocd.Health{Status: "Healthy", Message: "partitioned roll out complete: 1 new pods have been updated..."}},
		{"OnDelete is Healthy once Ready, whatever the revisions (Argo's rule)", `{replicas: 3, updateStrategy: {type: OnDelete}}`,
			`{observedGeneration: 4, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 0, currentRevision: a, updateRevision: b}`, 4,
			argocd.Health{Status: "Healthy", Message: "statefulset has 3 ready pods"}},
		{"RollingUpdate without a rollingUpdate block, revisions differ", `{replicas: 1, updateStrategy: {type: RollingUpdate}}`,
			`{observedGeneration: 1, replicas: 1, readyReplicas: 1, currentReplicas: 0, updatedReplicas: 1, currentRevision: a, updateRevision: b}`, 1,
			argocd.Health{Status: "Progressing", Message: "waiting for statefulset rolling update to complete 1 pods at revision b..."}},
		{"RollingUpdate without a rollingUpdate block, complete", `{replicas: 1, updateStrategy: {type: RollingUpdate}}`,
			`{observedGeneration: 1, replicas: 1, readyReplicas: 1, currentReplicas: 1, updatedReplicas: 1, currentRevision: b, updateRevision: b}`, 1,
			argocd.Health{Status: "Healthy", Message: "statefulset rolling update complete 1 pods at revision b..."}},
		{"no status yet", rolling, `{}`, 1,
			argocd.Health{Status: "Progressing", Message: "Waiting for statefulset spec update to be observed..."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := argocd.Run(script(t), set(t, c.generation, c.spec, c.status))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestConfigMapPatch: argocd-cm.yaml carries exactly health.lua under the key Argo CD reads.
func TestConfigMapPatch(t *testing.T) {
	var b strings.Builder
	b.WriteString(`# stsdiag's health check for apps/StatefulSet, as an argocd-cm patch (generated from health.lua:
# cd deploy && go test ./argocd -update). Apply it with
#   kubectl -n argocd patch configmap argocd-cm --patch-file deploy/argocd/argocd-cm.yaml
# or list it under ` + "`patches:`" + ` of the kustomization that installs Argo CD.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
data:
  resource.customizations.health.apps_StatefulSet: |
`)
	for _, line := range strings.Split(strings.TrimRight(script(t), "\n"), "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
		b.WriteString("\n")
	}
	if *update {
		if err := os.WriteFile(cmPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(cmPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != b.String() {
		t.Fatal("argocd-cm.yaml is not health.lua: cd deploy && go test ./argocd -update")
	}
	var cm struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Data     map[string]string
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != "argocd-cm" || cm.Data["resource.customizations.health.apps_StatefulSet"] != script(t) {
		t.Errorf("argocd-cm.yaml does not parse to health.lua under resource.customizations.health.apps_StatefulSet")
	}
}

// TestRunLikeArgo: the libraries Argo CD does not open are not there, and a bad status is Unknown.
func TestRunLikeArgo(t *testing.T) {
	if _, err := argocd.Run(`return {status = string.format("%s", "Healthy")}`, map[string]any{}); err == nil {
		t.Error("string library available: Argo CD does not open it")
	}
	got, err := argocd.Run(`return {status = "Fine"}`, map[string]any{})
	if err != nil || got.Status != "Unknown" {
		t.Errorf("%+v %v", got, err)
	}
}

const cmPath = "argocd-cm.yaml"

func script(t *testing.T) string {
	t.Helper()
	s, err := argocd.LoadScript("../..")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
