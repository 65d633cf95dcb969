package stuck

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/stsdiag/stsdiag/stuck/controller"
)

// Feature gates of kube-controller-manager that change the StatefulSet controller's verdicts.
const (
	gateMaxUnavailable = "MaxUnavailableStatefulSet"
	gateRecreate       = "StatefulSetRecreateStrategy"
)

// DefaultVersion is assumed when the server's version is unknown (a snapshot read from a file
// without one): the newest release the rules were checked against.
const DefaultVersion = "v1.37.2"

// Rules are the StatefulSet controller's behaviour for one Kubernetes release and gate setting,
// as far as a verdict depends on it. Build them with RulesFor.
type Rules struct {
	// Version is the release the rules describe.
	Version string
	// Gates are the feature gates assumed, defaults of the release plus overrides.
	Gates map[string]bool

	// ParallelTwoPhase: with MaxUnavailableStatefulSet on, Parallel first deletes every
	// unavailable off-revision pod at or above the partition, whatever the budget (1.37,
	// kubernetes#137666). Before 1.37 such a pod uses up the budget and the rollout stalls
	// (kubernetes#137409).
	ParallelTwoPhase bool
	// AvailabilityHonoursMinReady: rollout waits and the maxUnavailable count use availability
	// (minReadySeconds) from 1.34 (isUnavailable), Ready only before (isHealthy).
	AvailabilityHonoursMinReady bool
	// SucceededRecreated: a Succeeded pod is recreated by the controller from 1.27; before, only
	// Failed pods are.
	SucceededRecreated bool
}

// release is one row of the model: a range of releases and what changed at its start. Each row
// names the upstream source it was read from (k8s.io/kubernetes at that tag).
type release struct {
	from, to string // inclusive range of releases
	gates    map[string]bool
	source   string
}

// releases lists the defaults of the gates that change verdicts, by release (v1.25 onward).
var releases = []release{
	{"v1.25.0", "v1.34.99", map[string]bool{gateMaxUnavailable: false},
		"pkg/features/kube_features.go:1041@v1.25.16 … versioned_kube_features.go:519@v1.32.13, kube_features.go:1474@v1.34.4: MaxUnavailableStatefulSet alpha, off"},
	{"v1.35.0", "v1.35.3", map[string]bool{gateMaxUnavailable: true},
		"pkg/features/kube_features.go:1515-1518@v1.35.0 (same in v1.35.3): beta, on (kubernetes#133153)"},
	{"v1.35.4", "v1.36.99", map[string]bool{gateMaxUnavailable: false},
		"pkg/features/kube_features.go:1517@v1.35.4, :1672-1675@v1.36.3: beta, off again (kubernetes#137926, #137904)"},
	// StatefulSetRecreateStrategy (alpha, off: kube_features.go:2185-2187@v1.37.2) is not assumed
	// either way: the API server accepts type Recreate only with it on, so a Recreate object says
	// the cluster turned it on. --feature-gates StatefulSetRecreateStrategy=false says otherwise.
	{"v1.37.0", "v1.99.0", map[string]bool{gateMaxUnavailable: true},
		"pkg/features/kube_features.go:1839-1843@v1.37.2: beta, on (kubernetes#139466)"},
}

// RulesFor returns the rules of a release ("v1.35.3", "1.35", or "" for DefaultVersion) with the
// gate defaults of that release, overridden by gates (what --feature-gates says).
func RulesFor(serverVersion string, gates map[string]bool) (Rules, error) {
	if serverVersion == "" {
		serverVersion = DefaultVersion
	}
	v, err := version.ParseGeneric(serverVersion)
	if err != nil {
		return Rules{}, fmt.Errorf("server version %q: %w", serverVersion, err)
	}
	r := Rules{Version: "v" + v.String(), Gates: map[string]bool{}}
	for _, row := range releases {
		if !v.LessThan(version.MustParseGeneric(row.from)) && !version.MustParseGeneric(row.to).LessThan(v) {
			for g, on := range row.gates {
				r.Gates[g] = on
			}
		}
	}
	if v.LessThan(version.MustParseGeneric("v1.25.0")) {
		r.Gates[gateMaxUnavailable] = false
	}
	for g, on := range gates {
		r.Gates[g] = on
	}
	// stateful_set_control.go:877-915@v1.37.2 (two phases) vs :741-805@v1.35.3 (budget first).
	r.ParallelTwoPhase = v.AtLeast(version.MustParseGeneric("v1.37.0"))
	// stateful_set_utils.go:494@v1.34.0 isUnavailable vs :494@v1.33.13 isHealthy.
	r.AvailabilityHonoursMinReady = v.AtLeast(version.MustParseGeneric("v1.34.0"))
	// stateful_set_control.go:385@v1.27.16 (Failed or Succeeded) vs :377@v1.25.16 (Failed only).
	r.SucceededRecreated = v.AtLeast(version.MustParseGeneric("v1.27.0"))
	return r, nil
}

// ParseFeatureGates reads --feature-gates: "Name=true,Other=false".
func ParseFeatureGates(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("invalid --feature-gates entry %q: want Name=true|false", kv)
		case value == "true":
			out[name] = true
		case value == "false":
			out[name] = false
		default:
			return nil, fmt.Errorf("invalid --feature-gates value %q for %s: want true or false", value, name)
		}
	}
	return out, nil
}

// String names the version and the gates, as messages cite them.
func (r Rules) String() string {
	names := make([]string, 0, len(r.Gates))
	for g := range r.Gates {
		names = append(names, g)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, g := range names {
		parts = append(parts, fmt.Sprintf("%s=%v", g, r.Gates[g]))
	}
	return r.Version + " (" + strings.Join(parts, ", ") + ")"
}

// Behaviour is what the controller model needs of the rules.
func (r Rules) Behaviour() controller.Behaviour {
	on, assumed := r.Gates[gateRecreate]
	return controller.Behaviour{MaxUnavailable: r.Gates[gateMaxUnavailable], ParallelTwoPhase: r.ParallelTwoPhase,
		AvailabilityHonoursMinReady: r.AvailabilityHonoursMinReady, SucceededRecreated: r.SucceededRecreated, RecreateOff: assumed && !on}
}
