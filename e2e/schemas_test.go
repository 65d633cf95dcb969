package e2e

// The JSON schemas make vet's kubeconform validates deploy/'s manifests with
// (deploy/schemas/<release>-standalone-strict, the layout of kubeconform's schema registry) are
// what this control plane's kube-apiserver serves: its /openapi/v2 definitions, converted as
// kubeconform's openapi2jsonschema converts them (standalone: every $ref inlined; strict: an
// object with properties admits no other; int-or-string and quantities as either type).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// schemaKinds are the kinds deploy/ ships (chart, kustomizations, plain files); CRDs
// (ServiceMonitor, PrometheusRule) are decoded by their Go types in deploy's tests instead.
var schemaKinds = []struct{ group, version, kind string }{
	{"", "v1", "ConfigMap"}, {"", "v1", "Namespace"}, {"", "v1", "Secret"}, {"", "v1", "Service"}, {"", "v1", "ServiceAccount"},
	{"apps", "v1", "Deployment"},
	{"rbac.authorization.k8s.io", "v1", "ClusterRole"}, {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"},
	{"rbac.authorization.k8s.io", "v1", "Role"}, {"rbac.authorization.k8s.io", "v1", "RoleBinding"},
}

// TestKubeconformSchemas: deploy/schemas is what this kube-apiserver serves
// (STSDIAG_UPDATE_SCHEMAS=1 rewrites it).
func TestKubeconformSchemas(t *testing.T) {
	release := os.Getenv("K8S_VERSION")
	if release == "" {
		release = "v1.37.2"
	}
	if release != "v1.37.2" {
		t.Skipf("deploy/schemas holds v1.37.2's schemas, not %s's", release)
	}
	f := features.New("kubeconform schemas").
		Assess("deploy/schemas equals /openapi/v2, converted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			raw, err := clientset(t, cfg).Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Definitions map[string]map[string]any `json:"definitions"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("..", "deploy", "schemas", release+"-standalone-strict")
			update := os.Getenv("STSDIAG_UPDATE_SCHEMAS") != ""
			if update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range schemaKinds {
				name, err := definitionOf(doc.Definitions, k.group, k.version, k.kind)
				if err != nil {
					t.Fatal(err)
				}
				schema, err := standaloneStrict(doc.Definitions, map[string]any{"$ref": "#/definitions/" + name}, 0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, err := json.MarshalIndent(schema, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(dir, schemaFile(k.group, k.version, k.kind))
				if update {
					if err := os.WriteFile(file, append(want, '\n'), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				got, err := os.ReadFile(file)
				if err != nil || string(got) != string(want)+"\n" {
					t.Errorf("%s is not this kube-apiserver's %s (STSDIAG_UPDATE_SCHEMAS=1 rewrites it)", file, name)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// schemaFile is kubeconform's file name for a kind: deployment-apps-v1.json, service-v1.json.
func schemaFile(group, version, kind string) string {
	if group == "" {
		return strings.ToLower(kind) + "-" + version + ".json"
	}
	return strings.ToLower(kind) + "-" + strings.Split(group, ".")[0] + "-" + version + ".json"
}

// definitionOf finds the definition of group/version kind by its x-kubernetes-group-version-kind.
func definitionOf(defs map[string]map[string]any, group, version, kind string) (string, error) {
	for name, d := range defs {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			if m["group"] == group && m["version"] == version && m["kind"] == kind {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("no definition of %s/%s %s", group, version, kind)
}

// standaloneStrict inlines the references of node, forbids properties an object schema does not
// declare, and lets int-or-string and quantities be either type; descriptions are dropped.
func standaloneStrict(defs map[string]map[string]any, node any, depth int) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("references nest deeper than 64 (a cycle?)")
	}
	switch n := node.(type) {
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			var err error
			if out[i], err = standaloneStrict(defs, v, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			if strings.HasSuffix(name, ".api.resource.Quantity") {
				return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}, nil
			}
			def, ok := defs[name]
			if !ok {
				return nil, fmt.Errorf("no definition %s", name)
			}
			return standaloneStrict(defs, def, depth+1)
		}
		if n["format"] == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}, nil
		}
		out := map[string]any{}
		for k, v := range n {
			if k == "description" || strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			if k == "properties" || k == "patternProperties" {
				props := map[string]any{}
				for p, s := range v.(map[string]any) {
					var err error
					if props[p], err = standaloneStrict(defs, s, depth+1); err != nil {
						return nil, err
					}
				}
				out[k] = props
				continue
			}
			var err error
			if out[k], err = standaloneStrict(defs, v, depth+1); err != nil {
				return nil, err
			}
		}
		if _, props := out["properties"]; props {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out, nil
	}
	return node, nil
}
