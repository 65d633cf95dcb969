package analysis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const fixtures = "../../testdata/analysis/"

func ptr[T any](v T) *T { return &v }

const argoQuery = `sum(irate(
  istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}",response_code!~"5.*"}[5m]
)) /
sum(irate(
  istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}"}[5m]
))
`

func TestParseArgoExample(t *testing.T) {
	tmpl, err := ParseFile(fixtures + "argo-success-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Metric{
		Name:             "success-rate",
		Interval:         5 * time.Minute,
		SuccessCondition: "result[0] >= 0.95",
		FailureLimit:     3,
		Prometheus:       Prometheus{Address: "http://prometheus.example.com:9090", Query: argoQuery},
	}
	if tmpl.Name != "success-rate" || tmpl.Kind != "AnalysisTemplate" {
		t.Errorf("name, kind = %q, %q", tmpl.Name, tmpl.Kind)
	}
	if diff := cmp.Diff([]Arg{{Name: "service-name"}}, tmpl.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Metric{want}, tmpl.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if len(tmpl.Finite()) != 0 || len(tmpl.Indefinite()) != 1 {
		t.Errorf("finite %d, indefinite %d; want 0, 1 (interval, no count)", len(tmpl.Finite()), len(tmpl.Indefinite()))
	}

	// The required arg.
	_, err = tmpl.Bind(nil)
	var missing *MissingArgError
	if !errors.As(err, &missing) || missing.Name != "service-name" {
		t.Fatalf("Bind(nil) = %v, want a MissingArgError for service-name", err)
	}
	if got, want := err.Error(), "analysis template success-rate: args.service-name was not resolved: the template gives it no value and none was given"; got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}

	// Argo's Rollout passes service-name; an undeclared arg is ignored, as Argo's MergeArgs does.
	bound, err := tmpl.Bind(map[string]string{"service-name": "guestbook-svc.default.svc.cluster.local", "other": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want.Prometheus.Query = `sum(irate(
  istio_requests_total{reporter="source",destination_service=~"guestbook-svc.default.svc.cluster.local",response_code!~"5.*"}[5m]
)) /
sum(irate(
  istio_requests_total{reporter="source",destination_service=~"guestbook-svc.default.svc.cluster.local"}[5m]
))
`
	if diff := cmp.Diff([]Metric{want}, bound.Metrics); diff != "" {
		t.Errorf("bound metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Arg{{Name: "service-name", Value: ptr("guestbook-svc.default.svc.cluster.local")}}, bound.Args); diff != "" {
		t.Errorf("bound args (-want +got):\n%s", diff)
	}
	// The parsed template is unchanged.
	if tmpl.Metrics[0].Prometheus.Query != argoQuery || tmpl.Args[0].Value != nil {
		t.Error("Bind changed its receiver")
	}
}

func TestParseArgoHeadersTimeout(t *testing.T) {
	tmpl, err := ParseFile(fixtures + "argo-prometheus-headers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := tmpl.Metrics[0].Prometheus
	if p.Timeout != 40*time.Second {
		t.Errorf("timeout = %s, want 40s", p.Timeout)
	}
	if diff := cmp.Diff(map[string]string{"X-Scope-OrgID": "tenant_a"}, p.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Connection{Address: "http://prometheus.example.com:9090", Headers: map[string]string{"X-Scope-OrgID": "tenant_a"}}, p.Connection()); diff != "" {
		t.Errorf("connection (-want +got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"argo-range-query.yaml", "analysis template range-query-example: metric success-rate: prometheus rangeQuery is not supported: stsdiag runs instant queries only"},
		{"argo-oauth2.yaml", "analysis template success-rate: args oauthSecret valueFrom is not supported: give the value in the template or to stsdiag (it reads no Secret or field)"},
		{"argo-args-web.yaml", "analysis template args-example: args api-token valueFrom is not supported: give the value in the template or to stsdiag (it reads no Secret or field)"},
		{"unsupported-web.yaml", "analysis template success-rate: metric success-rate: provider web is not supported: stsdiag queries Prometheus only"},
		{"unsupported-sigv4.yaml", "analysis template amp-success-rate: metric success-rate: prometheus authentication is not supported: credentials come from the Prometheus connection (bearer token, CA, headers), not the template"},
		{"unsupported-dryrun.yaml", "analysis template dry-run: spec.dryRun is not supported: every metric of the template decides the step"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := ParseFile(fixtures + tc.file)
			var u *UnsupportedError
			if !errors.As(err, &u) {
				t.Fatalf("err = %v, want an UnsupportedError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Error("error is not one line")
			}
		})
	}
}

// metricYAML is a template around one metric's YAML (indented as a list item under metrics).
func metricYAML(spec string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata:\n  name: t\nspec:\n" + spec
}

const promProvider = `
    provider:
      prometheus:
        address: http://prometheus:9090
        query: up`

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		unsupported     bool
	}{
		{"every other provider", metricYAML("  metrics:\n  - name: m\n    provider:\n      datadog:\n        query: avg:x"),
			"analysis template t: metric m: provider datadog is not supported: stsdiag queries Prometheus only", true},
		{"job", metricYAML("  metrics:\n  - name: m\n    provider:\n      job:\n        spec: {}"),
			"analysis template t: metric m: provider job is not supported: stsdiag queries Prometheus only", true},
		{"plugin", metricYAML("  metrics:\n  - name: m\n    provider:\n      plugin:\n        argoproj-labs/sample-prometheus:\n          query: up"),
			"analysis template t: metric m: provider plugin argoproj-labs/sample-prometheus is not supported: stsdiag queries Prometheus only", true},
		{"measurementRetention", metricYAML("  measurementRetention:\n  - metricName: m\n    limit: 20\n  metrics:\n  - name: m" + promProvider),
			"analysis template t: spec.measurementRetention is not supported: stsdiag keeps the last 10 measurements of each metric", true},
		{"templates", metricYAML("  templates:\n  - templateName: other\n  metrics:\n  - name: m" + promProvider),
			"analysis template t: spec.templates is not supported: stsdiag reads one template with its own metrics", true},
		{"fieldRef", metricYAML("  args:\n  - name: env\n    valueFrom:\n      fieldRef:\n        fieldPath: metadata.labels['env']\n  metrics:\n  - name: m" + promProvider),
			"analysis template t: args env valueFrom is not supported: give the value in the template or to stsdiag (it reads no Secret or field)", true},
		{"kind", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: r\n",
			"analysis template r: kind Rollout is not supported: stsdiag reads AnalysisTemplate and ClusterAnalysisTemplate", true},
		{"AnalysisRun", "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisRun\nmetadata:\n  name: r\n",
			"analysis template r: kind AnalysisRun is not supported: stsdiag reads AnalysisTemplate and ClusterAnalysisTemplate", true},
		{"apiVersion", "apiVersion: argoproj.io/v1beta1\nkind: AnalysisTemplate\nmetadata:\n  name: r\n",
			"analysis template r: apiVersion argoproj.io/v1beta1 is not supported: stsdiag reads argoproj.io/v1alpha1", true},
		{"unknown field", metricYAML("  metrics:\n  - name: m\n    intervall: 5m" + promProvider),
			`analysis template t: unknown field "spec.metrics[0].intervall"`, false},
		{"unknown prometheus field", metricYAML("  metrics:\n  - name: m" + promProvider + "\n        step: 1m"),
			`analysis template t: unknown field "spec.metrics[0].provider.prometheus.step"`, false},
		{"field names are case-sensitive", metricYAML("  metrics:\n  - name: m\n    Interval: 5m" + promProvider),
			`analysis template t: unknown field "spec.metrics[0].Interval"`, false},
		{"duplicate field", metricYAML("  metrics:\n  - name: m\n    interval: 5m\n    interval: 1m" + promProvider),
			`analysis template: yaml: unmarshal errors:
  line 9: key "interval" already set in map`, false},
		{"two documents", metricYAML("  metrics:\n  - name: m"+promProvider) + "\n---\n" + metricYAML("  metrics:\n  - name: m"+promProvider),
			"analysis template: want one document, got 2", false},
		{"empty", "# nothing\n", "analysis template: no document", false},
		{"no metrics", metricYAML("  args: []\n"), "analysis template t: no metrics specified", false},
		{"no provider", metricYAML("  metrics:\n  - name: m\n    provider: {}"), "analysis template t: metrics[0]: no provider specified", false},
		{"two providers", metricYAML("  metrics:\n  - name: m" + promProvider + "\n      web:\n        url: http://x"), "analysis template t: metrics[0]: multiple providers specified", false},
		{"no query", metricYAML("  metrics:\n  - name: m\n    provider:\n      prometheus:\n        address: http://p:9090"), "analysis template t: metrics[0]: prometheus query is required", false},
		{"bad address", metricYAML("  metrics:\n  - name: m\n    provider:\n      prometheus:\n        address: prometheus:9090\n        query: up"),
			`analysis template t: metrics[0]: prometheus address "prometheus:9090" is not a URL`, false},
		{"negative timeout", metricYAML("  metrics:\n  - name: m" + promProvider + "\n        timeout: -20"), "analysis template t: metrics[0]: prometheus timeout should not be negative", false},
		{"bad interval", metricYAML("  metrics:\n  - name: m\n    interval: 60s-typo" + promProvider),
			`analysis template t: metrics[0]: invalid interval string: time: unknown unit "s-typo" in duration "60s-typo"`, false},
		{"zero interval", metricYAML("  metrics:\n  - name: m\n    interval: 0s" + promProvider), "analysis template t: metrics[0]: interval must be > 0, got 0s", false},
		{"bad initialDelay", metricYAML("  metrics:\n  - name: m\n    initialDelay: 60s-typo" + promProvider),
			`analysis template t: metrics[0]: invalid startDelay string: time: unknown unit "s-typo" in duration "60s-typo"`, false},
		{"count not an integer", metricYAML("  metrics:\n  - name: m\n    count: three" + promProvider), `analysis template t: metrics[0]: count: "three" is not an integer`, false},
		{"count > 1 without interval", metricYAML("  metrics:\n  - name: m\n    count: 2" + promProvider), "analysis template t: metrics[0]: interval must be specified when count > 1", false},
		{"duplicate metric", metricYAML("  metrics:\n  - name: m" + promProvider + "\n  - name: m" + promProvider), "analysis template t: metrics[1]: duplicate name 'm'", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			var u *UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("UnsupportedError: %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	// JSON; an empty authentication as a Go client writes it; a null provider; consecutiveSuccessLimit.
	doc := `{"apiVersion":"argoproj.io/v1alpha1","kind":"ClusterAnalysisTemplate",
	  "metadata":{"name":"c","creationTimestamp":null,"labels":{"a":"b"}},
	  "spec":{"dryRun":[],"metrics":[{"name":"m","count":"5","interval":"30s","initialDelay":"1m",
	    "failureLimit":-1,"consecutiveSuccessLimit":3,"inconclusiveLimit":"1","consecutiveErrorLimit":2,
	    "provider":{"web":null,"prometheus":{"query":"up","insecure":true,
	      "authentication":{"sigv4":{},"oauth2":{},"basicAuth":{}}}}}]}}`
	tmpl, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{{
		Name: "m", Interval: 30 * time.Second, InitialDelay: time.Minute, Count: ptr(int32(5)),
		FailureLimit: -1, ConsecutiveSuccessLimit: 3, InconclusiveLimit: 1, ConsecutiveErrorLimit: ptr(int32(2)),
		Prometheus: Prometheus{Query: "up", Insecure: true},
	}}
	if diff := cmp.Diff(want, tmpl.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if tmpl.Kind != "ClusterAnalysisTemplate" || len(tmpl.Finite()) != 1 {
		t.Errorf("kind %s, finite %d", tmpl.Kind, len(tmpl.Finite()))
	}
}

// Argo's e2e templates give count, interval and failureLimit as args
// (test/e2e/functional/rollout-secret.yaml): they are checked when bound.
func TestBindTypedFields(t *testing.T) {
	doc := metricYAML(`  args:
  - name: analysis-runs
    value: "3"
  - name: analysis-interval
    value: 1m
  - name: failure-limit
  - name: threshold
    value: "0.95"
  metrics:
  - name: "rate-{{ args.analysis-runs }}"
    count: "{{args.analysis-runs}}"
    interval: "{{args.analysis-interval}}"
    failureLimit: "{{args.failure-limit}}"
    successCondition: result[0] >= {{args.threshold}}
    provider:
      prometheus:
        address: http://prometheus:9090
        query: up
        headers:
        - key: X-Threshold
          value: "{{args.threshold}}"`)
	tmpl, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if m := tmpl.Metrics[0]; m.Count != nil || m.Interval != 0 || m.FailureLimit != 0 {
		t.Errorf("unbound typed fields read %v %v %v, want unset", m.Count, m.Interval, m.FailureLimit)
	}
	bound, err := tmpl.Bind(map[string]string{"failure-limit": "1", "analysis-runs": "4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{{
		Name: "rate-4", Count: ptr(int32(4)), Interval: time.Minute, FailureLimit: 1,
		SuccessCondition: "result[0] >= 0.95",
		Prometheus:       Prometheus{Address: "http://prometheus:9090", Query: "up", Headers: map[string]string{"X-Threshold": "0.95"}},
	}}
	if diff := cmp.Diff(want, bound.Metrics); diff != "" {
		t.Errorf("bound (-want +got):\n%s", diff)
	}
	// Bound values are checked as Argo's ValidateMetric does.
	_, err = tmpl.Bind(map[string]string{"failure-limit": "5"})
	if got, want := errString(err), "analysis template t: metrics[0]: count (3) must be >= failureLimit + consecutiveSuccessLimit (5 + 0) if both >= 0"; got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}
	_, err = tmpl.Bind(map[string]string{"failure-limit": "1", "analysis-interval": "soon"})
	if got, want := errString(err), `analysis template t: metrics[0]: invalid interval string: time: invalid duration "soon"`; got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}
	_, err = tmpl.Bind(map[string]string{"failure-limit": "one"})
	if got, want := errString(err), `analysis template t: metrics[0]: failureLimit: "one" is not an integer`; got != want {
		t.Errorf("error\n got %s\nwant %s", got, want)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestBindErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		given     map[string]string
		want      string
	}{
		{"undeclared placeholder", metricYAML("  metrics:\n  - name: m\n    provider:\n      prometheus:\n        query: up{job=\"{{args.job}}\"}"), nil,
			"analysis template t: metrics[0]: failed to resolve {{args.job}}"},
		// As in Argo, the braces closing the metric's JSON close the tag.
		{"unclosed placeholder", metricYAML("  args:\n  - name: job\n    value: x\n  metrics:\n  - name: m\n    provider:\n      prometheus:\n        query: up{job=\"{{args.job\"}"), nil,
			`analysis template t: metrics[0]: failed to resolve {{args.job\"}"}}`},
		{"an unused arg still needs a value", metricYAML("  args:\n  - name: unused\n  metrics:\n  - name: m" + promProvider), nil,
			"analysis template t: args.unused was not resolved: the template gives it no value and none was given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Bind(tc.given)
			if got := errString(err); got != tc.want {
				t.Errorf("error\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Ported from utils/analysis/helpers_test.go TestMergeArgs @ argo-rollouts 9f8d111d8f8e (the
// valueFrom cases are refused by Parse instead).
func TestMergeArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template []Arg
		given    map[string]string
		want     []Arg
	}{
		{"nil list", nil, nil, []Arg{}},
		{"use defaults", []Arg{{Name: "foo", Value: ptr("bar")}}, nil, []Arg{{Name: "foo", Value: ptr("bar")}}},
		{"overwrite defaults", []Arg{{Name: "foo", Value: ptr("bar")}}, map[string]string{"foo": "overwrite"}, []Arg{{Name: "foo", Value: ptr("overwrite")}}},
		{"not resolved", []Arg{{Name: "foo"}}, nil, []Arg{{Name: "foo"}}},
		{"extra arg", []Arg{{Name: "foo"}}, map[string]string{"foo": "my-value", "extra-arg": "extra-value"}, []Arg{{Name: "foo", Value: ptr("my-value")}}},
		{"empty value given", []Arg{{Name: "foo", Value: ptr("bar")}}, map[string]string{"foo": ""}, []Arg{{Name: "foo", Value: ptr("")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mergeArgs(tc.template, tc.given), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Ported from utils/template/template_test.go @ argo-rollouts 9f8d111d8f8e (ResolveArgs,
// ResolveQuotedArgs; the experiment cases do not apply).
func TestResolveArgs(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		args           []Arg
		quoted         bool
		want, wantErr  string
	}{
		{"no substitution", "test", nil, false, "test", ""},
		{"whitespace", "test-{{ args.var }}", []Arg{{Name: "var", Value: ptr("foo")}}, false, "test-foo", ""},
		{"substitution", "test-{{args.var}}", []Arg{{Name: "var", Value: ptr("foo")}}, false, "test-foo", ""},
		{"invalid template", "test-{{args.var", nil, false, "", `Cannot find end tag="}}" in the template="test-{{args.var" starting from "args.var"`},
		{"missing args", "test-{{args.var}}", nil, false, "test-", "failed to resolve {{args.var}}"},
		{"value not supplied", "{{args.test}}", []Arg{{Name: "test"}}, false, "", `argument "test" was not supplied`},
		{"quoted", "test-{{args.var}}", []Arg{{Name: "var", Value: ptr("double quotes\"newline\nand tab\t")}}, true, `test-double quotes\"newline\nand tab\t`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resolveFn := resolveArgs
			if tc.quoted {
				resolveFn = resolveQuotedArgs
			}
			got, err := resolveFn(tc.template, tc.args)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if gotErr := errString(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && gotErr != tc.wantErr) {
				t.Errorf("err = %s, want %q", gotErr, tc.wantErr)
			}
		})
	}
}

// Ported from utils/analysis/factory_test.go TestResolveMetricArgs, TestResolveMetricArgsWithQuotes.
func TestResolveMetricArgs(t *testing.T) {
	arg1, arg2 := "success-rate", "success-rate2"
	args := []Arg{{Name: "metric-name", Value: &arg1}, {Name: "metric-name2", Value: &arg2}}
	m1, err := resolveMetricArgs(rawMetric{Name: "metric-name", SuccessCondition: "result > {{args.metric-name}}"}, args)
	if err != nil || m1.SuccessCondition != "result > success-rate" {
		t.Errorf("got %q, %v", m1.SuccessCondition, err)
	}
	m2, err := resolveMetricArgs(rawMetric{Name: "metric-name2", SuccessCondition: "result < {{args.metric-name2}}"}, args)
	if err != nil || m2.SuccessCondition != "result < success-rate2" {
		t.Errorf("got %q, %v", m2.SuccessCondition, err)
	}
	quoted := "foo \"bar\" baz"
	m3, err := resolveMetricArgs(rawMetric{Name: "rate", SuccessCondition: "{{args.rate}}"}, []Arg{{Name: "rate", Value: &quoted}})
	if err != nil || m3.SuccessCondition != quoted {
		t.Errorf("got %q, %v", m3.SuccessCondition, err)
	}
}

// Ported from utils/analysis/factory_test.go TestValidateMetrics @ argo-rollouts 9f8d111d8f8e
// (the interval, initialDelay and provider cases are in TestParseErrors: Parse checks them).
func TestValidateMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		metrics []Metric
		want    string
	}{
		{"count >= failureLimit + consecutiveSuccessLimit", []Metric{{Name: "success-rate", Count: ptr(int32(1)), FailureLimit: 2}},
			"metrics[0]: count (1) must be >= failureLimit + consecutiveSuccessLimit (2 + 0) if both >= 0"},
		{"count 0 is unset", []Metric{{Name: "success-rate", Count: ptr(int32(0)), FailureLimit: 2}}, ""},
		{"count >= inconclusiveLimit", []Metric{{Name: "success-rate", Count: ptr(int32(1)), InconclusiveLimit: 2}}, "metrics[0]: count must be >= inconclusiveLimit"},
		{"count 0 and inconclusiveLimit", []Metric{{Name: "success-rate", Count: ptr(int32(0)), InconclusiveLimit: 2}}, ""},
		{"valid", []Metric{{Name: "success-rate", Count: ptr(int32(2)), Interval: time.Minute, FailureLimit: 2}}, ""},
		{"no metrics", []Metric{}, "no metrics specified"},
		{"interval when count > 1", []Metric{{Name: "success-rate", Count: ptr(int32(2))}}, "metrics[0]: interval must be specified when count > 1"},
		{"duplicate names", []Metric{{Name: "success-rate"}, {Name: "success-rate"}}, "metrics[1]: duplicate name 'success-rate'"},
		{"failureLimit >= -1", []Metric{{Name: "success-rate", FailureLimit: -2}}, "metrics[0]: failureLimit must be >= 0, or -1 to be disabled"},
		{"inconclusiveLimit >= 0", []Metric{{Name: "success-rate", InconclusiveLimit: -1}}, "metrics[0]: inconclusiveLimit must be >= 0"},
		{"consecutiveErrorLimit >= 0", []Metric{{Name: "success-rate", ConsecutiveErrorLimit: ptr(int32(-1))}}, "metrics[0]: consecutiveErrorLimit must be >= 0"},
		{"consecutiveSuccessLimit >= 0", []Metric{{Name: "success-rate", ConsecutiveSuccessLimit: -1}}, "metrics[0]: consecutiveSuccessLimit must be >= 0"},
		{"not both disabled", []Metric{{Name: "success-rate", FailureLimit: -1}}, "metrics[0]: failureLimit and consecutiveSuccessLimit cannot both be disabled"},
		// Not Argo's: a negative count.
		{"count >= 0", []Metric{{Name: "success-rate", Count: ptr(int32(-1))}}, "metrics[0]: count must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateMetrics(tc.metrics, nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
