package analysis

// The file format is Argo Rollouts' AnalysisTemplate, as pkg/apis/rollouts/v1alpha1/analysis_types.go
// @ argo-rollouts 9f8d111d8f8e defines it; the checks are utils/analysis/factory.go's ValidateMetric.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// APIVersion is the only apiVersion Parse reads.
const APIVersion = "argoproj.io/v1alpha1"

// Template is a parsed AnalysisTemplate or ClusterAnalysisTemplate (apiVersion argoproj.io/v1alpha1).
//
// Until Bind, strings keep their {{args.NAME}} placeholders, and a count, interval, initial
// delay or limit given as a placeholder reads as unset.
type Template struct {
	Name    string
	Kind    string // AnalysisTemplate or ClusterAnalysisTemplate
	Args    []Arg
	Metrics []Metric

	raw []rawMetric // the metrics as written; Bind substitutes in these
}

// Arg is a template argument; a nil Value must be given to Bind.
type Arg struct {
	Name  string
	Value *string
}

// Metric is one metric of a template, with Argo's defaults left as zero values: FailureLimit
// and InconclusiveLimit 0, ConsecutiveSuccessLimit 0 (off), a nil ConsecutiveErrorLimit means 4,
// and a zero Interval means none.
type Metric struct {
	Name                    string
	Interval, InitialDelay  time.Duration
	Count                   *int32 // nil: unset
	SuccessCondition        string
	FailureCondition        string
	FailureLimit            int32 // -1: off (then ConsecutiveSuccessLimit must be > 0)
	InconclusiveLimit       int32
	ConsecutiveErrorLimit   *int32 // nil: DefaultConsecutiveErrorLimit
	ConsecutiveSuccessLimit int32  // 0: off
	Prometheus              Prometheus
}

// Prometheus is a metric's provider.prometheus.
type Prometheus struct {
	Address  string // may be empty: the caller supplies one
	Query    string
	Timeout  time.Duration // 0: DefaultQueryTimeout
	Insecure bool
	Headers  map[string]string
}

// Indefinite reports whether m measures until stopped: an interval and no count. Argo's
// EffectiveCount: without count and interval a metric measures once.
func (m Metric) Indefinite() bool { return effectiveCount(m) == nil }

func effectiveCount(m Metric) *int32 {
	if m.Count == nil || *m.Count == 0 {
		if m.Interval == 0 {
			one := int32(1)
			return &one
		}
		return nil
	}
	return m.Count
}

// Finite returns the metrics that end by themselves.
func (t *Template) Finite() []Metric {
	var out []Metric
	for _, m := range t.Metrics {
		if !m.Indefinite() {
			out = append(out, m)
		}
	}
	return out
}

// Indefinite returns the metrics that run until stopped (Argo's background analysis).
func (t *Template) Indefinite() []Metric {
	var out []Metric
	for _, m := range t.Metrics {
		if m.Indefinite() {
			out = append(out, m)
		}
	}
	return out
}

// UnsupportedError is a field of Argo's format that stsdiag refuses.
type UnsupportedError struct {
	Template string // the template's name
	Metric   string // the metric's name, when the field is a metric's
	Field    string
	Reason   string
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	b.WriteString("analysis template")
	if e.Template != "" {
		b.WriteString(" " + e.Template)
	}
	if e.Metric != "" {
		b.WriteString(": metric " + e.Metric)
	}
	fmt.Fprintf(&b, ": %s is not supported: %s", e.Field, e.Reason)
	return b.String()
}

// MissingArgError is an argument with no value in the template and none given to Bind.
type MissingArgError struct {
	Template, Name string
}

func (e *MissingArgError) Error() string {
	return fmt.Sprintf("analysis template %s: args.%s was not resolved: the template gives it no value and none was given", e.Template, e.Name)
}

// The JSON shape of Argo's types. Fields stsdiag refuses are kept raw so that strict decoding
// accepts them and Parse can name them.
type rawTemplate struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       rawSpec           `json:"spec"`
}

type rawSpec struct {
	Metrics              []rawMetric       `json:"metrics,omitempty"`
	Args                 []rawArg          `json:"args,omitempty"`
	DryRun               []json.RawMessage `json:"dryRun,omitempty"`
	MeasurementRetention []json.RawMessage `json:"measurementRetention,omitempty"`
	Templates            []json.RawMessage `json:"templates,omitempty"`
}

type rawArg struct {
	Name      string          `json:"name"`
	Value     *string         `json:"value,omitempty"`
	ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
}

type rawMetric struct {
	Name                    string              `json:"name"`
	Interval                string              `json:"interval,omitempty"`
	InitialDelay            string              `json:"initialDelay,omitempty"`
	Count                   *intstr.IntOrString `json:"count,omitempty"`
	SuccessCondition        string              `json:"successCondition,omitempty"`
	FailureCondition        string              `json:"failureCondition,omitempty"`
	FailureLimit            *intstr.IntOrString `json:"failureLimit,omitempty"`
	InconclusiveLimit       *intstr.IntOrString `json:"inconclusiveLimit,omitempty"`
	ConsecutiveErrorLimit   *intstr.IntOrString `json:"consecutiveErrorLimit,omitempty"`
	Provider                rawProvider         `json:"provider"`
	ConsecutiveSuccessLimit *intstr.IntOrString `json:"consecutiveSuccessLimit,omitempty"`
}

type rawProvider struct {
	Prometheus *rawPrometheus             `json:"prometheus,omitempty"`
	Kayenta    json.RawMessage            `json:"kayenta,omitempty"`
	Web        json.RawMessage            `json:"web,omitempty"`
	Datadog    json.RawMessage            `json:"datadog,omitempty"`
	Wavefront  json.RawMessage            `json:"wavefront,omitempty"`
	NewRelic   json.RawMessage            `json:"newRelic,omitempty"`
	Job        json.RawMessage            `json:"job,omitempty"`
	CloudWatch json.RawMessage            `json:"cloudWatch,omitempty"`
	Graphite   json.RawMessage            `json:"graphite,omitempty"`
	Influxdb   json.RawMessage            `json:"influxdb,omitempty"`
	SkyWalking json.RawMessage            `json:"skywalking,omitempty"`
	Plugin     map[string]json.RawMessage `json:"plugin,omitempty"`
}

type rawPrometheus struct {
	Address        string          `json:"address,omitempty"`
	Query          string          `json:"query,omitempty"`
	Authentication json.RawMessage `json:"authentication,omitempty"`
	Timeout        *int64          `json:"timeout,omitempty"` // seconds
	Insecure       bool            `json:"insecure,omitempty"`
	Headers        []rawHeader     `json:"headers,omitempty"`
	RangeQuery     json.RawMessage `json:"rangeQuery,omitempty"`
}

type rawHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ParseFile reads a template from a file (see Parse).
func ParseFile(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse reads one AnalysisTemplate or ClusterAnalysisTemplate, YAML or JSON. Decoding is
// strict (unknown or duplicate fields are errors), and what stsdiag does not support is an
// *UnsupportedError. Metrics whose count, interval and limits are not placeholders are checked
// as Argo checks them; the rest are checked by Bind.
func Parse(data []byte) (*Template, error) {
	doc, err := oneDocument(data)
	if err != nil {
		return nil, fmt.Errorf("analysis template: %w", err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("analysis template: %w", err)
	}
	name := head.Metadata.Name
	if head.Kind != "AnalysisTemplate" && head.Kind != "ClusterAnalysisTemplate" {
		kind := head.Kind
		if kind == "" {
			kind = `""`
		}
		return nil, &UnsupportedError{Template: name, Field: "kind " + kind, Reason: "stsdiag reads AnalysisTemplate and ClusterAnalysisTemplate"}
	}
	if head.APIVersion != APIVersion {
		return nil, &UnsupportedError{Template: name, Field: "apiVersion " + head.APIVersion, Reason: "stsdiag reads " + APIVersion}
	}

	var raw rawTemplate
	strictErrs, err := sigsjson.UnmarshalStrict(doc, &raw)
	if err != nil {
		return nil, fmt.Errorf("analysis template %s: %w", name, err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("analysis template %s: %w", name, strictErrs[0])
	}
	if err := refuse(&raw); err != nil {
		return nil, err
	}

	t := &Template{Name: name, Kind: raw.Kind, raw: raw.Spec.Metrics}
	for _, a := range raw.Spec.Args {
		t.Args = append(t.Args, Arg{Name: a.Name, Value: a.Value})
	}
	if len(raw.Spec.Metrics) == 0 {
		return nil, fmt.Errorf("analysis template %s: no metrics specified", name)
	}
	deferred := make([]bool, len(raw.Spec.Metrics))
	for i, rm := range raw.Spec.Metrics {
		m, err := convertMetric(rm, false)
		if err != nil {
			return nil, fmt.Errorf("analysis template %s: metrics[%d]: %w", name, i, err)
		}
		t.Metrics = append(t.Metrics, m)
		deferred[i] = rm.hasTypedPlaceholder()
	}
	if err := validateMetrics(t.Metrics, deferred); err != nil {
		return nil, fmt.Errorf("analysis template %s: %w", name, err)
	}
	return t, nil
}

// oneDocument returns the JSON of the only YAML document in data.
func oneDocument(data []byte) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSONStrict(d)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		docs = append(docs, j)
	}
	switch len(docs) {
	case 0:
		return nil, errors.New("no document")
	case 1:
		return docs[0], nil
	}
	return nil, fmt.Errorf("want one document, got %d", len(docs))
}

const (
	reasonProvider = "stsdiag queries Prometheus only"
)

// refuse returns the first field stsdiag does not support, and Argo's provider count errors.
func refuse(raw *rawTemplate) error {
	name := raw.Metadata.Name
	spec := raw.Spec
	switch {
	case len(spec.Templates) > 0:
		return &UnsupportedError{Template: name, Field: "spec.templates", Reason: "stsdiag reads one template with its own metrics"}
	case len(spec.DryRun) > 0:
		return &UnsupportedError{Template: name, Field: "spec.dryRun", Reason: "every metric of the template decides the step"}
	case len(spec.MeasurementRetention) > 0:
		return &UnsupportedError{Template: name, Field: "spec.measurementRetention", Reason: fmt.Sprintf("stsdiag keeps the last %d measurements of each metric", DefaultMeasurementHistoryLimit)}
	}
	for _, a := range spec.Args {
		if isSet(a.ValueFrom) {
			return &UnsupportedError{Template: name, Field: "args " + a.Name + " valueFrom", Reason: "give the value in the template or to stsdiag (it reads no Secret or field)"}
		}
	}
	for i, m := range spec.Metrics {
		providers := m.Provider.set()
		switch {
		case len(providers) == 0:
			return fmt.Errorf("analysis template %s: metrics[%d]: no provider specified", name, i)
		case len(providers) > 1:
			return fmt.Errorf("analysis template %s: metrics[%d]: multiple providers specified", name, i)
		case providers[0] != "prometheus":
			return &UnsupportedError{Template: name, Metric: m.Name, Field: "provider " + providers[0], Reason: reasonProvider}
		}
		p := m.Provider.Prometheus
		if hasContent(p.Authentication) {
			return &UnsupportedError{Template: name, Metric: m.Name, Field: "prometheus authentication", Reason: "credentials come from the Prometheus connection (bearer token, CA, headers), not the template"}
		}
		if isSet(p.RangeQuery) {
			return &UnsupportedError{Template: name, Metric: m.Name, Field: "prometheus rangeQuery", Reason: "stsdiag runs instant queries only"}
		}
	}
	return nil
}

// set names the providers given, as Argo's ValidateMetric counts them (each plugin counts).
func (p rawProvider) set() []string {
	var out []string
	if p.Prometheus != nil {
		out = append(out, "prometheus")
	}
	for _, o := range []struct {
		name string
		raw  json.RawMessage
	}{
		{"kayenta", p.Kayenta}, {"web", p.Web}, {"datadog", p.Datadog}, {"wavefront", p.Wavefront},
		{"newRelic", p.NewRelic}, {"job", p.Job}, {"cloudWatch", p.CloudWatch}, {"graphite", p.Graphite},
		{"influxdb", p.Influxdb}, {"skywalking", p.SkyWalking},
	} {
		if isSet(o.raw) {
			out = append(out, o.name)
		}
	}
	for name := range p.Plugin {
		out = append(out, "plugin "+name)
	}
	return out
}

// isSet: the field is present and not null (Argo's non-nil pointer).
func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && string(t) != "null"
}

// hasContent: the field sets something. Argo's Authentication is a struct, not a pointer, so
// a Go client writes it out empty ({"sigv4":{},"oauth2":{},"basicAuth":{}}).
func hasContent(raw json.RawMessage) bool {
	if !isSet(raw) {
		return false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return true
	}
	return !isEmptyValue(v)
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if !isEmptyValue(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	}
	return false
}

func hasPlaceholder(s string) bool { return strings.Contains(s, "{{") }

func isPlaceholder(v *intstr.IntOrString) bool {
	return v != nil && v.Type == intstr.String && hasPlaceholder(v.StrVal)
}

// hasTypedPlaceholder: a non-string field waits for Bind.
func (r rawMetric) hasTypedPlaceholder() bool {
	return hasPlaceholder(r.Interval) || hasPlaceholder(r.InitialDelay) || isPlaceholder(r.Count) ||
		isPlaceholder(r.FailureLimit) || isPlaceholder(r.InconclusiveLimit) ||
		isPlaceholder(r.ConsecutiveErrorLimit) || isPlaceholder(r.ConsecutiveSuccessLimit)
}

// convertMetric turns Argo's shape into a Metric. Unless bound, fields holding a placeholder
// read as unset.
func convertMetric(r rawMetric, bound bool) (Metric, error) {
	m := Metric{
		Name:             r.Name,
		SuccessCondition: r.SuccessCondition,
		FailureCondition: r.FailureCondition,
	}
	if r.Name == "" {
		return m, errors.New("name is required")
	}
	skip := func(s string) bool { return s == "" || (!bound && hasPlaceholder(s)) }
	var err error
	if !skip(r.Interval) {
		if m.Interval, err = time.ParseDuration(r.Interval); err != nil {
			return m, fmt.Errorf("invalid interval string: %v", err)
		}
		if m.Interval <= 0 {
			return m, fmt.Errorf("interval must be > 0, got %s", r.Interval)
		}
	}
	if !skip(r.InitialDelay) {
		if m.InitialDelay, err = time.ParseDuration(r.InitialDelay); err != nil {
			return m, fmt.Errorf("invalid startDelay string: %v", err)
		}
		if m.InitialDelay < 0 {
			return m, fmt.Errorf("initialDelay must be >= 0, got %s", r.InitialDelay)
		}
	}
	intField := func(field string, v *intstr.IntOrString) (*int32, error) {
		if v == nil || (!bound && isPlaceholder(v)) {
			return nil, nil
		}
		n := v.IntVal
		if v.Type == intstr.String {
			i, err := strconv.ParseInt(v.StrVal, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not an integer", field, v.StrVal)
			}
			n = int32(i)
		}
		return &n, nil
	}
	orZero := func(p *int32) int32 {
		if p == nil {
			return 0
		}
		return *p
	}
	var failureLimit, inconclusiveLimit, consecutiveSuccessLimit *int32
	for _, f := range []struct {
		field string
		v     *intstr.IntOrString
		dst   **int32
	}{
		{"count", r.Count, &m.Count},
		{"failureLimit", r.FailureLimit, &failureLimit},
		{"inconclusiveLimit", r.InconclusiveLimit, &inconclusiveLimit},
		{"consecutiveErrorLimit", r.ConsecutiveErrorLimit, &m.ConsecutiveErrorLimit},
		{"consecutiveSuccessLimit", r.ConsecutiveSuccessLimit, &consecutiveSuccessLimit},
	} {
		if *f.dst, err = intField(f.field, f.v); err != nil {
			return m, err
		}
	}
	m.FailureLimit = orZero(failureLimit)
	m.InconclusiveLimit = orZero(inconclusiveLimit)
	m.ConsecutiveSuccessLimit = orZero(consecutiveSuccessLimit)

	p := r.Provider.Prometheus
	m.Prometheus = Prometheus{Address: p.Address, Query: p.Query, Insecure: p.Insecure}
	if strings.TrimSpace(p.Query) == "" {
		return m, errors.New("prometheus query is required")
	}
	if p.Address != "" && !skip(p.Address) && !isURL(p.Address) {
		return m, fmt.Errorf("prometheus address %q is not a URL", p.Address)
	}
	if p.Timeout != nil {
		if *p.Timeout < 0 {
			return m, errors.New("prometheus timeout should not be negative")
		}
		m.Prometheus.Timeout = time.Duration(*p.Timeout) * time.Second
	}
	if len(p.Headers) > 0 {
		m.Prometheus.Headers = make(map[string]string, len(p.Headers))
		for _, h := range p.Headers {
			m.Prometheus.Headers[h.Key] = h.Value // Argo sets them in order: the last wins
		}
	}
	return m, nil
}

// isURL is Argo's IsUrl (metricproviders/prometheus/prometheus.go).
func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// validateMetrics is Argo's ValidateMetrics; metrics marked deferred are checked at Bind.
func validateMetrics(metrics []Metric, deferred []bool) error {
	if len(metrics) == 0 {
		return errors.New("no metrics specified")
	}
	names := make(map[string]bool)
	for i, m := range metrics {
		if names[m.Name] {
			return fmt.Errorf("metrics[%d]: duplicate name '%s'", i, m.Name)
		}
		names[m.Name] = true
		if deferred != nil && deferred[i] {
			continue
		}
		if err := validateMetric(m); err != nil {
			return fmt.Errorf("metrics[%d]: %v", i, err)
		}
	}
	return nil
}

// validateMetric is Argo's ValidateMetric, less the duration and provider checks that
// convertMetric and refuse make. A negative count is refused too (Argo would end at once).
func validateMetric(m Metric) error {
	count := 0
	if m.Count != nil {
		count = int(*m.Count)
	}
	failureLimit := int(m.FailureLimit)
	consecutiveSuccessLimit := int(m.ConsecutiveSuccessLimit)
	inconclusiveLimit := int(m.InconclusiveLimit)

	if count < 0 {
		return errors.New("count must be >= 0")
	}
	if consecutiveSuccessLimit < 0 {
		return errors.New("consecutiveSuccessLimit must be >= 0")
	}
	if failureLimit < -1 {
		return errors.New("failureLimit must be >= 0, or -1 to be disabled")
	}
	if consecutiveSuccessLimit == 0 && failureLimit == -1 {
		return errors.New("failureLimit and consecutiveSuccessLimit cannot both be disabled")
	}
	if inconclusiveLimit < 0 {
		return errors.New("inconclusiveLimit must be >= 0")
	}
	if m.ConsecutiveErrorLimit != nil && *m.ConsecutiveErrorLimit < 0 {
		return errors.New("consecutiveErrorLimit must be >= 0")
	}
	if count > 0 {
		if consecutiveSuccessLimit >= 0 && failureLimit >= 0 {
			if count < failureLimit+consecutiveSuccessLimit {
				return fmt.Errorf("count (%d) must be >= failureLimit + consecutiveSuccessLimit (%d + %d) if both >= 0", count, failureLimit, consecutiveSuccessLimit)
			}
		} else if consecutiveSuccessLimit >= 0 && failureLimit < 0 {
			if count < consecutiveSuccessLimit {
				return errors.New("count must be >= consecutiveSuccessLimit")
			}
		}
		if count < inconclusiveLimit {
			return errors.New("count must be >= inconclusiveLimit")
		}
	}
	if count > 1 && m.Interval == 0 {
		return errors.New("interval must be specified when count > 1")
	}
	return nil
}
