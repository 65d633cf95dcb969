package oracle

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestGenerateIsDeterministicPerHistory(t *testing.T) {
	a, b := Generate(7, 24), Generate(7, 24)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different histories")
	}
	// History 5 is the same whatever n, so ONLY=5 replays it.
	if one, short := One(7, 5), Generate(7, 6)[5]; !reflect.DeepEqual(one, a[5]) || !reflect.DeepEqual(short, a[5]) {
		t.Fatalf("history 5 depends on n: %v / %v / %v", one, short, a[5])
	}
	if reflect.DeepEqual(Generate(8, 24), a) {
		t.Fatal("seeds 7 and 8 gave the same histories")
	}
	if got := a[5].String(); !strings.HasPrefix(got, "s7-h5 replicas=") || !strings.Contains(got, " steps=") {
		t.Errorf("line %q", got)
	}
	if a[5].Namespace() != "oracle-s7-h5" {
		t.Errorf("namespace %q", a[5].Namespace())
	}
}

// Over many seeds: every fault is drawn, the dimensions stay in their ranges, claim templates
// only at creation, finalizers only on an update, partitions only with RollingUpdate, and both
// a healthy and a broken last step are common.
func TestGenerateCoversTheDimensions(t *testing.T) {
	seen := map[Fault]int{}
	policies, strategies := map[appsv1.PodManagementPolicyType]int{}, map[appsv1.StatefulSetUpdateStrategyType]int{}
	partitioned, healthyLast, all := 0, 0, 0
	for seed := uint64(1); seed <= 100; seed++ {
		for _, h := range Generate(seed, 24) {
			all++
			if h.Replicas < 1 || h.Replicas > 3 || h.OrdinalsStart < 0 || h.OrdinalsStart > 2 || h.MinReadySeconds < 0 || h.MinReadySeconds > 5 ||
				len(h.Steps) < 1 || len(h.Steps) > 3 || h.Partition < 0 || h.Partition > h.Replicas {
				t.Fatalf("out of range: %s", h)
			}
			if h.Partition > 0 && h.Strategy != appsv1.RollingUpdateStatefulSetStrategyType {
				t.Fatalf("partition without RollingUpdate: %s", h)
			}
			policies[h.Policy]++
			strategies[h.Strategy]++
			if h.Partition > 0 {
				partitioned++
			}
			for i, f := range h.Steps {
				seen[f]++
				if f == UnknownStorageClass && i > 0 || f == Finalizer && i == 0 {
					t.Fatalf("%s at step %d: %s", f, i, h)
				}
			}
			if h.Steps[len(h.Steps)-1].Healthy() {
				healthyLast++
			}
		}
	}
	for _, f := range append([]Fault{Good, SlowStart}, Broken...) {
		if seen[f] == 0 {
			t.Errorf("fault %s never drawn", f)
		}
	}
	if len(policies) != 2 || len(strategies) != 2 || partitioned == 0 {
		t.Errorf("policies %v strategies %v partitioned %d", policies, strategies, partitioned)
	}
	if share := float64(healthyLast) / float64(all); share < 0.4 || share > 0.65 {
		t.Errorf("a healthy last step in %.0f%% of histories", 100*share)
	}
}

// The CI seeds hold histories expected to complete and histories expected to stick, and the
// Makefile passes exactly them.
func TestCISeeds(t *testing.T) {
	healthy, broken := 0, 0
	for _, s := range CISeeds {
		for _, h := range Generate(s, CIN) {
			ok := true
			for _, f := range h.Steps {
				ok = ok && f.Healthy()
			}
			if ok {
				healthy++
			} else {
				broken++
			}
		}
	}
	if healthy < 2 || broken < 2 {
		t.Errorf("CI seeds: %d all-healthy and %d broken histories", healthy, broken)
	}
	mk, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	seeds := make([]string, len(CISeeds))
	for i, s := range CISeeds {
		seeds[i] = fmt.Sprint(s)
	}
	for _, want := range []string{"ORACLE_CI_SEEDS ?= " + strings.Join(seeds, ","), fmt.Sprintf("ORACLE_CI_N ?= %d", CIN)} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(mk) {
			t.Errorf("the Makefile does not say %q", want)
		}
	}
}

func TestParse(t *testing.T) {
	if s, err := ParseSeeds("3, 11"); err != nil || !slices.Equal(s, []uint64{3, 11}) {
		t.Errorf("ParseSeeds: %v %v", s, err)
	}
	for _, bad := range []string{"", "x", "-1"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("ParseSeeds(%q) accepted", bad)
		}
	}
	if o, err := ParseOnly("5,7"); err != nil || !o[5] || !o[7] || len(o) != 2 {
		t.Errorf("ParseOnly: %v %v", o, err)
	}
	if o, err := ParseOnly(""); err != nil || o != nil {
		t.Errorf("ParseOnly empty: %v %v", o, err)
	}
	if _, err := ParseOnly("x"); err == nil {
		t.Error("ParseOnly(x) accepted")
	}
}

var images = Images{App: "127.0.0.1:5000/app:1.0", Missing: "127.0.0.1:5000/app:nope"}

// restricted says whether a pod spec passes the restricted PodSecurity checks this package's
// templates can violate.
func restricted(spec corev1.PodSpec) bool {
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		return false
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.Privileged != nil && *sc.Privileged {
			return false
		}
	}
	return true
}

func TestObjects(t *testing.T) {
	h := History{Seed: 1, Index: 2, Replicas: 3, Policy: appsv1.ParallelPodManagement, Strategy: appsv1.RollingUpdateStatefulSetStrategyType,
		Partition: 1, OrdinalsStart: 2, MinReadySeconds: 4, Steps: []Fault{UnknownStorageClass, Good, PodSecurity}}
	var hashes []string
	for i := range h.Steps {
		set := StatefulSet(h, i, images)
		if set.Namespace != "oracle-s1-h2" || *set.Spec.Replicas != 3 || set.Spec.Ordinals.Start != 2 || set.Spec.MinReadySeconds != 4 ||
			*set.Spec.UpdateStrategy.RollingUpdate.Partition != 1 || set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			t.Errorf("step %d: dimensions %+v", i, set.Spec)
		}
		// Claim templates are immutable: every step carries the first step's.
		if len(set.Spec.VolumeClaimTemplates) != 1 || *set.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != MissingClass {
			t.Errorf("step %d: claim templates %+v", i, set.Spec.VolumeClaimTemplates)
		}
		hashes = append(hashes, fmt.Sprintf("%v", set.Spec.Template))
	}
	if hashes[0] == hashes[1] {
		t.Error("two steps with the same template: no new revision")
	}
	onDelete := h
	onDelete.Strategy, onDelete.Partition, onDelete.OrdinalsStart = appsv1.OnDeleteStatefulSetStrategyType, 0, 0
	if set := StatefulSet(onDelete, 1, images); set.Spec.UpdateStrategy.RollingUpdate != nil || set.Spec.Ordinals != nil {
		t.Errorf("OnDelete: %+v ordinals %+v", set.Spec.UpdateStrategy, set.Spec.Ordinals)
	}
	for _, f := range append([]Fault{Good, SlowStart}, Broken...) {
		tmpl := Template(f, 0, images)
		if got := restricted(tmpl.Spec); got == (f == PodSecurity) {
			t.Errorf("%s: restricted=%v", f, got)
		}
	}
	crash := Template(Crash, 0, images).Spec.Containers[0]
	if crash.ReadinessProbe != nil || crash.Args[0] != "exit" {
		t.Errorf("crash: %+v", crash)
	}
	if c := Template(Good, 0, images).Spec.Containers[0]; c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/ready" ||
		c.ReadinessProbe.PeriodSeconds != 1 || c.Image != images.App {
		t.Errorf("good: %+v", c)
	}
	if c := Template(SlowStart, 0, images).Spec.Containers[0]; !slices.Equal(c.Args, []string{"serve", "-delay", SlowDelay}) {
		t.Errorf("slow start: %v", c.Args)
	}
	if q := ResourceQuota(History{Seed: 1, Replicas: 2}); q.Spec.Hard.Pods().Value() != 1 {
		t.Errorf("quota %v", q.Spec.Hard)
	}
}
