package stuck_test

import (
	"testing"

	"github.com/stsdiag/stsdiag/stuck"
)

// TestRulesByVersion: one row per release whose StatefulSet-controller behaviour differs, each
// citing the upstream source it was read from (k8s.io/kubernetes at the named tag).
func TestRulesByVersion(t *testing.T) {
	cases := []struct {
		version                                       string
		maxUnavailable, twoPhase, minReady, succeeded bool
		source                                        string
	}{
		{"v1.25.16", false, false, false, false, "kube_features.go:1041@v1.25.16; stateful_set_control.go:377@v1.25.16 (Failed only)"},
		{"v1.27.16", false, false, false, true, "stateful_set_control.go:385@v1.27.16 (Failed or Succeeded)"},
		{"v1.33.13", false, false, false, true, "kube_features.go:1507-1509@v1.33.13; stateful_set_utils.go:494@v1.33.13 (isHealthy)"},
		{"v1.34.4", false, false, true, true, "kube_features.go:1474-1476@v1.34.4; stateful_set_utils.go:494@v1.34.0 (isUnavailable)"},
		{"v1.35.0", true, false, true, true, "kube_features.go:1515-1518@v1.35.0 (beta, on)"},
		{"v1.35.3", true, false, true, true, "kube_features.go:1514-1518@v1.35.3; stateful_set_control.go:775@v1.35.3 (budget first: kubernetes#137409)"},
		{"v1.35.4", false, false, true, true, "kube_features.go:1517@v1.35.4 (off again)"},
		{"v1.36.3", false, false, true, true, "kube_features.go:1672-1675@v1.36.3"},
		{"v1.37.2", true, true, true, true, "kube_features.go:1839-1843@v1.37.2; stateful_set_control.go:877-915@v1.37.2 (two phases)"},
		{"v1.35.3+rke2r1", true, false, true, true, "vendor suffixes are ignored"},
		{"1.33", false, false, false, true, "a bare minor version"},
	}
	for _, c := range cases {
		r, err := stuck.RulesFor(c.version, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.version, err)
		}
		if r.Gates["MaxUnavailableStatefulSet"] != c.maxUnavailable || r.ParallelTwoPhase != c.twoPhase ||
			r.AvailabilityHonoursMinReady != c.minReady || r.SucceededRecreated != c.succeeded {
			t.Errorf("%s (%s): %+v", c.version, c.source, r)
		}
	}
	if r, _ := stuck.RulesFor("v1.37.2", nil); len(r.Gates) != 1 {
		t.Errorf("only MaxUnavailableStatefulSet is assumed; a Recreate object proves its own gate: %v", r.Gates)
	}
	if r, _ := stuck.RulesFor("", nil); r.Version != stuck.DefaultVersion {
		t.Errorf("unknown version: want %s, got %s", stuck.DefaultVersion, r.Version)
	}
	r, _ := stuck.RulesFor("v1.35.3", map[string]bool{"MaxUnavailableStatefulSet": false})
	if r.Gates["MaxUnavailableStatefulSet"] || r.String() != "v1.35.3 (MaxUnavailableStatefulSet=false)" {
		t.Errorf("--feature-gates overrides the default: %s", r)
	}
	if _, err := stuck.RulesFor("banana", nil); err == nil {
		t.Error("a version that does not parse is an error")
	}
}

func TestParseFeatureGates(t *testing.T) {
	got, err := stuck.ParseFeatureGates("MaxUnavailableStatefulSet=false, StatefulSetRecreateStrategy=true")
	if err != nil || len(got) != 2 || got["MaxUnavailableStatefulSet"] || !got["StatefulSetRecreateStrategy"] {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"Foo", "Foo=maybe", "=true"} {
		if _, err := stuck.ParseFeatureGates(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
