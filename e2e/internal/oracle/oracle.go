// Package oracle is a random oracle for StatefulSet rollouts: a generator of random StatefulSet
// histories (Generate), the objects each step applies (StatefulSet, Quota, …), a ground truth
// read only from the real system's API objects (Tracker), and a scorer of stsdiag's `check` and
// `wait` documents against that truth (Score). Everything here is pure: e2e/node's TestOracle
// applies the histories on the real node and feeds what it observes in.
//
// A history is deterministic from (seed, index): the same seed and index give the same history
// whatever n is, so a failing history is replayed alone (`make oracle SEED=7 N=24 ONLY=5`).
package oracle

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// CISeeds and CIN are the histories `make e2e-node` runs (the Makefile passes the same values;
// TestOracle falls back to them when ORACLE_SEEDS is unset).
var CISeeds = []uint64{37, 54}

// CIN is the number of histories of each CI seed.
const CIN = 6

// Fault is what a step's template (or the step's action on the namespace) breaks; Good and
// SlowStart break nothing.
type Fault string

// The faults. Healthy ones first.
const (
	Good      Fault = "good"
	SlowStart Fault = "slow-start" // serve -delay 15s: /ready 503 for 15 s, then 200

	MissingTag            Fault = "missing-tag"             // image app:nope, a tag the registry lacks
	Crash                 Fault = "crash"                   // app exit 1, no readiness probe
	Unready               Fault = "unready"                 // serve -unready: the readiness probe fails
	MissingConfigKey      Fault = "missing-config-key"      // env from a ConfigMap key that does not exist
	MissingSecretVolume   Fault = "missing-secret-volume"   // a volume of a Secret that does not exist
	InitFail              Fault = "init-fail"               // an init container that exits 1
	InitHang              Fault = "init-hang"               // an init container that never completes
	CPUTooLarge           Fault = "cpu-too-large"           // requests 64 CPUs
	NodeSelector          Fault = "node-selector"           // a nodeSelector no node matches
	Quota                 Fault = "quota"                   // a ResourceQuota of replicas-1 pods in the namespace
	MissingServiceAccount Fault = "missing-service-account" // serviceAccountName of none
	PodSecurity           Fault = "pod-security"            // namespace enforces restricted, template is not
	UnknownStorageClass   Fault = "unknown-storage-class"   // a claim template of a class nobody serves (first step only)
	Finalizer             Fault = "finalizer"               // a finalizer on the pod the update deletes
	ReadinessGate         Fault = "readiness-gate"          // a readiness gate nobody sets
)

// Broken lists every fault that keeps a rollout from finishing, in a fixed order (the
// generator draws from it).
var Broken = []Fault{MissingTag, Crash, Unready, MissingConfigKey, MissingSecretVolume, InitFail, InitHang,
	CPUTooLarge, NodeSelector, Quota, MissingServiceAccount, PodSecurity, UnknownStorageClass, Finalizer, ReadinessGate}

// Healthy says whether a step of this fault is expected to complete on its own.
func (f Fault) Healthy() bool { return f == Good || f == SlowStart }

// History is one StatefulSet and the steps applied to it one after the other: the first creates
// it, the others change its template (and, for some faults, the namespace or a pod).
type History struct {
	Seed  uint64
	Index int

	Replicas        int32
	Policy          appsv1.PodManagementPolicyType
	Strategy        appsv1.StatefulSetUpdateStrategyType
	Partition       int32 // RollingUpdate only
	OrdinalsStart   int32
	MinReadySeconds int32
	Steps           []Fault
}

// ID names a history: s<seed>-h<index>.
func (h History) ID() string { return fmt.Sprintf("s%d-h%d", h.Seed, h.Index) }

// Namespace is the history's own namespace.
func (h History) Namespace() string { return "oracle-" + h.ID() }

// String is the history on one line: its ID, its dimensions and its steps.
func (h History) String() string {
	strategy := string(h.Strategy)
	if h.Strategy == appsv1.RollingUpdateStatefulSetStrategyType {
		strategy += fmt.Sprintf("(partition=%d)", h.Partition)
	}
	steps := make([]string, len(h.Steps))
	for i, f := range h.Steps {
		steps[i] = string(f)
	}
	return fmt.Sprintf("%s replicas=%d %s %s start=%d minReady=%d steps=%s", h.ID(), h.Replicas, h.Policy, strategy,
		h.OrdinalsStart, h.MinReadySeconds, strings.Join(steps, ">"))
}

// Generate returns histories 0..n-1 of a seed.
func Generate(seed uint64, n int) []History {
	out := make([]History, n)
	for i := range out {
		out[i] = One(seed, i)
	}
	return out
}

// One returns history i of a seed: its own PCG stream (seed, i), so it does not depend on n.
func One(seed uint64, i int) History {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	h := History{Seed: seed, Index: i, Replicas: 1 + r.Int32N(3)}
	h.Policy = appsv1.OrderedReadyPodManagement
	if r.IntN(2) == 1 {
		h.Policy = appsv1.ParallelPodManagement
	}
	h.Strategy = appsv1.RollingUpdateStatefulSetStrategyType
	if r.IntN(4) == 0 {
		h.Strategy = appsv1.OnDeleteStatefulSetStrategyType
	}
	if h.Strategy == appsv1.RollingUpdateStatefulSetStrategyType && r.IntN(5) == 0 {
		h.Partition = 1 + r.Int32N(h.Replicas) // 1..replicas
	}
	h.OrdinalsStart = r.Int32N(3)
	if r.IntN(5) < 2 {
		h.MinReadySeconds = 1 + r.Int32N(5)
	}
	steps := 1 + r.IntN(3)
	for s := 0; s < steps; s++ {
		h.Steps = append(h.Steps, pick(r, s == 0))
	}
	return h
}

// pick draws a step: healthy a bit more than half the time (a tenth of those slow), else one
// of the broken faults. A claim template can only be set at creation (claim templates are
// immutable) and a finalizer needs a pod that exists.
func pick(r *rand.Rand, first bool) Fault {
	switch x := r.IntN(100); {
	case x < 45:
		return Good
	case x < 52:
		return SlowStart
	}
	for {
		f := Broken[r.IntN(len(Broken))]
		if f == UnknownStorageClass && !first || f == Finalizer && first {
			continue
		}
		return f
	}
}

// ParseSeeds reads a comma list of seeds ("7" or "3,11").
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seed %q: %w", f, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no seed in %q", s)
	}
	return out, nil
}

// ParseOnly reads a comma list of history indexes ("" means all).
func ParseOnly(s string) (map[int]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("history index %q: not a number ≥ 0", f)
		}
		out[v] = true
	}
	return out, nil
}
