package deploy_test

// The Helm chart deploy/helm/stsdiag, rendered by Helm's own install action (client only, as
// `helm install --dry-run`): every values combination docs/integrations.md documents renders
// objects that decode strictly into their Go types, and where a kustomization of deploy/ does
// the same job the chart renders the same objects. Applied to a control plane: e2e/helm_test.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/stsdiag/stsdiag/deploy/internal/monitoringsrc"
)

const chartDir = "helm/stsdiag"

// helmRender is `helm install stsdiag deploy/helm/stsdiag -n stsdiag --dry-run` with values.
func helmRender(t *testing.T, release, namespace string, values map[string]any) ([]string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly = true, true
	install.ReleaseName, install.Namespace = release, namespace
	// Client only, Helm assumes Kubernetes v1.20 (its built-in default); the chart needs >= 1.27.
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, err
	}
	split := releaseutil.SplitManifests(rel.Manifest)
	var docs []string
	for _, d := range split {
		docs = append(docs, d)
	}
	return docs, nil
}

// strictDecoder refuses unknown and duplicate fields, as `kubectl apply --validate=strict`
// does with the Kubernetes schemas; monitoring.coreos.com by prometheus-operator's Go types.
var strictDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// key is kind/namespace/name.
func key(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return obj["kind"].(string) + "/" + ns + "/" + name
}

// normalise is an object as JSON sees it (numbers float64), so Helm's and kustomize's compare.
func normalise(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeStrict decodes every rendered document into its Go type and returns them by key.
func decodeStrict(t *testing.T, docs []string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range docs {
		_, gvk, err := strictDecoder.Decode([]byte(d), nil, nil)
		if err != nil {
			t.Errorf("strict decode: %v\n%s", err, d)
			continue
		}
		if gvk.Kind == "" {
			t.Errorf("no kind:\n%s", d)
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		k := key(m)
		if _, dup := out[k]; dup {
			t.Errorf("%s rendered twice", k)
		}
		out[k] = normalise(t, m)
	}
	return out
}

func kustomized(t *testing.T, dirs ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, dir := range dirs {
		for _, r := range render(t, dir) {
			if r.GetKind() == "Namespace" {
				continue // `helm install --create-namespace` creates it; a chart does not own its namespace
			}
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			out[key(m)] = normalise(t, m)
		}
	}
	return out
}

// helmCase is one documented values combination; same names the kustomizations of deploy/
// that render the same objects (none: no kustomization does this).
type helmCase struct {
	name   string
	values map[string]any
	same   []string
	check  func(t *testing.T, objs map[string]map[string]any)
}

func deployment(t *testing.T, objs map[string]map[string]any) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs["Deployment/stsdiag/stsdiag"], &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func hasKind(objs map[string]map[string]any, kind string) bool {
	for k := range objs {
		if strings.HasPrefix(k, kind+"/") {
			return true
		}
	}
	return false
}

var helmCases = []helmCase{
	{name: "defaults", same: []string{"watch"}},
	{name: "fix.enabled", values: map[string]any{"fix": map[string]any{"enabled": true}}, same: []string{"watch-fix"}},
	{name: "openshift.enabled", values: map[string]any{"openshift": map[string]any{"enabled": true}}, same: []string{"openshift/watch"}},
	{name: "openshift.enabled fix.enabled", values: map[string]any{"openshift": map[string]any{"enabled": true}, "fix": map[string]any{"enabled": true}}, same: []string{"openshift/watch-fix"}},
	{name: "serviceMonitor.enabled prometheusRule.enabled", values: map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
		same: []string{"watch", "monitoring"}},
	{name: "openshift.enabled serviceMonitor.enabled prometheusRule.enabled", values: map[string]any{"openshift": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
		same: []string{"openshift/watch", "openshift/monitoring"}},
	{name: "prometheusRule.enabled prometheusRule.clusterLabel=cluster", values: map[string]any{"prometheusRule": map[string]any{"enabled": true, "clusterLabel": "cluster"}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			want := kustomized(t, "monitoring/multicluster")["PrometheusRule/stsdiag/stsdiag-multicluster"]
			if got := objs["PrometheusRule/stsdiag/stsdiag"]; want == nil || !reflect.DeepEqual(got["spec"], want["spec"]) {
				t.Errorf("the chart's multi-cluster rules differ from deploy/monitoring/multicluster's (-kustomize +helm):\n%s", cmp.Diff(want["spec"], got["spec"]))
			}
		}},
	{name: "prometheusRule.enabled prometheusRule.clusterLabel=k8s_cluster", values: map[string]any{"prometheusRule": map[string]any{"enabled": true, "clusterLabel": "k8s_cluster"}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			groups, err := monitoringsrc.Groups("k8s_cluster")
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal(groups, &want); err != nil {
				t.Fatal(err)
			}
			got, _ := objs["PrometheusRule/stsdiag/stsdiag"]["spec"].(map[string]any)
			if want = normalise(t, want); !reflect.DeepEqual(got, want) {
				t.Errorf("the chart's rules for k8s_cluster differ from monitoringsrc's (-monitoringsrc +helm):\n%s", cmp.Diff(want, got))
			}
			if text := fmt.Sprint(got); !strings.Contains(text, "by (k8s_cluster, namespace, statefulset)") || strings.Contains(text, "STSDIAG_CLUSTER_LABEL") {
				t.Errorf("the label is not in the rules: %.400s", text)
			}
		}},
	{name: "metrics.insecure serviceMonitor.enabled", values: map[string]any{"metrics": map[string]any{"insecure": true}, "serviceMonitor": map[string]any{"enabled": true}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			if !slices.Contains(c.Args, "--metrics-insecure") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir") }) {
				t.Errorf("args %v: want --metrics-insecure and no --metrics-cert-dir", c.Args)
			}
			if len(c.VolumeMounts) != 0 {
				t.Errorf("volumeMounts %v with --metrics-insecure", c.VolumeMounts)
			}
			for _, gone := range []string{"ClusterRole//stsdiag-metrics-auth", "ClusterRole//stsdiag-metrics-reader", "ClusterRoleBinding//stsdiag-metrics-reader"} {
				if _, ok := objs[gone]; ok {
					t.Errorf("%s rendered with --metrics-insecure", gone)
				}
			}
			want := map[string]any{"port": "http", "scheme": "http", "path": "/metrics"}
			if got := objs["ServiceMonitor/stsdiag/stsdiag"]["spec"].(map[string]any)["endpoints"].([]any)[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("ServiceMonitor endpoint %v, want %v", got, want)
			}
			if port := objs["Service/stsdiag/stsdiag"]["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["name"]; port != "http" {
				t.Errorf("Service port %v, want http", port)
			}
		}},
	{name: "serviceMonitor.enabled prometheus.serviceAccount of kube-prometheus-stack", values: map[string]any{"serviceMonitor": map[string]any{"enabled": true},
		"prometheus": map[string]any{"serviceAccount": map[string]any{"name": "kube-prometheus-stack-prometheus", "namespace": "kps"}}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			assertPrometheusBinding(t, objs, "kube-prometheus-stack-prometheus", "kps")
		}},
	{name: "serviceMonitor.prometheusServiceAccount, the former name", values: map[string]any{"serviceMonitor": map[string]any{"enabled": true,
		"prometheusServiceAccount": map[string]any{"name": "prom", "namespace": "mon"}}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			assertPrometheusBinding(t, objs, "prom", "mon")
		}},
	{name: "serviceMonitor.enabled prometheus.serviceAccount.name empty", values: map[string]any{"serviceMonitor": map[string]any{"enabled": true},
		"prometheus": map[string]any{"serviceAccount": map[string]any{"name": ""}}},
		check: func(t *testing.T, objs map[string]map[string]any) {
			if _, ok := objs["ClusterRoleBinding//stsdiag-metrics-reader"]; ok {
				t.Error("a Prometheus binding with no ServiceAccount named")
			}
			if _, ok := objs["ClusterRoleBinding//stsdiag-metrics-scraper"]; !ok {
				t.Error("no scraper binding: the ServiceMonitor's token would be refused")
			}
		}},
	{name: "replicas=1 leaderElection.enabled=false allNamespaces=false", values: map[string]any{"replicas": 1, "leaderElection": map[string]any{"enabled": false}, "allNamespaces": false},
		check: func(t *testing.T, objs map[string]map[string]any) {
			d := deployment(t, objs)
			if *d.Spec.Replicas != 1 {
				t.Errorf("replicas %d", *d.Spec.Replicas)
			}
			want := []string{"watch", "--namespace=stsdiag", "--metrics-addr=:8443", "--metrics-cert-dir=/etc/stsdiag/metrics-tls", "--health-addr=:8081"}
			if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, want) {
				t.Errorf("args %v, want %v", args, want)
			}
			if hasKind(objs, "Role") || hasKind(objs, "RoleBinding") {
				t.Error("the leader Role rendered without leader election")
			}
		}},
	{name: "image resources extraArgs metrics.certSecret", values: map[string]any{
		"image":     map[string]any{"repository": "registry.example/stsdiag", "tag": "v9.9.9", "pullPolicy": "Always"},
		"resources": map[string]any{"requests": map[string]any{"cpu": "50m"}},
		"extraArgs": []any{"--hold=5m"}, "fix": map[string]any{"enabled": true},
		"metrics": map[string]any{"certSecret": "my-cert"},
	}, check: func(t *testing.T, objs map[string]map[string]any) {
		d := deployment(t, objs)
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "registry.example/stsdiag:v9.9.9" || c.ImagePullPolicy != "Always" {
			t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
		}
		if got := c.Resources.Requests.Cpu().String(); got != "50m" || c.Resources.Limits.Memory().String() != "512Mi" {
			t.Errorf("resources %v", c.Resources)
		}
		if args := c.Args; !slices.Equal(args[len(args)-2:], []string{"--hold=5m", "--fix"}) {
			t.Errorf("args %v, want ... --hold=5m --fix", args)
		}
		if s := d.Spec.Template.Spec.Volumes[0].Secret.SecretName; s != "my-cert" {
			t.Errorf("cert Secret %s, want my-cert", s)
		}
	}},
}

// TestHelmRendersDocumentedValues: each combination renders, decodes strictly, and equals its
// kustomization's objects.
func TestHelmRendersDocumentedValues(t *testing.T) {
	for _, c := range helmCases {
		t.Run(c.name, func(t *testing.T) {
			docs, err := helmRender(t, "stsdiag", "stsdiag", c.values)
			if err != nil {
				t.Fatal(err)
			}
			objs := decodeStrict(t, docs)
			if len(objs) == 0 {
				t.Fatal("renders nothing")
			}
			for k, o := range objs {
				if ns, _ := o["metadata"].(map[string]any)["namespace"].(string); ns != "" && ns != "stsdiag" {
					t.Errorf("%s: namespace %s, want the release's", k, ns)
				}
			}
			if c.same != nil {
				want := kustomized(t, c.same...)
				var wantKeys, gotKeys []string
				for k := range want {
					wantKeys = append(wantKeys, k)
				}
				for k := range objs {
					gotKeys = append(gotKeys, k)
				}
				sort.Strings(wantKeys)
				sort.Strings(gotKeys)
				if !slices.Equal(gotKeys, wantKeys) {
					t.Errorf("objects differ from kustomize build %v:\n%s", c.same, cmp.Diff(wantKeys, gotKeys))
				}
				for k, w := range want {
					if g, ok := objs[k]; ok && !reflect.DeepEqual(g, w) {
						t.Errorf("%s differs from kustomize build %v (-kustomize +helm):\n%s", k, c.same, cmp.Diff(w, g))
					}
				}
			}
			if c.check != nil {
				c.check(t, objs)
			}
		})
	}
}

// TestHelmRefusesWhatCannotWork: the chart fails with a message rather than render a broken set.
func TestHelmRefusesWhatCannotWork(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"leaderElection": map[string]any{"enabled": false}}, "replicas > 1 needs leaderElection.enabled"},
		{map[string]any{"openshift": map[string]any{"enabled": true}, "metrics": map[string]any{"insecure": true}}, "drop metrics.insecure"},
		{map[string]any{"prometheusRule": map[string]any{"enabled": true, "clusterLabel": "k8s-cluster"}}, `prometheusRule.clusterLabel "k8s-cluster": want a Prometheus label name`},
		{map[string]any{"prometheusRule": map[string]any{"enabled": true, "clusterLabel": "namespace"}}, `prometheusRule.clusterLabel "namespace"`},
	} {
		_, err := helmRender(t, "stsdiag", "stsdiag", c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.values, err, c.want)
		}
	}
}

// TestHelmPrometheusRuleIsDeployMonitorings: the chart's rules are a byte-for-byte copy of
// deploy/monitoring/prometheusrule.yaml (the file monitor/alerts_test.go checks).
func TestHelmPrometheusRuleIsDeployMonitorings(t *testing.T) {
	want, err := os.ReadFile("monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(chartDir + "/files/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("deploy/helm/stsdiag/files/prometheusrule.yaml differs from deploy/monitoring/prometheusrule.yaml: cp deploy/monitoring/prometheusrule.yaml deploy/helm/stsdiag/files/")
	}
}

// TestHelmDocs: docs/integrations.md's install command renders the defaults, and its values
// table names every value of values.yaml (leaves, and resources as a map) with its default, and
// nothing else.
func TestHelmDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	const install = "helm install stsdiag deploy/helm/stsdiag -n stsdiag --create-namespace"
	if !strings.Contains(text, install) {
		t.Fatalf("docs/integrations.md lacks %q", install)
	}
	if _, err := helmRender(t, "stsdiag", "stsdiag", nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && k != "resources" {
				walk(prefix+k+".", sub)
				continue
			}
			j, _ := json.Marshal(v)
			defaults[prefix+k] = string(j)
		}
	}
	walk("", values)
	// Table rows: | `key` | `default` | meaning |
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z.]+)` \\| `([^`]*)` \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		documented[m[1]] = m[2]
	}
	for k, def := range defaults {
		got, ok := documented[k]
		if !ok {
			t.Errorf("values table lacks %s (default %s)", k, def)
			continue
		}
		var a, b any
		if err := yaml.Unmarshal([]byte(got), &a); err != nil {
			t.Errorf("%s: documented default %q: %v", k, got, err)
		}
		_ = json.Unmarshal([]byte(def), &b)
		if !reflect.DeepEqual(normaliseAny(a), normaliseAny(b)) {
			t.Errorf("%s: documented default %s, values.yaml %s", k, got, def)
		}
	}
	for k := range documented {
		if _, ok := defaults[k]; !ok {
			t.Errorf("values table documents %s, which values.yaml lacks", k)
		}
	}
}

func normaliseAny(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// TestHelmLint: `helm lint --strict` of the chart, defaults and every documented combination.
func TestHelmLint(t *testing.T) {
	for _, c := range helmCases {
		lint := action.NewLint()
		lint.Strict, lint.Namespace = true, "stsdiag"
		lint.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
		res := lint.Run([]string{chartDir}, c.values)
		for _, m := range res.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", c.name, m)
			}
		}
		for _, err := range res.Errors {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func assertPrometheusBinding(t *testing.T, objs map[string]map[string]any, name, namespace string) {
	t.Helper()
	b, ok := objs["ClusterRoleBinding//stsdiag-metrics-reader"]
	if !ok {
		t.Fatal("no ClusterRoleBinding stsdiag-metrics-reader")
	}
	want := []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": namespace}}
	if got := b["subjects"]; !reflect.DeepEqual(got, want) {
		t.Errorf("subjects %v, want %v", got, want)
	}
}
