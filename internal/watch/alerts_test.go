package watch

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// prometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule the test reads.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// exportedSeries are the series names watch's registry exports (histograms as _bucket, _sum and
// _count), read from the registry itself.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	m := NewMetrics()
	descs := make(chan *prometheus.Desc, 256)
	go func() { m.Registry.Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range descs {
		if match := fqName.FindStringSubmatch(d.String()); match != nil {
			out[match[1]] = true
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[f.GetName()+suffix] = true
			}
		}
	}
	if !out["stsdiag_findings"] || !out["stsdiag_repairs_total"] {
		t.Fatalf("the registry does not describe stsdiag's metrics: %v", out)
	}
	return out
}

// codes are the finding codes of api/v1.
var codes = map[string]bool{}

func init() {
	for _, c := range []apiv1.Code{apiv1.StaleRevisionStuck, apiv1.CurrentRevisionFailing, apiv1.OnDeleteStale, apiv1.VolumeClaimPending,
		apiv1.PodUnschedulable, apiv1.OrphanedRevision, apiv1.StatefulSetTerminating, apiv1.PodStuckTerminating,
		apiv1.UnresolvedImageReference, apiv1.ImageStreamTagNotFound, apiv1.ImageLookupDisabled, apiv1.ImageResolutionSkipped,
		apiv1.ImageTriggerInvalid, apiv1.ImageTriggerStale, apiv1.ServiceMissing, apiv1.PodCreateFailed, apiv1.RolloutBlocked} {
		codes[string(c)] = true
	}
}

var (
	quoted    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers  = regexp.MustCompile(`\{[^}]*\}`)
	ranges    = regexp.MustCompile(`\[[^\]]*\]`)
	grouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	codeMatch = regexp.MustCompile(`\bcode\s*=~?\s*"([^"]*)"`)
	// PromQL functions, aggregations and keywords the rules may use (not metric names).
	promql = map[string]bool{"sum": true, "max": true, "min": true, "avg": true, "count": true, "group": true, "increase": true, "rate": true,
		"max_over_time": true, "absent": true, "absent_over_time": true, "vector": true, "histogram_quantile": true, "changes": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// metricNames returns the metric names an expression selects, without a PromQL parser: strings,
// label matchers, range selectors and grouping clauses are removed; the identifiers left that are
// not functions, aggregations or keywords are metric names.
func metricNames(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, id := range ident.FindAllString(s, -1) {
		if !promql[id] {
			out = append(out, id)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`sum by (namespace, action) (increase(stsdiag_repairs_total{result="failed", code=~"a|b"}[30m])) > 0 and on(x) absent(up)`)
	if strings.Join(got, ",") != "stsdiag_repairs_total,up" {
		t.Errorf("got %v", got)
	}
}

// ruleFiles are the shipped alerts: for one cluster, and for a store of many clusters' series
// where every rule also aggregates by the label cluster (both generated from
// deploy/internal/monitoringsrc).
var ruleFiles = map[string]string{"": "../../deploy/monitoring/prometheusrule.yaml", "cluster": "../../deploy/monitoring/multicluster/prometheusrule.yaml"}

// byClause is a grouping or matching clause and its labels.
var byClause = regexp.MustCompile(`\b(?:by|on)\s*\(([^)]*)\)`)

// TestAlertRules parses deploy/monitoring/prometheusrule.yaml and its multi-cluster version:
// every expression selects only metrics watch exports (at least one), every code it names is a
// finding code, and every alert has a summary and a description that gives the code(s) and a
// remedy. The finding alerts fire per StatefulSet; in the multi-cluster file every grouping also
// names the cluster label, as do the summaries and descriptions.
func TestAlertRules(t *testing.T) {
	for cluster, path := range ruleFiles {
		t.Run(path, func(t *testing.T) { checkAlertRules(t, path, cluster) })
	}
}

func checkAlertRules(t *testing.T, path, cluster string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		t.Fatalf("%s %s", rule.APIVersion, rule.Kind)
	}
	exported := exportedSeries(t)
	alerts := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || alerts[r.Alert] {
				t.Errorf("group %s: a rule without a unique alert name: %q", g.Name, r.Alert)
			}
			alerts[r.Alert] = true
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: expression names no metric: %s", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !exported[n] {
					t.Errorf("%s: %s is not a metric watch exports (expression %s)", r.Alert, n, r.Expr)
				}
				if n == "stsdiag_findings" {
					t.Errorf("%s: alerts on findings fire per StatefulSet (stsdiag_statefulset_findings), not per namespace", r.Alert)
				}
				if n == "stsdiag_statefulset_findings" && !strings.Contains(r.Expr, "by ("+withCluster(cluster, "namespace, statefulset")) {
					t.Errorf("%s: does not aggregate by %s: %s", r.Alert, withCluster(cluster, "namespace, statefulset"), r.Expr)
				}
			}
			desc := r.Annotations["description"]
			if r.Annotations["summary"] == "" || !strings.Contains(desc, "Remedy") || (r.Labels["severity"] != "critical" && r.Labels["severity"] != "warning") {
				t.Errorf("%s: needs a summary, a severity and a description with the remedy: %+v %+v", r.Alert, r.Labels, r.Annotations)
			}
			if cluster != "" {
				for _, clause := range byClause.FindAllStringSubmatch(r.Expr, -1) {
					if !strings.HasPrefix(clause[1], cluster) {
						t.Errorf("%s: %q does not aggregate by %s", r.Alert, clause[0], cluster)
					}
				}
				if strings.Contains(r.Expr, "absent(") {
					t.Errorf("%s: absent() has no %s label: it fires only when every cluster is gone", r.Alert, cluster)
				}
				for _, text := range []string{r.Annotations["summary"], desc} {
					if !strings.Contains(text, "{{ $labels."+cluster+" }}") {
						t.Errorf("%s: %q does not name the cluster", r.Alert, text)
					}
				}
			}
			for _, m := range codeMatch.FindAllStringSubmatch(r.Expr, -1) {
				for _, code := range strings.Split(m[1], "|") {
					if !codes[code] {
						t.Errorf("%s: %q is not a finding code", r.Alert, code)
					}
					if !strings.Contains(desc, code) {
						t.Errorf("%s: the description does not name code %s", r.Alert, code)
					}
				}
			}
		}
	}
	for _, want := range []string{"StsdiagStaleRevisionStuck", "StsdiagCurrentRevisionFailing", "StsdiagRepairsFailing", "StsdiagWatchDown"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// withCluster is labels with the cluster label first, as the multi-cluster files group.
func withCluster(cluster, labels string) string {
	if cluster == "" {
		return labels
	}
	return cluster + ", " + labels
}
